"""Sets each helper beside the libraries it replaces, from the figures `make bench-pairs` wrote:
every target/bench-<helper>.json that exists (node, python, rust; go and php when their
helpers wrote theirs). Per pair and figure, both sides' medians and the ratio rlock / theirs, as
the median and range of the per-round ratios (the sides' rounds of one repetition ran back to
back). Prints the table and writes target/bench-pairs.json.

A helper's file is {"meta": {...}, "figures": {"<language>.<lock>.<side>.<workload>.<figure>":
[one value per round]}}; the side "rlock" is ours, every other side of the same
<language>.<lock> is set beside it (no dot inside a part).

For the most/fewest acquisitions of one contender, the figure compared is their quotient per
round (1 is perfectly even; inf when a contender got none).

Ends with issue 46's goals per pair, each met or not by the median of the per-round ratios:
uncontended pairs/s at least GOAL_UNCONTENDED times theirs, the hot lock's longest wait at most
GOAL_LONGEST_WAIT times theirs, and every one of our contenders served in every round.
"""

import json
import math
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "bench-pairs.json"
# The helpers whose files are expected; any other bench-<name>.json is read too.
EXPECTED = ["node", "python", "rust", "go", "php", "java"]
OURS = "rlock"
# Issue 46's Done-when.
GOAL_UNCONTENDED = 1.0
GOAL_LONGEST_WAIT = 0.1


def with_fairness(figures):
    """Adds `<workload>.max_over_min` per round beside the max and min per contender."""
    extra = {}
    for name, maxima in figures.items():
        if name.endswith(".max_per_contender"):
            base = name[: -len(".max_per_contender")]
            minima = figures[f"{base}.min_per_contender"]
            extra[f"{base}.max_over_min"] = [hi / lo if lo else math.inf for hi, lo in zip(maxima, minima)]
    return {**figures, **extra}


def pairs(figures):
    """{(language.lock, workload.figure, theirs): (ours, theirs per round)} for every figure
    that ours and another side both have."""
    grouped = {}
    for name, values in figures.items():
        language, lock, side, workload, figure = name.split(".", 4)
        grouped.setdefault((f"{language}.{lock}", f"{workload}.{figure}"), {})[side] = values
    return {
        (pair, figure, side): (sides[OURS], values)
        for (pair, figure), sides in grouped.items() if OURS in sides
        for side, values in sides.items() if side != OURS
    }


def sources():
    """The helpers' files that exist, and the expected ones that do not."""
    # bench-pairs*.json are this script's own tables (bench-one-core keeps one beside OUT).
    found = sorted(path for path in (ROOT / "target").glob("bench-*.json") if not path.stem.startswith("bench-pairs"))
    names = {path.stem[len("bench-"):] for path in found}
    return found, [f"bench-{name}.json" for name in EXPECTED if name not in names]


def fmt(value):
    if math.isnan(value):
        return "n/a"
    return "inf" if math.isinf(value) else f"{value:.3g}"


def goals(rows, figures_by_pair):
    """Lines saying, per pair, whether each of issue 46's goals is met in this run."""
    by_key = {(row["pair"], row["theirs"], row["figure"]): row for row in rows}
    lines = []
    for pair, theirs in sorted({(row["pair"], row["theirs"]) for row in rows}):
        checks = []
        uncontended = by_key.get((pair, theirs, "uncontended.pairs_per_s"))
        if uncontended:
            ratio = uncontended["ratio_median"]
            checks.append(f"uncontended {fmt(ratio)} (>= {GOAL_UNCONTENDED}: {'met' if ratio >= GOAL_UNCONTENDED else 'NOT met'})")
        for figure in (f for (p, t, f) in by_key if p == pair and t == theirs and f.endswith(".max_wait_ms")):
            ratio = by_key[(pair, theirs, figure)]["ratio_median"]
            checks.append(f"{figure} {fmt(ratio)} (<= {GOAL_LONGEST_WAIT}: {'met' if ratio <= GOAL_LONGEST_WAIT else 'NOT met'})")
        fewest = [
            min(values) for name, values in figures_by_pair.get(pair, {}).items()
            if name.startswith(f"{OURS}.") and name.endswith(".min_per_contender")
        ]
        if fewest:
            served = min(fewest) > 0
            checks.append(f"every contender served in every round: {'met' if served else 'NOT met'} (fewest {fmt(min(fewest))})")
        if checks:
            lines.append(f"{pair} vs {theirs}: " + "; ".join(checks))
    return lines


def main():
    rows = []
    figures_by_pair = {}
    found, missing = sources()
    for source in found:
        data = json.loads(source.read_text())
        for name, values in data["figures"].items():
            language, lock, rest = name.split(".", 2)
            figures_by_pair.setdefault(f"{language}.{lock}", {})[rest] = values
        for (pair, figure, theirs_name), (ours, theirs) in sorted(pairs(with_fairness(data["figures"])).items()):
            if figure.endswith(("max_per_contender", "min_per_contender", "unfinished_waits")):
                continue
            # A round where either side is infinite (a contender got nothing) or theirs is 0 has no ratio.
            ratios = [o / t for o, t in zip(ours, theirs) if t and math.isfinite(o) and math.isfinite(t)]
            rows.append({
                "pair": pair, "theirs": theirs_name, "figure": figure,
                "rlock": statistics.median(ours), "other": statistics.median(theirs),
                "ratio_median": statistics.median(ratios) if ratios else math.nan,
                "ratio_min": min(ratios, default=math.nan), "ratio_max": max(ratios, default=math.nan),
                "rounds": len(ratios), "meta": data["meta"],
            })
    print(f"{'pair':<15} {'vs':<18} {'figure':<28} {'rlock':>9} {'theirs':>9}   ratio rlock/theirs: median [min .. max]")
    for row in rows:
        print(
            f"{row['pair']:<15} {row['theirs']:<18} {row['figure']:<28} {fmt(row['rlock']):>9} {fmt(row['other']):>9}"
            f"   {fmt(row['ratio_median'])} [{fmt(row['ratio_min'])} .. {fmt(row['ratio_max'])}] over {row['rounds']} rounds"
        )
    for name in missing:
        print(f"{name}: not in this run")
    print("\nissue 46's goals, by the median ratio of this run:")
    for line in goals(rows, figures_by_pair):
        print("  " + line)
    # JSON has no inf or NaN: those figures are written as fmt() prints them.
    plain = [{k: fmt(v) if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()} for row in rows]
    OUT.write_text(json.dumps(plain, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
