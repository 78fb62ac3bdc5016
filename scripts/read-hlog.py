#!/usr/bin/env python3
"""Read a latency.hlog with the HdrHistogram Python library (PyPI: hdrhistogram), a decoder
hubload did not write, and print per tag, as JSON: the intervals (absolute start and end in
seconds, count, max) and, over all intervals of the tag added together, total count, p50, p99
and max.

Usage: read-hlog.py latency.hlog
Percentiles are HdrHistogram's get_value_at_percentile (the bucket's highest equivalent value
of the nearest rank); hubload's summary.json uses the same rank and value, clamped to the exact
max (docs/reports.md).
"""
import json
import sys

from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader


def main(path):
    # The reference histogram only supplies defaults; each interval carries its own layout.
    reader = HistogramLogReader(path, HdrHistogram(1, 60 * 60 * 1000 * 1000, 3))
    out = {}
    added = {}
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        tag = h.get_tag()
        out.setdefault(tag, {"intervals": []})["intervals"].append({
            "start_s": h.get_start_time_stamp() / 1000.0,
            "end_s": h.get_end_time_stamp() / 1000.0,
            "count": h.get_total_count(),
            "max": h.get_max_value(),
        })
        # Added into a histogram of hubload's layout (1 µs, 3 digits) wide enough for an hour:
        # the library's add() does not resize, and a later interval may hold larger values
        # than the first one's range.
        if tag not in added:
            added[tag] = HdrHistogram(1, 60 * 60 * 1000 * 1000, 3)
        added[tag].add(h)
    for tag, h in added.items():
        out[tag].update({
            "count": h.get_total_count(),
            "p50": h.get_value_at_percentile(50.0),
            "p99": h.get_value_at_percentile(99.0),
            "max": h.get_max_value(),
        })
    json.dump(out, sys.stdout, sort_keys=True)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
