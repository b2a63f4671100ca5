"""Draws target/bench.svg from target/bench.json, the figures `make bench` wrote.

Usage: chart.py [COPY_TO]   (COPY_TO: also write the chart there, e.g. docs/bench.svg)

Each point is the median of a workload's rounds; its bar spans their min-max. A workload left
out of the run (`cargo bench --bench lockbench -- w1`) leaves its panel saying so.
"""

import json
import shutil
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "target" / "bench.json"
CHART = ROOT / "target" / "bench.svg"

# One colour per implementation, the same in every panel.
COLOURS = {"rlock": "#c0392b", "redisson": "#2c7fb8", "set-nx": "#7f7f7f", "set-nx+del": "#bdbdbd", "ping": "#4d4d4d"}
LABELS = {"rlock": "rlock", "redisson": "Redisson protocol", "set-nx": "SET NX PX + CAD"}


def spread(values):
    """(median, distance down to min, distance up to max), as matplotlib's error bars want."""
    mid = statistics.median(values)
    return mid, mid - min(values), max(values) - mid


def sizes(figures, workload):
    """The sizes (contenders, locks held) a workload ran with, from its `wN.<size>.` names."""
    found = {int(name.split(".")[1]) for name in figures if name.startswith(workload + ".") and name.split(".")[1].isdigit()}
    return sorted(found)


def line(ax, figures, workload, side, figure, label, colour, style="-o", bound=lambda size: False):
    """One curve of `figure` against the workload's sizes, with min-max bars; points where
    `bound(size)` (only a lower bound) are drawn hollow."""
    xs, mids, errs = [], [], ([], [])
    for size in sizes(figures, workload):
        values = [v for v in figures.get(f"{workload}.{size}.{side}.{figure}", []) if v is not None]
        if values:
            mid, down, up = spread(values)
            xs.append(size)
            mids.append(mid)
            errs[0].append(down)
            errs[1].append(up)
    if xs:
        ax.errorbar(xs, mids, yerr=errs, fmt=style, color=colour, label=label, capsize=3, markersize=4)
        hollow = [(x, y) for x, y in zip(xs, mids) if bound(x)]
        if hollow:
            ax.plot(*zip(*hollow), "o", color="white", markeredgecolor=colour, markersize=7)
    return bool(xs)


def p99_bound(figures, side):
    """Whether W2's p99 at a contender count is only a lower bound: more than 1% of the waits
    were still unfinished when the round ended (the bench counts them with their time so far)."""

    def bound(contenders):
        def mid(figure):
            return statistics.median(figures.get(f"w2.{contenders}.{side}.{figure}", [0]))

        unfinished = mid("unfinished_waits")
        return unfinished > 0.01 * (unfinished + mid("acquires"))

    return bound


def missing(ax, workload):
    ax.text(0.5, 0.5, f"{workload} not in this run", ha="center", va="center", transform=ax.transAxes)


def hot_lock(ax, figures, figure, ylabel, title, note=None):
    drawn = [
        line(ax, figures, "w2", side, figure, LABELS[side], COLOURS[side], bound=p99_bound(figures, side) if note else lambda n: False)
        for side in LABELS
    ]
    if not any(drawn):
        return missing(ax, "W2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("contenders on one lock")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    if note:
        ax.text(0.02, 0.98, note, transform=ax.transAxes, va="top", fontsize=7)


# (bench.json name, bar label, colour): the per-call server costs of W1 and W5.
CALLS = [
    ("w1.rlock.acquire_usec", "W1 fresh RLOCK.ACQUIRE", "rlock"),
    ("w1.redisson.acquire_usec", "W1 fresh Redisson acquire script", "redisson"),
    ("w1.set-nx.acquire_usec", "W1 fresh SET NX PX", "set-nx"),
    ("w1.rlock.release_usec", "W1 RLOCK.RELEASE", "rlock"),
    ("w1.set-nx.release_usec", "W1 compare-and-delete script", "set-nx"),
    ("w1.set-nx+del.release_usec", "W1 DEL", "set-nx+del"),
    ("w1.rlock.pair_usec", "W1 pair: rlock", "rlock"),
    ("w1.redisson.pair_usec", "W1 pair: Redisson scripts", "redisson"),
    ("w1.set-nx.pair_usec", "W1 pair: SET NX PX + CAD", "set-nx"),
    ("w1.set-nx+del.pair_usec", "W1 pair: SET NX PX + DEL", "set-nx+del"),
    ("w5.rlock.usec_per_call", "W5 RLOCK.ACQUIRE", "rlock"),
    ("w5.set-nx.usec_per_call", "W5 SET NX PX", "set-nx"),
    ("w5.ping.usec_per_call", "W5 PING", "ping"),
]


def per_call(ax, figures):
    bars = [(label, colour, spread(figures[name])) for name, label, colour in CALLS if figures.get(name)]
    if not bars:
        return missing(ax, "W1 and W5")
    ys = range(len(bars))
    mids = [b[2][0] for b in bars]
    errs = ([b[2][1] for b in bars], [b[2][2] for b in bars])
    ax.barh(ys, mids, xerr=errs, color=[COLOURS[b[1]] for b in bars], capsize=2)
    ax.set_yticks(list(ys), [b[0] for b in bars], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("server µs per call (INFO commandstats)")
    ax.set_title("Uncontended: server time per command")
    ax.grid(True, axis="x", alpha=0.3)


def live_keys(ax, figures):
    curves = [
        ("rlock", "acquire_usec", "RLOCK.ACQUIRE", "-o"),
        ("rlock", "release_usec", "RLOCK.RELEASE", "--o"),
        ("set-nx", "acquire_usec", "SET NX PX", "-s"),
        ("set-nx", "release_usec", "compare-and-delete", "--s"),
    ]
    drawn = [line(ax, figures, "w9", side, figure, label, COLOURS[side], style) for side, figure, label, style in curves]
    if not any(drawn):
        return missing(ax, "W9")
    ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("other locks held (keys live)")
    ax.set_ylabel("server µs per call")
    ax.set_title("Uncontended cost as the keyspace grows")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)


def main():
    figures = json.loads(SOURCE.read_text())
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "rlock", "font.size": 9})
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    hot_lock(axes[0][0], figures, "acquires_per_s", "acquires/s", "Hot lock: throughput")
    hot_lock(
        axes[0][1],
        figures,
        "p99_ms",
        "p99 acquire latency, ms",
        "Hot lock: p99 wait",
        note=f"hollow: a lower bound, waits still unfinished\nwhen the round ended ({figures.get('round_s', '?')} s rounds)",
    )
    per_call(axes[1][0], figures)
    live_keys(axes[1][1], figures)
    fig.suptitle(
        f"rlock benchmark, Redis {figures.get('redis_version', '?')}: "
        "medians of interleaved rounds, bars from min to max"
    )
    fig.tight_layout()
    CHART.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(CHART, metadata={"Date": None})  # no date: the same figures, the same file
    print(f"chart: {CHART}")
    if len(sys.argv) > 1:
        shutil.copyfile(CHART, sys.argv[1])
        print(f"copied to {sys.argv[1]}")


if __name__ == "__main__":
    main()
