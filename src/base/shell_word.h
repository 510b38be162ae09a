// A word as a POSIX shell reads it back, for the command lines that
// messages and hints suggest: bare when it holds only safe characters
// (and the "[" and "]" of a bracketed command), else in single quotes.
// Thread safety: a pure function.
#ifndef NBDCOPY_BASE_SHELL_WORD_H_
#define NBDCOPY_BASE_SHELL_WORD_H_

#include <string>

namespace nbdcopy {

std::string ShellWord(const std::string& word);

}  // namespace nbdcopy

#endif  // NBDCOPY_BASE_SHELL_WORD_H_
