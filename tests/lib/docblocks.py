# SPDX-License-Identifier: MIT
"""tests/lib/docblocks.py DOC.md DIR: a page's fenced blocks, for a test that
does what the page says (tests/integ/first_router.sh).

Each block goes to DIR/N.LANG (N from 0 in the page's order, LANG its info
string, "txt" without one). A block without one whose first line starts
with "# " is a transcript: each "# COMMAND" line and the lines after it up
to the next are a command and the output the page shows for it. They go to
DIR/transcript ("K<TAB>COMMAND" a line, K from 0 over the whole page) and
DIR/tK.out."""
import os
import re
import sys


def blocks(lines):
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        yield m.group(1), lines[i + 1:j]
        i = j + 1


def main(doc, out):
    os.makedirs(out, exist_ok=True)
    with open(doc, encoding="utf-8") as f:
        lines = f.read().split("\n")
    trans = []
    for n, (lang, body) in enumerate(blocks(lines)):
        with open(os.path.join(out, f"{n}.{lang or 'txt'}"), "w", encoding="utf-8") as f:
            f.write("".join(x + "\n" for x in body))
        if lang or not body or not body[0].startswith("# "):
            continue
        for line in body:
            if line.startswith("# "):
                trans.append((line[2:], []))
            else:
                trans[-1][1].append(line)
    with open(os.path.join(out, "transcript"), "w", encoding="utf-8") as t:
        for k, (cmd, shown) in enumerate(trans):
            with open(os.path.join(out, f"t{k}.out"), "w", encoding="utf-8") as f:
                f.write("".join(x + "\n" for x in shown))
            t.write(f"{k}\t{cmd}\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: docblocks.py DOC.md DIR")
    main(sys.argv[1], sys.argv[2])
