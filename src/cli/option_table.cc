#include "cli/option_table.h"

#include <array>

#include "cli/option_numbers.h"

namespace nbdcopy {
namespace {

using enum ArgKind;
using enum HelpGroup;

// In --help's order; --long-options sorts the names.
constexpr std::array kOptions = {
    OptionSpec{.id = OptionId::kAllocated,
               .long_name = "allocated",
               .group = kCopy,
               .help = "write zeroes as allocated, never punch holes"},
    OptionSpec{.id = OptionId::kDestinationIsZero,
               .long_name = "destination-is-zero",
               .alias = "target-is-zero",
               .group = kCopy,
               .help = "the destination already reads as zeroes"},
    OptionSpec{.id = OptionId::kDirtyBitmap,
               .long_name = "dirty-bitmap",
               .arg = kRequired,
               .value_name = "NAME",
               .group = kCopy,
               .help = "incremental: copy what qemu dirty bitmap NAME marks\n"
                       "changed onto an existing copy (null: a dry run)"},
    OptionSpec{.id = OptionId::kCheckpoint,
               .long_name = "checkpoint",
               .arg = kRequired,
               .value_name = "FILE",
               .group = kCopy,
               .help = "record progress in FILE; run again to resume"},
    OptionSpec{.id = OptionId::kRetry,
               .long_name = "retry",
               .arg = kRequired,
               .value_name = "N",
               .group = kCopy,
               .help = "reconnect up to N times to a dropped NBD server ({})",
               .shown_default = [](const Options& o) { return std::to_string(o.retry); }},
    OptionSpec{.id = OptionId::kFlush,
               .long_name = "flush",
               .group = kCopy,
               .help = "flush the destination before exiting"},
    OptionSpec{.id = OptionId::kNoExtents,
               .long_name = "no-extents",
               .group = kCopy,
               .help = "do not ask the source where its holes are"},
    OptionSpec{.id = OptionId::kTimeout,
               .long_name = "timeout",
               .arg = kRequired,
               .value_name = "SECONDS",
               .group = kCopy,
               .help = "give up on an NBD server silent for SECONDS while\n"
                       "requests wait ({}; 0: wait forever)",
               .shown_default = [](const Options& o) { return std::to_string(o.timeout); }},
    OptionSpec{.id = OptionId::kSparse,
               .long_name = "sparse",
               .short_name = 'S',
               .arg = kRequired,
               .value_name = "N",
               .group = kCopy,
               .help = "zero-detection granularity, 0: off ({})",
               .shown_default = [](const Options& o) { return std::to_string(o.sparse_size); }},
    OptionSpec{.id = OptionId::kConnections,
               .long_name = "connections",
               .short_name = 'C',
               .arg = kRequired,
               .value_name = "N",
               .group = kPerformance,
               .help = "NBD connections when both ends allow it ({})",
               .shown_default = [](const Options& o) { return std::to_string(o.connections); }},
    OptionSpec{.id = OptionId::kThreads,
               .long_name = "threads",
               .short_name = 'T',
               .arg = kRequired,
               .value_name = "N",
               .group = kPerformance,
               .help = "worker threads ({})",
               .shown_default =
                   [](const Options& o) {
                     return o.threads == 0 ? std::string("number of CPUs")
                                           : std::to_string(o.threads);
                   }},
    OptionSpec{.id = OptionId::kRequests,
               .long_name = "requests",
               .short_name = 'R',
               .arg = kRequired,
               .value_name = "N",
               .group = kPerformance,
               .help = "requests in flight per connection ({})",
               .shown_default = [](const Options& o) { return std::to_string(o.requests); }},
    OptionSpec{.id = OptionId::kRequestSize,
               .long_name = "request-size",
               .arg = kRequired,
               .value_name = "N",
               .group = kPerformance,
               .help = "bytes per request, a power of 2, 4K to 32M ({})",
               .shown_default = [](const Options& o) { return FormatSize(o.request_size); }},
    OptionSpec{.id = OptionId::kQueueSize,
               .long_name = "queue-size",
               .arg = kRequired,
               .value_name = "N",
               .group = kPerformance,
               .help = "data bytes in flight per worker ({})",
               .shown_default = [](const Options& o) { return FormatSize(o.queue_size); }},
    OptionSpec{.id = OptionId::kRate,
               .long_name = "rate",
               .arg = kRequired,
               .value_name = "BYTES",
               .group = kPerformance,
               .help = "read the source at most BYTES a second (no cap)"},
    OptionSpec{.id = OptionId::kSynchronous,
               .long_name = "synchronous",
               .group = kPerformance,
               .help = "one thread, one request at a time"},
    OptionSpec{.id = OptionId::kBlkhash,
               .long_name = "blkhash",
               .arg = kOptional,
               .value_name = "ALGO[/SIZE]",
               .group = kChecksums,
               .help = "print the source's blkhash; ALGO: md5, sha1,\n"
                       "sha256 or sha512 ({})",
               // What a bare --blkhash (or --verify alone) computes.
               .shown_default =
                   [](const Options&) {
                     const BlkhashSpec bare;
                     return bare.algorithm + "/" + FormatSize(bare.block_size);
                   }},
    OptionSpec{.id = OptionId::kBlkhashFile,
               .long_name = "blkhash-file",
               .arg = kRequired,
               .value_name = "FILE",
               .group = kChecksums,
               .help = "write the checksum to FILE, not stdout"},
    OptionSpec{.id = OptionId::kVerify,
               .long_name = "verify",
               .group = kChecksums,
               .help = "read the destination back, compare checksums"},
    OptionSpec{.id = OptionId::kProgress,
               .long_name = "progress",
               .short_name = 'p',
               .arg = kOptional,
               .value_name = "FD",
               .group = kOutput,
               // One line for "-p, --progress", one for "--progress=FD".
               .help = "progress on stderr: a bar on a terminal\n"
                       "\"N/100\" lines on file descriptor FD"},
    OptionSpec{.id = OptionId::kJson,
               .long_name = "json",
               .arg = kOptional,
               .value_name = "FILE",
               .group = kOutput,
               .help = "a JSON report at the end, on stdout or in FILE"},
    OptionSpec{.id = OptionId::kVerbose,
               .long_name = "verbose",
               .short_name = 'v',
               .group = kOutput,
               .help = "settings, statistics and debug on stderr"},
    OptionSpec{.id = OptionId::kHelp, .long_name = "help"},
    OptionSpec{.id = OptionId::kVersion, .long_name = "version", .short_name = 'V'},
    OptionSpec{.id = OptionId::kLongOptions, .long_name = "long-options", .unlisted = true},
    OptionSpec{.id = OptionId::kShortOptions, .long_name = "short-options", .unlisted = true},
};

}  // namespace

std::span<const OptionSpec> OptionTable() { return kOptions; }

std::string LongName(const OptionSpec& spec) { return "--" + std::string(spec.long_name); }

}  // namespace nbdcopy
