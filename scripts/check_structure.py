#!/usr/bin/env python3
"""Checks the house rules that the compiler does not (run by ctest as
`structure`):

- include/nbdcopy/ (the API) includes only other API headers;
- a file under src/ includes only its own layer or those below it:
  cli > job > engine > plan > endpoints > hash > base (the API anywhere;
  endpoints and hash need nothing of each other, and are on different
  levels so that neither can start to);
- no file under src/ is over 400 lines, no function over 80;
- every file under src/ and include/ is placed in docs/architecture.md
  (its name without the extension appears there);
- the GoogleTest suites of tests/unit/foo_bar_test.cc are named after
  their file: FooBarTest, or FooBar...Test for a part of it.

Functions are found by their braces (a heuristic, but the code's layout is
clang-format's). Prints every breach and exits 1 if there is one.
usage: check_structure.py [REPO]
"""
import os
import re
import sys

MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 80
LAYERS = {"base": 0, "hash": 1, "endpoints": 2, "plan": 3, "engine": 4, "job": 5, "cli": 6}
INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def layer_of(path):
    """src/engine/worker.cc -> engine; include/... -> None (the API)."""
    parts = path.split(os.sep)
    return parts[1] if parts[0] == "src" else None


def check_includes(path, text, problems):
    here = layer_of(path)
    for target in INCLUDE.findall(text):
        top = target.split("/")[0]
        if path.startswith("include" + os.sep):
            if top != "nbdcopy":
                problems.append(f"{path}: the API includes private {target}")
        elif top != "nbdcopy" and top in LAYERS and LAYERS[top] > LAYERS[here]:
            problems.append(f"{path}: {here} includes {target}, a layer above it")


def strip(text):
    """Removes comments, strings and character literals, keeping lines."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def functions(text):
    """Yields (name, first line, line count) of each function body."""
    code = strip(text)
    stack = []  # "scope" (namespace, class...), "data", or ("function", name, line)
    header_start = 0
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        elif c == "{":
            header = code[header_start:i].strip()
            in_function = any(isinstance(kind, tuple) for kind in stack)
            if in_function:
                stack.append("block")
            elif re.search(r"\b(namespace|class|struct|union|enum)\b[^(]*$", header) or \
                    header.startswith("extern"):
                stack.append("scope")
            elif "(" in header and not header.endswith("="):
                name = re.findall(r"([~\w:]+)\s*\(", header)
                stack.append(("function", name[0] if name else "?", line))
            else:
                stack.append("data")
            header_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else None
            if isinstance(kind, tuple):
                yield kind[1], kind[2], line - kind[2] + 1
            header_start = i + 1
        elif c == ";":
            header_start = i + 1


def check_placed(path, architecture, problems):
    stem = os.path.splitext(os.path.basename(path))[0]
    if not re.search(r"\b" + re.escape(stem) + r"\b", architecture):
        problems.append(f"{path}: not placed in docs/architecture.md (no '{stem}' there)")


SUITE = re.compile(r"^TEST(?:_P|_F)?\(\s*(\w+)\s*,", re.M)


def check_suites(problems):
    folder = os.path.join("tests", "unit")
    for name in sorted(os.listdir(folder)):
        if not name.endswith("_test.cc"):
            continue
        camel = "".join(word.capitalize() for word in name[:-len("_test.cc")].split("_"))
        text = open(os.path.join(folder, name), encoding="utf-8").read()
        for suite in sorted(set(SUITE.findall(text))):
            if not (suite.startswith(camel) and suite.endswith("Test")):
                problems.append(f"tests/unit/{name}: suite {suite} is not named after its "
                                f"file ({camel}...Test)")


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    os.chdir(repo)
    problems = []
    architecture = open(os.path.join("docs", "architecture.md"), encoding="utf-8").read()
    check_suites(problems)
    for top in ("src", "include"):
        for folder, _, names in os.walk(top):
            for name in sorted(names):
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(folder, name)
                text = open(path, encoding="utf-8").read()
                check_includes(path, text, problems)
                check_placed(path, architecture, problems)
                lines = text.count("\n")
                if lines > MAX_FILE_LINES:
                    problems.append(f"{path}: {lines} lines (at most {MAX_FILE_LINES})")
                for function, first, count in functions(text):
                    if count > MAX_FUNCTION_LINES:
                        problems.append(f"{path}:{first}: {function} is {count} lines "
                                        f"(at most {MAX_FUNCTION_LINES})")
    for problem in problems:
        print(problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
