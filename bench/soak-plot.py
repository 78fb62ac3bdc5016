#!/usr/bin/env python3
"""Draw a soak's samples (bench/soak.sh's samples.csv) as an SVG: one panel per column.

Usage: soak-plot.py SAMPLES OUT.svg [WARMUP_S] [TITLE]

Plain SVG written by hand, so the bench needs no plotting package. Panels: hubload's RSS and
the hub's RSS (MB), hubload's open descriptors and threads, against time in minutes; a
dashed line marks the end of the warm-up (the judged samples are to its right).
"""
import csv
import os
import sys
from xml.sax.saxutils import escape

PANELS = [
    ("hubload_rss_kb", "hubload RSS (MB)", 1 / 1024),
    ("hub_rss_kb", "hub RSS (MB)", 1 / 1024),
    ("hubload_fds", "hubload open fds", 1),
    ("hubload_threads", "hubload threads", 1),
]
W, PH, LEFT, RIGHT, TOP, GAP = 780, 150, 70, 40, 40, 40


def nice_range(lo, hi):
    """A padded y range that is never empty."""
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.1
    return lo - pad, hi + pad


def main():
    path, out = sys.argv[1], sys.argv[2]
    warmup = float(sys.argv[3]) if len(sys.argv) > 3 else None
    title = sys.argv[4] if len(sys.argv) > 4 else "soak"
    rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(open(path))]
    if len(rows) < 2:
        sys.exit(f"{path}: fewer than 2 samples")
    t_max = max(r["t_s"] for r in rows) or 1.0
    height = TOP + len(PANELS) * (PH + GAP) + 10
    pw = W - LEFT - RIGHT
    svg = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" '
        f'font-family="sans-serif" font-size="11">',
        f'<rect width="{W}" height="{height}" fill="white"/>',
        f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    for i, (col, label, scale) in enumerate(PANELS):
        y0 = TOP + i * (PH + GAP)
        ys = [r[col] * scale for r in rows]
        lo, hi = nice_range(min(ys), max(ys))

        def px(t):
            return LEFT + t / t_max * pw

        def py(v, lo=lo, hi=hi, y0=y0):
            return y0 + PH - (v - lo) / (hi - lo) * PH

        svg.append(
            f'<rect x="{LEFT}" y="{y0}" width="{pw}" height="{PH}" fill="none" stroke="#888"/>'
        )
        svg.append(f'<text x="{LEFT}" y="{y0 - 5}">{escape(label)}</text>')
        for k in range(5):
            v = lo + (hi - lo) * k / 4
            y = py(v)
            svg.append(f'<line x1="{LEFT - 4}" y1="{y:.1f}" x2="{LEFT}" y2="{y:.1f}" stroke="#888"/>')
            tick = f"{v:.0f}" if scale == 1 and hi - lo >= 8 else f"{v:.1f}"
            svg.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>')
        for k in range(7):
            t = t_max * k / 6
            x = px(t)
            svg.append(f'<line x1="{x:.1f}" y1="{y0 + PH}" x2="{x:.1f}" y2="{y0 + PH + 4}" stroke="#888"/>')
            svg.append(
                f'<text x="{x:.1f}" y="{y0 + PH + 15}" text-anchor="middle">{t / 60:.1f} min</text>'
            )
        if warmup is not None and 0 < warmup < t_max:
            x = px(warmup)
            svg.append(
                f'<line x1="{x:.1f}" y1="{y0}" x2="{x:.1f}" y2="{y0 + PH}" '
                f'stroke="#c33" stroke-dasharray="4 3"/>'
            )
        pts = " ".join(f"{px(r['t_s']):.1f},{py(v):.1f}" for r, v in zip(rows, ys))
        svg.append(f'<polyline points="{pts}" fill="none" stroke="#1f5fa8" stroke-width="1.5"/>')
    svg.append("</svg>")
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(svg) + "\n")
    os.replace(tmp, out)


main()
