#!/usr/bin/env python3
"""Puts a table (standard input) between the markers <!-- NAME:begin --> and <!-- NAME:end --> of a
document, replacing what was there: how bench scripts write their results into docs/.

  write-table.py docs/RESULTS.md legion:fidelity < table.md
"""
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: write-table.py DOC NAME < TABLE")
    path, name = sys.argv[1], sys.argv[2]
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    text = open(path).read()
    if begin not in text or end not in text:
        sys.exit(f"{path} has no {begin} ... {end} markers")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    open(path, "w").write(head + begin + "\n" + sys.stdin.read().rstrip("\n") + "\n" + end + tail)


if __name__ == "__main__":
    main()
