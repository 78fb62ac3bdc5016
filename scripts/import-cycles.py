#!/usr/bin/env python3
"""Fail on a module import cycle inside a crate (hubload's `src/`, the hub's `hub/src/`).

Nodes are modules, one per file (`report`, `console::banner`, `engine::worker`, ...); test-only
modules (`#[cfg(test)] mod x;` files and inline `#[cfg(test)] mod x { .. }` blocks) are left out.
An edge A -> B means code in A names an item defined in B: through `use crate::..`,
`use super::..`, `use self::..`, a `use` of a child module, or the same paths written inline.
A name that A's target re-exports (`pub use b::X`) is followed to the module that defines it,
so a re-export alone is not an edge. Declaring `mod b;` is not an edge either. A parent that
calls into its child while the child imports from the parent IS a cycle.

Usage: scripts/import-cycles.py [CRATE_SRC_DIR ...]   (default: src hub/src)
Exit status 1 and one line per cycle when there is one that KNOWN does not list, or when a
KNOWN cycle is gone (then delete its entry, so the list only shrinks).
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"

# The cycles found when this check was written, in files other work was changing at the time.
# Most are a parent that defines types its children use while it calls them (fix: move the
# shared types into a child of their own). Every one has been fixed; the set stays empty.
KNOWN = set()


def strip(text):
    """Source without comments, string and char literals (kept as empty placeholders)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not re.match(r"\w", text[i - 1])):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            out.append('""')
            i = n if end < 0 else end + 1 + len(hashes)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            out.append('""')
            i += 1
        elif c == "'" and re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", text[i:]):
            m = re.match(r"'(\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", text[i:])
            out.append("' '")
            i += m.end()
        else:
            out.append(c)
            i += 1
    return "".join(out)


