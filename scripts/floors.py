#!/usr/bin/env python3
"""Fail on an import that runs back up the floors, or on a cycle between folders.

The house has floors: each top-level module of a crate (`report`, `engine`, ...) sits on one,
and code may only name items on its own module or on a lower floor. FLOORS below is the order,
top to bottom (README.md, "Layout", shows the same); modules on one floor do not import each
other. The edges are those `import-cycles.py` draws (re-exports followed to the module that
defines the item; test-only modules left out).

Checks, for each crate:
- every top-level module is on a floor (a new module must be placed: add it to FLOORS);
- no edge from a module to one on the same or a higher floor;
- no cycle between folders at any depth (`report/html/*` with `report/jtl/*`, ...): modules are
  grouped by their first N path segments, for every N, and the groups must form no circle;
- the floors drawn in README.md ("Layout") are these, so the picture stays true.

Usage: scripts/floors.py [CRATE_SRC_DIR ...]   (default: src hub/src http1/src servicebus/src rng/src)
Exit status 1 and one line per violation.
"""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("import_cycles", os.path.join(HERE, "import-cycles.py"))
ic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ic)

# Top to bottom. `crate` is lib.rs (or main.rs).
FLOORS = {
    "src": [
        ["crate"],
        ["app"],  # main's program: parse, subcommands, exit codes
        ["run"],  # one loop over target paths
        ["compare", "shard", "observe", "check", "web"],  # two runs side by side; shard artifacts and their merge; server metrics, generator health, exporter; the pre-flight; the live page and control API
        ["console"],  # what the terminal shows: messages, banner, live progress
        ["config"],  # flags + profile -> validated RunConfig
        ["report"],  # the document, its rows (model), judging, the formats and their writers
        ["subscriber"],  # the callback fleet
        ["engine"],  # levels, pacing, one worker loop, attempt records
        ["targets"],  # the Target trait and its protocols
        ["topic_server"],
        ["serve", "workload"],
        ["kind", "secret", "cli", "align"],
        ["shard_contract"],  # what a shard is: its slot, the sparse topic rows
        ["fairness"],  # per-tenant figures of a level: shares, Jain's index, spreads
        ["stats"],
        ["result"],
    ],
    "hub/src": [
        ["crate"],
        ["cli", "testing"],
        ["serve"],
        ["routes"],
        ["operator_endpoints", "handlers"],
        ["subscribe", "metrics"],
        ["state"],
        ["distribute", "broker", "delivery_queue"],
        ["batch", "callback_conn", "delivery_settings", "topic"],
        ["sign", "config"],
        ["faults", "params", "stats", "conn_handle", "server_timing", "tls", "serve_limits"],
        ["broker_stats", "admission", "serve_stats", "delivery_limit"],
    ],
    # The Service Bus crate (hubload-servicebus): the emulator (with its administration API)
    # and the receiver over the sender, over the error and message types, over the connection
    # string, over a given token, over SAS signing, over the transports.
    "servicebus/src": [
        ["crate"],
        ["emulator", "receiver"],
        ["sender"],
        ["error", "message"],
        ["connection_string", "outcome"],
        ["given_token"],
        ["sas"],
        ["transport"],
    ],
    # The seeded generator (hubload-rng): one file.
    "rng/src": [
        ["crate"],
    ],
    # The codec crate (hubload-http1): the proxy exchange over four modules that do not
    # import each other.
    "http1/src": [
        ["crate"],
        ["proxy"],
        ["answer", "chunked", "request", "response"],
    ],
}


def top(p):
    return p[0] if p else "crate"


def check(src):
    mods = ic.load_crate(src)
    ic.collect(mods)
    g = ic.edges(mods)
    key = os.path.normpath(src)
    floors = FLOORS.get(key)
    bad = []
    if floors is None:
        return [f"{src}: no floor order for this crate in scripts/floors.py"]
    floor = {m: i for i, names in enumerate(floors) for m in names}
    for name in sorted({top(p) for p in mods}):
        if name not in floor:
            bad.append(f"{src}: module {name} is on no floor: add it to FLOORS in scripts/floors.py")
    for a in sorted(g):
        for b in sorted(g[a]):
            ta, tb = top(a), top(b)
            if ta == tb or ta not in floor or tb not in floor:
                continue
            if floor[tb] <= floor[ta]:
                how = "the same floor" if floor[tb] == floor[ta] else "a higher floor"
                bad.append(f"{src}: {ic.name(a)} -> {ic.name(b)}: {tb} is on {how} than {ta}")
    depth = max(len(p) for p in mods)
    for d in range(1, depth + 1):
        grouped = {}
        for a, bs in g.items():
            ga = a[:d]
            for b in bs:
                gb = b[:d]
                if ga != gb:
                    grouped.setdefault(ga, set()).add(gb)
                grouped.setdefault(gb, set())
            grouped.setdefault(ga, set())
        for comp in ic.cycles(grouped):
            names = ", ".join(ic.name(c) + "/" for c in comp)
            bad.append(f"{src}: folders import each other in a circle (depth {d}): {names}")
    return bad, len(mods), sum(len(v) for v in g.values())


def readme_floors(path):
    """The floors README.md draws: `crate: a → b · c → ...`, continued on indented lines."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError:
        return {}
    drawn, key = {}, None
    for line in lines:
        head = line.split(":", 1)
        if len(head) == 2 and head[0].rstrip("/") in FLOORS and not line.startswith(" "):
            key, rest = head[0].rstrip("/"), head[1]
        elif key and line.startswith(" ") and line.strip().startswith("→"):
            rest = line
        else:
            key = None
            continue
        drawn[key] = drawn.get(key, "") + " " + rest
    return {
        k: [[m.strip().replace("lib.rs", "crate") for m in f.split("·")] for f in v.split("→")]
        for k, v in drawn.items()
    }


def main():
    dirs = sys.argv[1:] or ["src", "hub/src", "http1/src", "servicebus/src", "rng/src"]
    failed = 0
    readme = os.path.join(HERE, "..", "README.md")
    drawn = readme_floors(readme)
    for key, floors in FLOORS.items():
        if drawn.get(key) != floors:
            print(f"README.md: the floors of {key} differ from scripts/floors.py: redraw them")
            failed += 1
    for src in dirs:
        out = check(src)
        if isinstance(out, list):
            print(out[0])
            failed += 1
            continue
        bad, n_mods, n_edges = out
        for line in bad:
            print(line)
        failed += len(bad)
        print(f"{src}: {n_mods} modules, {n_edges} import edges, {len(bad)} against the floors")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
