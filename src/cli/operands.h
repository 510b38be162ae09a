// SOURCE and DESTINATION from the operand words.
#ifndef NBDCOPY_CLI_OPERANDS_H_
#define NBDCOPY_CLI_OPERANDS_H_

#include <string>
#include <vector>

#include "nbdcopy/options.h"
#include "nbdcopy/status.h"

namespace nbdcopy {

// Groups words into operands, "[ CMD ARGS ... ]" being one, and sets
// options->source and options->destination. Fails unless there are exactly
// two, or on a "[" without its "]". A stray "]" or an empty "[ ]" is left
// for ClassifyEndpoint to judge.
[[nodiscard]] Status SetOperands(const std::vector<std::string>& words, Options* options);

}  // namespace nbdcopy

#endif  // NBDCOPY_CLI_OPERANDS_H_
