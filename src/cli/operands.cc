#include "cli/operands.h"

namespace nbdcopy {
namespace {

Result<std::vector<std::vector<std::string>>> GroupOperands(const std::vector<std::string>& words) {
  std::vector<std::vector<std::string>> operands;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] != "[") {
      operands.push_back({words[i]});
      continue;
    }
    size_t close = i + 1;
    while (close < words.size() && words[close] != "]") ++close;
    if (close == words.size()) {
      return Status::Error(
          "'[' without a matching ']' (write '[ CMD ARGS ... ]' as separate words)");
    }
    operands.emplace_back(words.begin() + i, words.begin() + close + 1);
    i = close;
  }
  return operands;
}

}  // namespace

Status SetOperands(const std::vector<std::string>& words, Options* options) {
  Result<std::vector<std::vector<std::string>>> operands = GroupOperands(words);
  if (!operands.ok()) return operands.status();
  if (operands->size() != 2) {
    size_t count = operands->size();
    return Status::Error("expected SOURCE and DESTINATION, got " + std::to_string(count) +
                         (count == 1 ? " operand" : " operands") + " (try --help)");
  }
  options->source = std::move((*operands)[0]);
  options->destination = std::move((*operands)[1]);
  return Status::Ok();
}

}  // namespace nbdcopy
