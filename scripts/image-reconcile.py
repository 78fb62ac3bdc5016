#!/usr/bin/env python3
"""Compare a hubload summary.json with the reference hub's own counts (the change in its /stats).

    image-reconcile.py WHAT SUMMARY STATS_BEFORE STATS_AFTER [--levels N] [--requests N] [--nonzero CLASS,…]

Every outcome class of the WebSub publishes must equal the hub's count for the answers that
produce it, the registration phase must equal the hub's register counts, and every topic's
attempts its published and denied counts (over all topics when faults were injected: the hub
does not count a faulted publish against its topic). Exit 1 with one line per difference. Used by image-check.sh.
"""

import argparse
import json
import os
import sys

# hubload's class (summary.json counts) -> the hub's /stats keys (publish) that produce it.
# A class with no key here is one this hub cannot cause: it must be 0.
CLASS_TO_HUB = {
    "accepted": ["accepted"],
    "denied": ["denied"],
    "http_4xx": ["bad_request", "unauthorized", "too_large", "conflict", "not_found"],
    "http_502": ["fault_502"],
    "http_503": ["fault_503"],
    "conn_reset": ["fault_reset"],
}
TIMEOUTS = ["timeout_connect", "timeout_pool_wait", "timeout_response"]  # <-> "abandoned"


def delta(after, before, mode):
    a, b = after.get(mode, {}), before.get(mode, {})
    return {k: a[k] - b.get(k, 0) for k in a}


def topic_names(s, summary):
    """The topics' names: one line per topic in the names file beside summary.json (schema 4),
    or inline in a summary from before that file."""
    if "topic_names_file" not in s:
        return s["topics"]
    with open(os.path.join(os.path.dirname(summary), s["topic_names_file"]), encoding="utf-8") as f:
        return [json.loads(line)["topic"] for line in f]


def topic_attempts(s, summary):
    """Attempts per topic index over the run: each listed level's rows in the topics file beside
    summary.json added up (a last line without its newline was cut short: skipped), or the
    TOTAL row's inline counts in a summary from before that file."""
    if "topics_file" not in s:
        return s["total"]["topic_attempts"]
    out = [0] * len(topic_names(s, summary))
    with open(os.path.join(os.path.dirname(summary), s["topics_file"]), encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break
            row = json.loads(line)
            if row["level"] < len(s["levels"]):
                for t in row["topics"]:
                    out[t["topic"]] += t["attempts"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what")
    ap.add_argument("summary")
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--levels", type=int)
    ap.add_argument("--requests", type=int, help="measured events per level")
    ap.add_argument("--nonzero", default="", help="classes that must have happened (the faults fired)")
    args = ap.parse_args()
    load = lambda p: json.load(open(p, encoding="utf-8"))  # noqa: E731
    s, before, after = load(args.summary), load(args.before), load(args.after)

    bad = []

    def same(name, ours, hubs):
        if ours != hubs:
            bad.append(f"{name}: hubload {ours}, hub {hubs}")

    levels, total = s["levels"], s["total"]
    if args.levels is not None:
        same("levels", len(levels), args.levels)
    if args.requests is not None:
        for lv in levels:
            same(f"level {lv['label']} events", lv["events"]["total"], args.requests)
    # schema_version 5 holds the counts in the row's statistics, earlier ones beside them.
    counts = total.get("stats", total)["counts"]
    pub = delta(after, before, "publish")
    same("publish requests (samples)", total["samples"], sum(pub.values()))
    for cls, n in sorted(counts.items()):
        if cls in CLASS_TO_HUB:
            same(f"class {cls}", n, sum(pub[k] for k in CLASS_TO_HUB[cls]))
        elif cls not in TIMEOUTS:
            same(f"class {cls} (the hub cannot cause it)", n, 0)
    same("timeouts vs the hub's abandoned", sum(counts.get(k, 0) for k in TIMEOUTS), pub["abandoned"])
    for cls in filter(None, args.nonzero.split(",")):
        if counts.get(cls, 0) == 0:
            bad.append(f"class {cls}: 0, but the hub's faults should have caused some")

    reg = s.get("registration")
    hub_reg = delta(after, before, "register")
    if reg is None:
        bad.append("summary.json has no registration phase")
    else:
        same("registration accepted", reg["accepted"], hub_reg["accepted"])
        same("registration already registered (409)", reg["already_registered"], hub_reg["conflict"])
        same("registration requests", reg["topics"], sum(hub_reg.values()))

    # The hub counts a topic's publishes when its logic answers them; an injected fault is
    # answered before that. So per topic when nothing was faulted, else over all topics.
    def topic_delta(name):
        t_after, t_before = after["topics"].get(name, {}), before.get("topics", {}).get(name, {})
        return sum(t_after.get(k, 0) - t_before.get(k, 0) for k in ("published", "denied"))

    faulted = sum(pub[k] for k in ("fault_502", "fault_503", "fault_reset", "abandoned"))
    attempts = topic_attempts(s, args.summary)
    names = topic_names(s, args.summary)
    ours = [attempts[i] if i < len(attempts) else 0 for i in range(len(names))]
    if faulted == 0:
        for name, n in zip(names, ours):
            same(f"topic {name} publishes", n, topic_delta(name))
    else:
        same("publishes that reached the hub's logic, over all topics", sum(ours) - faulted,
             sum(topic_delta(name) for name in names))

    if bad:
        for b in bad:
            print(f"{args.what}: MISMATCH {b}", file=sys.stderr)
        return 1
    shown = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v)
    print(
        f"{args.what}: {len(levels)} levels, {total['samples']} publishes ({shown}) = the hub's /stats; "
        f"registration {reg['accepted']} accepted + {reg['already_registered']} already registered = the hub's; "
        f"{len(names)} topics match"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
