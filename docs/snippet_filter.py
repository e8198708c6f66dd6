#!/usr/bin/env python3
"""Doxygen INPUT_FILTER for the workbook's sources.

The solutions mark the regions a lesson page shows with pairs of lines such as

    /// [block-sum]

Written with three slashes, such a line is a Doxygen comment: Doxygen would glue the
tag onto the next declaration's documentation, or, inside a function body, onto the
function's description. This filter turns those marker lines into plain `//` comments
while Doxygen parses the file. Every other line passes through unchanged, and the line
count stays the same, so line numbers in warnings and in the source browser still match
the file. `\\snippet` reads the unfiltered file (FILTER_SOURCE_FILES = NO), so it still
finds the markers.

Usage (Doxygen calls it this way): snippet_filter.py FILE   -> filtered text on stdout
"""
import re
import sys

CODE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh")
MARKER = re.compile(r"^(\s*)///(\s*\[[^\]\n]+\]\s*)$")


def filter_text(text: str) -> str:
    """Return `text` with every `/// [tag]` marker line rewritten as `// [tag]`."""
    out = []
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        match = MARKER.match(body)
        out.append(f"{match.group(1)}//{match.group(2)}{ending}" if match else line)
    return "".join(out)


def main(argv: list) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: snippet_filter.py FILE\n")
        return 64
    path = argv[1]
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
        text = f.read()
    if path.endswith(CODE_SUFFIXES):
        text = filter_text(text)
    sys.stdout.buffer.write(text.encode("utf-8", errors="surrogateescape"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
