#!/usr/bin/env python3
"""The soak's verdict (bench/soak.sh) from its samples.csv and the run's summary.json.

Usage: soak-judge.py SAMPLES SUMMARY WARMUP_S DURATION_S RSS_PCT_H FD_GROWTH THREADS_GROWTH

Judged: the samples after the warm-up and before the level's end (later ones see the final
report and the unsubscriptions, not the steady state). RSS (hubload's and the hub's): the
least-squares slope per hour, as % of the RSS at the warm-up's end, must not exceed
RSS_PCT_H; when the samples have the anonymous RSS (RssAnon), its slope is the one judged
(still as % of the whole RSS), the whole RSS's is printed beside it. Each slope is also printed as bytes per attempt. Descriptors and threads of hubload: the fewest in the last third of
the judged samples must not exceed the usual count of the first third (its median) by more
than the allowed growth. A leak is a descriptor that never comes back: it raises the count
the run comes back down to. A burst of load leaves more publishes in flight, and so more
connections open, for a while: a peak that comes back down, which moves the most, not the
fewest (docs/soak.md). The most in each third is printed beside it, not judged. Exit 1 with
the failed columns named.
"""
import csv
import json
import sys


def slope_per_h(rows, col):
    xs = [r["t_s"] for r in rows]
    ys = [r[col] for r in rows]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var * 3600


def main():
    path, summary, warmup, duration, rss_bound, fd_bound, th_bound = sys.argv[1:]
    warmup, duration = float(warmup), float(duration)
    rss_bound, fd_bound, th_bound = float(rss_bound), int(fd_bound), int(th_bound)
    rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(open(path))]
    judged = [r for r in rows if warmup <= r["t_s"] < duration]
    if len(judged) < 4:
        sys.exit(f"only {len(judged)} samples after the warm-up: run longer")
    s = json.load(open(summary))
    total = s.get("total") or s["levels"][-1]
    print(
        f"# {len(rows)} samples, {len(judged)} judged ({warmup:.0f} s <= t < {duration:.0f} s); "
        f"{total['samples']} attempts, {total['error_pct']:.3f} % errors, "
        f"max {total['latency_us']['max']} µs"
    )
    # Attempts per second over the level: turns a slope into bytes per attempt, the size of
    # a per-attempt leak the slope would be (a 1 KB/attempt leak at 50/s is 176 MB/h).
    rate = total["samples"] / duration
    failed = []
    # The anonymous RSS (heap and stacks: where a leak shows) is judged when the samples have
    # it, its slope as % of the whole RSS at the warm-up's end (the measure, without
    # the binary's pages read in as code runs for the first time: docs/soak.md); the whole
    # RSS is printed beside it. Older samples have only the whole RSS, which is then judged.
    has_anon = "hubload_anon_kb" in rows[0]
    for who in ("hubload", "hub"):
        rss = f"{who}_rss_kb"
        base = judged[0][rss]
        for col in (rss, f"{who}_anon_kb") if has_anon else (rss,):
            per_h = slope_per_h(judged, col)
            pct = per_h / base * 100 if base else 0.0
            per_attempt = per_h * 1024 / 3600 / rate if rate else 0.0
            informative = has_anon and col == rss
            verdict = "ok" if informative or pct <= rss_bound else "FAIL"
            print(
                f"{col:16} {judged[0][col]:8.0f} kB at the warm-up's end, last "
                f"{judged[-1][col]:8.0f} kB, slope {per_h:+9.1f} kB/h = {pct:+7.2f} %/h of the "
                f"RSS = {per_attempt:+6.1f} B/attempt"
                + (" (not judged)" if informative else f" (bound {rss_bound:g} %/h) {verdict}")
            )
            if verdict == "FAIL":
                failed.append(col)
    def median(rows, col):
        v = sorted(r[col] for r in rows)
        return (v[(len(v) - 1) // 2] + v[len(v) // 2]) / 2

    third = max(len(judged) // 3, 1)
    first, last = judged[:third], judged[-third:]
    for col, bound in (("hubload_fds", fd_bound), ("hubload_threads", th_bound)):
        early, late = median(first, col), min(r[col] for r in last)
        peaks = (max(r[col] for r in first), max(r[col] for r in last))
        verdict = "ok" if late <= early + bound else "FAIL"
        print(
            f"{col:16} {early:g} usually in the first third (median), fewest {late:g} in the last "
            f"(most {peaks[0]:.0f} and {peaks[1]:.0f}, not judged), "
            f"slope {slope_per_h(judged, col):+8.2f}/h (bound: fewest <= usual + {bound}) {verdict}"
        )
        if verdict != "ok":
            failed.append(col)
        if col == "hubload_fds" and "hubload_close_wait" in rows[0]:
            # Which descriptors did not come back: sockets the peer closed and hubload holds.
            cw = [r["hubload_close_wait"] for r in last]
            print(
                f"{'':16} of them in CLOSE-WAIT (closed by the peer, still held): "
                f"{min(cw):.0f}–{max(cw):.0f} in the last third"
                + (
                    f"; {min(cw):.0f} of the {late - early:g} that did not come back are idle "
                    "pooled connections the server closed, kept by the pool (docs/soak.md)"
                    if verdict != "ok" and min(cw) > 0
                    else ""
                )
            )
    if failed:
        sys.exit("soak failed: " + ", ".join(failed))


main()