def block_end(text, open_brace):
    depth = 0
    for k in range(open_brace, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    return len(text)


CFG_TEST = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*([;{])")
MOD_DECL = re.compile(r"(?:^|[\s;}])(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;")


def drop_test_modules(code):
    """Code without inline test modules; the names of file test modules it declares."""
    test_files = set()
    while True:
        m = CFG_TEST.search(code)
        if not m:
            return code, test_files
        if m.group(2) == ";":
            test_files.add(m.group(1))
            code = code[: m.start()] + code[m.end():]
        else:
            code = code[: m.start()] + code[block_end(code, m.end() - 1):]


class Module:
    def __init__(self, path, file):
        self.path = path  # tuple of segments, () for the crate root
        self.file = file
        self.code = ""
        self.children = set()
        self.items = set()
        self.reexports = {}  # name -> absolute path (tuple)
        self.uses = []  # absolute paths (tuples) this module names


def load_crate(src):
    root_file = os.path.join(src, "lib.rs")
    if not os.path.exists(root_file):
        root_file = os.path.join(src, "main.rs")
    mods = {}

    def load(path, file):
        m = Module(path, file)
        with open(file, encoding="utf-8") as f:
            code = strip(f.read())
        code, test_files = drop_test_modules(code)
        m.code = code
        mods[path] = m
        base = os.path.dirname(file) if os.path.basename(file) in ("lib.rs", "main.rs", "mod.rs") else file[:-3]
        for d in MOD_DECL.finditer(code):
            name = d.group(1)
            if name in test_files:
                continue
            for cand in (os.path.join(base, name + ".rs"), os.path.join(base, name, "mod.rs")):
                if os.path.exists(cand):
                    m.children.add(name)
                    load(path + (name,), cand)
                    break

    load((), root_file)
    return mods


def expand(tree, prefix=()):
    """`a::b::{c, d::{e, f}}` (whitespace and aliases removed) as paths."""
    brace = tree.find("{")
    if brace < 0:
        yield prefix + tuple(s for s in tree.split("::") if s)
        return
    head = [s for s in tree[:brace].split("::") if s]
    inner = tree[brace + 1: tree.rfind("}")]
    depth, start = 0, 0
    parts = []
    for k, ch in enumerate(inner):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(inner[start:k])
            start = k + 1
    parts.append(inner[start:])
    for part in parts:
        if part:
            yield from expand(part, prefix + tuple(head))


def absolute(mod, segs, mods):
    """An absolute module path for `segs` written in `mod`, or None (external crate)."""
    if not segs:
        return None
    first = segs[0]
    if first == "crate":
        return tuple(segs[1:])
    if first in ("super", "self"):
        base = list(mod.path)
        rest = list(segs)
        while rest and rest[0] in ("super", "self"):
            if rest.pop(0) == "super":
                base.pop()
        return tuple(base) + tuple(rest)
    if first in mod.children:
        return mod.path + tuple(segs)
    return None


def resolve(path, mods, seen=None):
    """The module that defines what `path` names (following re-exports)."""
    seen = seen or set()
    if path in seen:
        return None
    seen.add(path)
    k = len(path)
    while k > 0 and path[:k] not in mods:
        k -= 1
    owner = path[:k]
    if k < len(path):
        name = path[k]
        target = mods[owner].reexports.get(name)
        if target is not None:
            found = resolve(target + tuple(path[k + 1:]), mods, seen)
            if found is not None:
                return found
    return owner


def collect(mods):
    use_re = re.compile(r"(?:^|[\s;{}])((?:pub(?:\([^)]*\))?\s+)?)use\s+([^;]*);")
    for m in mods.values():
        code = m.code
        for u in use_re.finditer(code):
            public = bool(u.group(1).strip())
            body = re.sub(r"\s+as\s+" + IDENT, "", u.group(2))
            body = re.sub(r"\s+", "", body)
            for segs in expand(body):
                segs = [s for s in segs if s]
                if segs and segs[-1] == "self":
                    segs = segs[:-1]
                p = absolute(m, segs, mods)
                if p is None:
                    continue
                if segs[-1] != "*":
                    m.uses.append(p)
                    if public:
                        m.reexports[segs[-1]] = p
                else:
                    m.uses.append(p[:-1])
        # inline paths outside `use` statements
        rest = use_re.sub(" ", code)
        for ip in re.finditer(r"(?<![\w:])((?:crate|super|self)(?:::" + IDENT + r")+|" + IDENT + r"(?:::" + IDENT + r")+)", rest):
            segs = ip.group(1).split("::")
            p = absolute(m, segs, mods)
            if p is not None:
                m.uses.append(p)


def edges(mods):
    g = {p: set() for p in mods}
    for m in mods.values():
        for u in m.uses:
            target = resolve(u, mods)
            if target is not None and target != m.path:
                g[m.path].add(target)
    return g


def cycles(g):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def name(p):
    return "::".join(p) or "crate"


def main():
    dirs = sys.argv[1:] or ["src", "hub/src"]
    bad = 0
    for src in dirs:
        mods = load_crate(src)
        collect(mods)
        g = edges(mods)
        found = cycles(g)
        n_edges = sum(len(v) for v in g.values())
        seen = set()
        for comp in found:
            key = (src, tuple(name(c) for c in comp))
            inside = set(comp)
            links = [f"{name(a)} -> {name(b)}" for a in comp for b in sorted(g[a]) if b in inside]
            what = "known import cycle (listed in KNOWN)" if key in KNOWN else "import cycle"
            print(f"{src}: {what} among {', '.join(key[1])}: {'; '.join(links)}")
            if key in KNOWN:
                seen.add(key)
            else:
                bad += 1
        for key in sorted(k for k in KNOWN if k[0] == src and k not in seen):
            print(f"{src}: the KNOWN cycle among {', '.join(key[1])} is gone: delete its entry")
            bad += 1
        print(f"{src}: {len(mods)} modules, {n_edges} import edges, {len(found)} cycles ({len(seen)} known)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
