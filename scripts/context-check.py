#!/usr/bin/env python3
"""Compute the Docker build context from .dockerignore and check it holds exactly what the build needs.

The matching follows Docker's own rules (moby's patternmatcher and ignorefile, and the
directory walk of the context tar): patterns are read as ignorefile.ReadAll reads them, a
path is excluded when the last pattern matching it or one of its parent directories is an
exclusion, `!` re-includes, and an excluded directory is walked only when some `!` pattern
begins with that directory. scripts/image-check.sh compares this list with the context
buildah really sends.

    python3 scripts/context-check.py            # check; exit 1 naming what is wrong
    python3 scripts/context-check.py --list     # print the context, one file a line
    python3 scripts/context-check.py --root DIR --rev REV   # another tree, REV's tracked files

Required: every tracked file of the workspace members' src/ (read from Cargo.toml), their
manifests, the same of each [patch.crates-io] path crate, Cargo.lock and profiles/. Forbidden: anything under target/, reports/ or .git, and every other tracked file.
"""

import argparse
import os
import re
import subprocess
import sys
import tomllib

# ------------------------------------------------------------------ ignorefile.ReadAll


def read_patterns(text):
    """Patterns as moby's ignorefile.ReadAll returns them."""
    out = []
    for i, line in enumerate(text.splitlines()):
        if i == 0 and line.startswith("\ufeff"):
            line = line[1:]
        if line.startswith("#"):  # a comment only in column 1
            continue
        line = line.strip()
        if not line:
            continue
        invert = line.startswith("!")
        if invert:
            line = line[1:].strip()
        if line:
            line = os.path.normpath(line)  # filepath.Clean
            if line.startswith("//"):  # normpath keeps a leading "//"; Clean does not
                line = "/" + line.lstrip("/")
            if len(line) > 1 and line[0] == "/":
                line = line[1:]
        out.append("!" + line if invert else line)
    return out


# ------------------------------------------------------------------ patternmatcher


class Pattern:
    """One pattern, compiled as patternmatcher's Pattern.compile does (exact, prefix, suffix, regexp)."""

    def __init__(self, text):
        self.exclusion = text.startswith("!")
        if self.exclusion:
            if len(text) == 1:
                raise ValueError('illegal exclusion pattern: "!"')
            text = text[1:]
        self.text = text
        self.kind, self.regexp = self._compile(text)

    @staticmethod
    def _compile(p):
        reg, kind, i, n = "^", "exact", 0, len(p)
        first = True
        while i < n:
            ch = p[i]
            i += 1
            if ch == "*":
                if i < n and p[i] == "*":
                    i += 1
                    if i < n and p[i] == "/":  # treat **/ as **
                        i += 1
                    if i == n:
                        if kind == "exact":
                            kind = "prefix"
                        else:
                            reg += ".*"
                            kind = "regexp"
                    else:
                        reg += "(.*/)?"
                        kind = "regexp"
                    if first:
                        kind = "suffix"
                else:
                    reg += "[^/]*"
                    kind = "regexp"
            elif ch == "?":
                reg += "[^/]"
                kind = "regexp"
            elif ch in ".+()|{}$":
                reg += "\\" + ch
            elif ch == "\\":
                if i < n:
                    reg += "\\" + p[i]
                    i += 1
                    kind = "regexp"
                else:
                    reg += "\\\\"
            elif ch in "[]":
                reg += ch
                kind = "regexp"
            else:
                reg += ch
            first = False
        if kind == "regexp":
            return kind, re.compile(reg + "$", re.DOTALL)
        return kind, None

    def match(self, path):
        if self.kind == "exact":
            return path == self.text
        if self.kind == "prefix":
            return path.startswith(self.text[:-2])
        if self.kind == "suffix":
            suffix = self.text[2:]
            return path.endswith(suffix) or (suffix[:1] == "/" and path == suffix[1:])
        return self.regexp.match(path) is not None


