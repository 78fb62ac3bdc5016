#!/usr/bin/env python3
"""Atomic read-modify-write instructions per request, from two callgrind files.

Callgrind counts instructions, and an atomic (a `lock`-prefixed instruction, or `xchg` with
memory) counts as one, though it costs a pipeline drain of tens of cycles: two programs with
the same instructions per request can spend quite different user time. This reads two runs
made with `--dump-instr=yes` (bench/ir-per-request.sh with KEEP=1 INSTR=1), finds the atomic
instructions of every object they ran (objdump), and prints the executions per request of
the longer run over the shorter, in all and by function.

Usage: bench/atomics-per-request.py FILE_A FILE_B REQUESTS_A REQUESTS_B [TOP]
"""

import re
import subprocess
import sys
from collections import defaultdict

ATOMIC = re.compile(r"^\s*([0-9a-f]+):\s+(lock\b|xchg\s+\S*\(|xchg\s+%\w+,\S*\()")


def costs(path):
    """{(object, function, address): Ir} of the file's self costs (call lines skipped)."""
    names = {"ob": {}, "fn": {}}
    cur = {"ob": "", "fn": ""}
    out = defaultdict(int)
    addr = 0
    skip_next = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            c = line[0]
            if c.isalpha():
                key, _, rest = line.rstrip("\n").partition("=")
                if key in ("ob", "fn", "cob", "cfn") and rest.startswith("("):
                    idx, _, name = rest.partition(")")
                    kind = key.lstrip("c")
                    name = name.strip()
                    if name:
                        names[kind][idx] = name
                    if key in cur:
                        cur[key] = names[kind].get(idx, idx)
                elif key == "calls":
                    skip_next = True
                continue
            if c not in "0123456789+-*":
                continue
            parts = line.split()
            if not parts:
                continue
            a = parts[0]
            if a.startswith("0x"):
                addr = int(a, 16)
            elif a[0] in "+-":
                addr += int(a)
            # "*": the same address
            if skip_next:
                skip_next = False
                continue
            if len(parts) >= 3:
                out[(cur["ob"], cur["fn"], addr)] += int(parts[2])
    return out


def atomic_addresses(obj):
    """The addresses (as callgrind gives them: the file's own) of the atomic instructions."""
    try:
        text = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", obj],
            capture_output=True, text=True, check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return set()
    return {int(m.group(1), 16) for m in map(ATOMIC.match, text.splitlines()) if m}


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    a, b = costs(sys.argv[1]), costs(sys.argv[2])
    n = int(sys.argv[4]) - int(sys.argv[3])
    top = int(sys.argv[5]) if len(sys.argv) > 5 else 15
    objs = {k[0] for k in b}
    atomics = {o: atomic_addresses(o) for o in objs if o.startswith("/")}
    by_fn = defaultdict(int)
    for k in set(a) | set(b):
        if k[2] in atomics.get(k[0], ()):
            by_fn[(k[0].rsplit("/", 1)[-1], k[1])] += b.get(k, 0) - a.get(k, 0)
    print(f"atomic instructions per request: {sum(by_fn.values()) / n:.1f}")
    for (obj, fn), d in sorted(by_fn.items(), key=lambda kv: -kv[1])[:top]:
        if d / n >= 0.05:
            print(f"  {d / n:6.2f}  {obj}  {fn[:110]}")


if __name__ == "__main__":
    main()
