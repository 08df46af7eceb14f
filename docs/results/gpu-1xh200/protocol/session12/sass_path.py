#!/usr/bin/env python3
"""Counts the instructions one warp executes along a path through a kernel's SASS (README, session 12).

    cuobjdump -sass -fun <mangled kernel> x.cubin > k.sass
    sass_path.py k.sass START END TAKEN

Walks from address START until it executes the instruction at END (the loop's back edge, counted).
TAKEN: comma-separated addresses of the conditional branches this warp takes; every other conditional
branch falls through, unconditional ones are followed. Prints each conditional branch met, any call,
and the count. Addresses are hex without 0x, as cuobjdump prints them; they change with the code and
the compiler, so read the branches before choosing TAKEN.
"""
import re
import sys


def main():
    path, start, end = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3], 16)
    taken = {int(a, 16) for a in sys.argv[4].split(",")} if len(sys.argv) > 4 and sys.argv[4] else set()
    code = {}
    with open(path) as f:
        for line in f:
            m = re.search(r"/\*([0-9a-f]{4,5})\*/\s+(.*?)\s*;", line)
            if m:
                code[int(m.group(1), 16)] = m.group(2)
    pc, count = start, 0
    while True:
        text = code[pc]
        count += 1
        if pc == end or count > 10000:
            break
        m = re.match(r"(@!?U?P\w+\s+)?BRA\s+(?:`?\(?\.?\w*\)?\s*)?0x([0-9a-f]+)", text)
        if m:
            conditional = m.group(1) is not None
            if not conditional or pc in taken:
                if conditional:
                    print(f"  {pc:04x} {text}  -> taken")
                pc = int(m.group(2), 16)
                continue
            print(f"  {pc:04x} {text}  -> falls through")
        elif "CALL" in text or "EXIT" in text:
            print(f"  {pc:04x} {text}  (call or exit on the path)")
        pc += 16
    print("count", count)


if __name__ == "__main__":
    main()
