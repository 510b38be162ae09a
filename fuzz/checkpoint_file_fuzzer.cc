// The --checkpoint mapfile format (job/checkpoint_file.h), two ways with
// every input. As text: whatever ParseCheckpoint accepts stays within the
// size it names and renders to a file that parses back to the same state
// (and renders to the same bytes again); whatever it refuses, it refuses
// with one line naming the file. As a recipe: a random identity (any
// bytes) and a random RangeSet render to a file that parses back to that
// identity and the set clipped to the size, whose status line says where
// the first byte not done is; CompareIdentity accepts the identity itself
// exactly when no string is empty, and refuses any one field changed with
// one line naming the file.
#include <fuzzer/FuzzedDataProvider.h>

#include <cinttypes>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "job/checkpoint_file.h"

namespace {

using nbdcopy::CheckpointIdentity;
using nbdcopy::CheckpointState;
using nbdcopy::RangeSet;
using nbdcopy::Result;
using nbdcopy::Status;

const std::string kPath = "fuzz.map";

bool OneLine(const std::string& message, const std::string& start) {
  return message.starts_with(start) && message.find('\n') == std::string::npos;
}

void CheckText(std::string_view text) {
  Result<CheckpointState> parsed = nbdcopy::ParseCheckpoint(text, kPath);
  if (!parsed.ok()) {
    FUZZ_CHECK(OneLine(parsed.status().message(), kPath + ": "), "refusal: %s",
               parsed.status().message().c_str());
    return;
  }
  const CheckpointState& state = *parsed;
  const uint64_t size = state.identity.source_size;
  FUZZ_CHECK(
      state.done.bytes() <= size && (state.done.empty() || state.done.Runs().back().end() <= size),
      "done reaches past the size %" PRIu64, size);
  const std::string rendered = nbdcopy::RenderCheckpoint(state.identity, state.done);
  Result<CheckpointState> again = nbdcopy::ParseCheckpoint(rendered, kPath);
  FUZZ_CHECK(again.ok(), "the rendering of an accepted file is refused: %s\n%s",
             again.status().message().c_str(), rendered.c_str());
  FUZZ_CHECK(*again == state, "the rendering parses to another state:\n%s", rendered.c_str());
  FUZZ_CHECK(nbdcopy::RenderCheckpoint(again->identity, again->done) == rendered,
             "rendering is not a fixed point:\n%s", rendered.c_str());
}

uint64_t SomeSize(FuzzedDataProvider& input) {
  switch (input.ConsumeIntegralInRange(0, 3)) {
    case 0:
      return input.ConsumeIntegralInRange<uint64_t>(0, 4096);
    case 1:
      return input.ConsumeIntegralInRange<uint64_t>(0, uint64_t{1} << 40);
    case 2:
      return UINT64_MAX - input.ConsumeIntegralInRange<uint64_t>(0, 4096);
    default:
      return input.ConsumeIntegral<uint64_t>();
  }
}

RangeSet SomeRanges(FuzzedDataProvider& input, uint64_t size) {
  RangeSet done;
  const int count = input.ConsumeIntegralInRange(0, 64);
  const uint64_t limit = size + size / 4 + 16 < size ? UINT64_MAX : size + size / 4 + 16;
  for (int i = 0; i < count; ++i) {  // some past the size, which rendering ignores
    const uint64_t offset = input.ConsumeIntegralInRange<uint64_t>(0, limit - 1);
    done.Add(offset, input.ConsumeIntegralInRange<uint64_t>(0, limit - offset));
  }
  return done;
}

void CheckCompare(const CheckpointIdentity& identity, FuzzedDataProvider& input) {
  const bool complete = !identity.source.empty() && !identity.destination.empty() &&
                        !identity.settings.empty() && !identity.fingerprint.empty();
  Status same = nbdcopy::CompareIdentity(identity, identity, kPath);
  FUZZ_CHECK(same.ok() == complete, "CompareIdentity(x, x): %s", same.message().c_str());
  CheckpointIdentity other = identity;
  const std::string change = input.ConsumeRandomLengthString(16) + "~";
  switch (input.ConsumeIntegralInRange(0, 4)) {
    case 0:
      other.source_size ^= uint64_t{1} + input.ConsumeIntegral<uint32_t>();
      break;
    case 1:
      other.fingerprint += change;
      break;
    case 2:  // other words and another file (the same file matches any words)
      other.source += change;
      other.source_file += change;
      break;
    case 3:
      other.destination += change;
      other.destination_file += change;
      break;
    default:
      other.settings += change;
      break;
  }
  Status differs = nbdcopy::CompareIdentity(identity, other, kPath);
  FUZZ_CHECK(!differs.ok(), "a changed identity matches");
  FUZZ_CHECK(OneLine(differs.message(), "--checkpoint=" + kPath + ": "), "message: %s",
             differs.message().c_str());
}

void CheckRecipe(FuzzedDataProvider& input) {
  CheckpointIdentity identity;
  identity.source = input.ConsumeRandomLengthString(64);
  identity.destination = input.ConsumeRandomLengthString(64);
  identity.settings = input.ConsumeRandomLengthString(64);
  identity.fingerprint = input.ConsumeRandomLengthString(64);
  identity.source_file = input.ConsumeRandomLengthString(32);
  identity.destination_file = input.ConsumeRandomLengthString(32);
  identity.source_size = SomeSize(input);
  const RangeSet done = SomeRanges(input, identity.source_size);
  RangeSet expected = done;
  if (identity.source_size < UINT64_MAX) {
    expected.Remove(identity.source_size, UINT64_MAX - identity.source_size);
  }
  const std::string text = nbdcopy::RenderCheckpoint(identity, done);
  Result<CheckpointState> parsed = nbdcopy::ParseCheckpoint(text, kPath);
  FUZZ_CHECK(parsed.ok(), "a rendered file is refused: %s\n%s", parsed.status().message().c_str(),
             text.c_str());
  FUZZ_CHECK(parsed->identity == identity, "the identity changed:\n%s", text.c_str());
  FUZZ_CHECK(parsed->done == expected, "the done ranges changed:\n%s", text.c_str());
  const auto gaps = expected.Gaps(identity.source_size);
  char status_line[64];
  std::snprintf(status_line, sizeof status_line, "\n0x%08" PRIX64 "     %c               1\n",
                gaps.empty() ? identity.source_size : gaps.front().offset,
                gaps.empty() ? '+' : '?');
  FUZZ_CHECK(text.find(status_line) != std::string::npos, "no status line %s in:\n%s", status_line,
             text.c_str());
  CheckCompare(identity, input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CheckText(std::string_view(reinterpret_cast<const char*>(data), size));
  FuzzedDataProvider input(data, size);
  CheckRecipe(input);
  return 0;
}