class Matcher:
    """patternmatcher.PatternMatcher: MatchesOrParentMatches."""

    def __init__(self, patterns):
        self.patterns = [Pattern(p) for p in patterns]
        self.exclusions = any(p.exclusion for p in self.patterns)

    def excluded(self, path):
        parent = os.path.dirname(path)
        dirs = parent.split("/") if parent else []
        matched = False
        for p in self.patterns:
            if p.exclusion != matched:
                continue
            m = p.match(path)
            if not m and dirs:
                m = any(p.match("/".join(dirs[: i + 1])) for i in range(len(dirs)))
            if m:
                matched = not p.exclusion
        return matched

    def may_descend(self, directory):
        """An excluded directory is still walked when a `!` pattern starts inside it."""
        if not self.exclusions:
            return False
        prefix = directory + "/"
        return any(p.exclusion and (p.text + "/").startswith(prefix) for p in self.patterns)


def context(root, matcher):
    """Every regular file (and symlink) the context would carry, relative to root."""
    files = []
    for top, dirs, names in os.walk(root):
        rel_top = os.path.relpath(top, root)
        rel_top = "" if rel_top == "." else rel_top
        keep = []
        for d in sorted(dirs):
            rel = f"{rel_top}/{d}" if rel_top else d
            if os.path.islink(os.path.join(top, d)):
                names.append(d)
            elif not matcher.excluded(rel) or matcher.may_descend(rel):
                keep.append(d)
        dirs[:] = keep
        for f in sorted(names):
            rel = f"{rel_top}/{f}" if rel_top else f
            if not matcher.excluded(rel):
                files.append(rel)
    return sorted(files)


# ------------------------------------------------------------------ the check

FORBIDDEN_TOPS = ["target", "reports", ".git"]


def needed(root):
    """What the build copies: every workspace member's manifest and src/, the lock file, profiles/,
    and each [patch.crates-io] path crate's manifest and src/ (a patched dependency)."""
    with open(os.path.join(root, "Cargo.toml"), "rb") as f:
        manifest = tomllib.load(f)
    members = manifest["workspace"]["members"]
    patched = [p["path"] for p in manifest.get("patch", {}).get("crates-io", {}).values() if "path" in p]
    prefix = lambda m: "" if m == "." else m + "/"  # noqa: E731
    manifests = ["Cargo.lock"] + [prefix(m) + "Cargo.toml" for m in members + patched]
    return manifests, [prefix(m) + "src" for m in members + patched] + ["profiles"]


def tracked(root, rev):
    cmd = ["git", "-C", root, "ls-files"] if rev is None else ["git", "ls-tree", "-r", "--name-only", rev]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split("\n")[:-1]


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=here, help="the build context directory (default: the repository)")
    ap.add_argument("--rev", help="take the tracked files from this revision of the current repository")
    ap.add_argument("--list", action="store_true", help="print the context and stop")
    args = ap.parse_args()

    ignore = os.path.join(args.root, ".dockerignore")
    with open(ignore, encoding="utf-8") as f:
        matcher = Matcher(read_patterns(f.read()))
    ctx = context(args.root, matcher)
    if args.list:
        print("\n".join(ctx))
        return 0

    files = tracked(args.root, args.rev)
    manifests, sources = needed(args.root)
    required = {f for f in files if f in manifests or any(f.startswith(d + "/") for d in sources)}
    have = set(ctx)
    problems = []
    for f in sorted(set(manifests) - set(files)):
        problems.append(f"{f}: not tracked, but the build needs it")
    for f in sorted(required - have):
        problems.append(f"{f}: needed by the build, left out of the context")
    for f in ctx:
        top = f.split("/", 1)[0]
        if top in FORBIDDEN_TOPS:
            problems.append(f"{f}: in the context, but {top}/ must not be")
    for f in sorted((have & set(files)) - required):
        problems.append(f"{f}: in the context, but the build does not need it")
    for p in problems[:40]:
        print(f"context-check: {p}", file=sys.stderr)
    if len(problems) > 40:
        print(f"context-check: … and {len(problems) - 40} more", file=sys.stderr)
    if problems:
        print(f"context-check: FAIL ({len(problems)} problems, .dockerignore of {args.root})", file=sys.stderr)
        return 1
    print(f"context-check: OK, {len(ctx)} files in the context, {len(required)} needed, all present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
