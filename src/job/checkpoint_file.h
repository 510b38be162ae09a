// The --checkpoint=FILE file: which byte ranges of the destination are
// known durable, as a GNU ddrescue mapfile (`ddrescuelog -t FILE`
// summarises it, `ddrescuelog -D FILE` exits 0 once every byte is done),
// plus comment lines naming the copy it belongs to, so that a rerun of the
// same command resumes and any other run refuses it.
//
// The text, as RenderCheckpoint writes it:
//   # Mapfile. Created by nbdcopy 0.1.0 (--checkpoint)
//   # nbdcopy-source: <escaped>          (in this order, one line each)
//   # nbdcopy-source-file: <escaped>     (only for a local file or device)
//   # nbdcopy-destination: <escaped>
//   # nbdcopy-destination-file: <escaped>  (likewise)
//   # nbdcopy-size: <decimal>
//   # nbdcopy-settings: <escaped>
//   # nbdcopy-fingerprint: <escaped>
//   # current_pos  current_status  current_pass
//   0x00100000     ?               1     (start of the first byte not done,
//   #      pos        size  status        or the size and '+' when finished)
//   0x00000000  0x00100000  +            (blocks covering [0, size) exactly,
//   0x00100000  0x00000200  -             '+' done, '?' not, '-' a bad area:
//   0x00100200  0x000FFE00  ?             --salvage could not read it; never
//                                         empty)
// A zero-size image has no block lines (ddrescuelog then says "Nothing to
// do; domain is empty." and exits 0; -D exits 0).
//
// Escaping: a value is written byte for byte except a backslash ("\\"),
// newline ("\n"), carriage return ("\r"), tab ("\t"), the other control
// bytes and DEL ("\xHH", two hex digits), and a space at the start or the
// end ("\x20"), so any string round-trips (bytes >= 0x80 are written as
// they are: UTF-8 stays readable) and blanks an editor adds or strips at
// the end of a line change nothing.
//
// Numbers ddrescuelog reads are signed 64-bit: files for images of 2^63
// bytes or more (which no endpoint has) round-trip here but not there.
//
// Thread safety: functions of values; the file functions touch only the
// named file (and path + ".tmp"): one thread, one job per checkpoint file.
// (CompareIdentity is in checkpoint_identity.cc, the rest in
// checkpoint_file.cc.)
#ifndef NBDCOPY_JOB_CHECKPOINT_FILE_H_
#define NBDCOPY_JOB_CHECKPOINT_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/file_system.h"
#include "base/range_set.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// What identifies one copy; a rerun resumes only when all of it matches.
// Every string may hold any bytes (newlines, '#', NUL, non-ASCII).
struct CheckpointIdentity {
  std::string source;       // as displayed (URI passwords already masked)
  std::string destination;  // likewise
  uint64_t source_size = 0;
  std::string settings;     // space-separated words, e.g. "allocated=no sparse=4096"
  std::string fingerprint;  // e.g. "sha256:ab12..."; opaque
  // A local path's canonical path (FileSystem::CanonicalPath): the file,
  // however it is spelled. Empty for other operands, and in files written
  // before nbdcopy recorded it (no nbdcopy-*-file lines).
  std::string source_file;
  std::string destination_file;
  bool operator==(const CheckpointIdentity&) const = default;
};

struct CheckpointState {
  CheckpointIdentity identity;
  RangeSet done;  // the '+' blocks; within [0, identity.source_size)
  // The bad areas: '-' blocks (--salvage's, and ddrescue's bad sectors)
  // and ddrescue's '*' and '/' (failed, not narrowed yet); not done.
  RangeSet bad;
  bool operator==(const CheckpointState&) const = default;
};

// The whole file's text (format above). Deterministic: the same arguments
// give the same bytes. Bytes of `done` and `bad` at or past
// identity.source_size are ignored; bad wins over done.
std::string RenderCheckpoint(const CheckpointIdentity& identity, const RangeSet& done,
                             const RangeSet& bad = RangeSet());

// A string as the file writes it (escaping above): one line, any bytes
// recoverable. Also how messages should show a value.
std::string EscapeCheckpointValue(std::string_view value);

// Parses what RenderCheckpoint wrote, and what a human or ddrescuelog may
// make of it: any other comment lines ('#' at the start of a line or after
// a blank, to the end of the line), blank lines, CRLF line ends, numbers
// in C++ syntax (decimal, 0x hex, 0 octal, as ddrescuelog reads them), a
// status line without the pass, the other ddrescue block statuses ('*',
// '/', '-': not done), adjacent blocks of the same status. Identity lines
// are comment lines "# nbdcopy-KEY: VALUE"; unknown keys are comments.
// Refuses, with "PATH: line N: <why>" (path only names the file):
// garbage, bad escapes, a repeated identity line, numbers that overflow,
// empty blocks, blocks that do not start at 0, leave gaps, overlap, or do
// not end exactly at nbdcopy-size; and "PATH: not a checkpoint written by
// nbdcopy" (plus which line is missing) when identity lines are missing.
Result<CheckpointState> ParseCheckpoint(std::string_view text, const std::string& path);

// OK when `recorded` (the file's) and `now` (this job's) name the same
// copy. An empty string field never matches, not even another empty one.
// The source (destination) matches when its words do, or its file does:
// a.raw, ./a.raw and /abs/a.raw are one file (a different file under the
// same name is refused by the fingerprint, or by the destination's bytes).
// Otherwise one error, "--checkpoint=PATH: ...", naming the first thing
// that differs in this order: the source's size, its fingerprint, the
// source, the destination, the settings (the first differing word), with
// both values, then "; remove PATH to copy from the start".
Status CompareIdentity(const CheckpointIdentity& recorded, const CheckpointIdentity& now,
                       const std::string& path);

// Whether two fingerprints name the same content: equal, or both of
// --salvage's each-sample form (SourceFingerprint) with every sample both
// runs could read equal.
bool FingerprintsMatch(const std::string& a, const std::string& b);

// Replaces the file at path atomically and durably through `files`
// (FileSystem::ReplaceAtomically: path + ".tmp", fsync, rename, fsync of
// the directory). Errors: "--checkpoint=PATH: <what failed>: <strerror>".
Status WriteCheckpointFile(const std::string& path, const std::string& text,
                           FileSystem& files = RealFileSystem());

// The file's whole text; nullopt when it does not exist (ENOENT). An error
// ("--checkpoint=PATH: ...") for anything else: not a regular file (it is
// never opened for blocking reads, so a FIFO does not hang), no
// permission, a read error.
Result<std::optional<std::string>> ReadCheckpointFile(const std::string& path,
                                                      FileSystem& files = RealFileSystem());

}  // namespace nbdcopy

#endif  // NBDCOPY_JOB_CHECKPOINT_FILE_H_
