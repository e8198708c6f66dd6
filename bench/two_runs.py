#!/usr/bin/env python3
"""Two bench/torch_compare.py runs side by side, as Markdown: the reference against torch.compile in each.

A row is "slower" only when the reference is behind torch.compile by more than that run's noise band
(the gap between the reference's two timings, at least 1%), as scripts/collect-results judges it.
Lesson 9 rows, when a run has them, get counts by group and by option (in each run and in both), their
decode batches a table in microseconds, and a table with each row's share of the large copy (--copy-gbps,
or the fastest copy of the 1st run).
The optional peers (bench/peers.py: torch.compile with dynamic shapes, Liger-Kernel) get a table of
their own, judged the same way, and decode batches (128 rows or fewer) one in microseconds from
launch to completion, every implementation of the run side by side.

Usage: python3 bench/two_runs.py A.json B.json [--copy-gbps 3005] > table.md
       python3 bench/two_runs.py --results docs/results [--gpu "NVIDIA H100 80GB HBM3"] [--kind KIND]
The second form reads a page's published pair, docs/results/torch/<gpu>-<kind>-run1.json and -run2.json
(bench/torch_compare.py --publish; docs/results/index.md), KIND one of torch (the default: lessons 4-8),
decode, lesson9-torch, lessons10-11.
A lesson 9 run alone (one file) gives its lesson 9 table.
"""
import argparse
import glob
import json
import os

import results_names


def short_samples(run):
    """The sample count of the short shapes, where a run took more of them than of the rest."""
    n = run.get("short_samples")
    if not n or n == run.get("samples"):
        return ""
    placed = run.get("placements", 1)
    where = f", pooled over {placed} placements of their tensors" if placed > 1 else ""
    return f" ({n} for shapes moving under {run.get('short_bytes', 16 << 20) >> 20} MiB{where})"


def rows_of(path):
    """(lesson, shape, dtype) -> {impl: GB/s, 'noise': ..., 'bytes': ...} of one run."""
    with open(path) as f:
        run = json.load(f)
    out = {}
    for r in run["rows"]:
        g = out.setdefault((r["lesson"], r["shape"], r["dtype"]), {})
        g[r["impl"]] = r["gbps"]
        g[r["impl"] + " us"] = r["us"]
        if r["impl"] == "reference":
            g["noise"] = r["noise"]
            g["bytes"] = r["gbps"] * r["us"] * 1e3
    return run, out


def verdict(g, peer="compile"):
    ratio = g["reference"] / g[peer]
    band = max(g.get("noise", 0.0), 0.01)
    return ratio, "faster" if ratio > 1 + band else "slower" if ratio < 1 - band else "tie"


PEERS = (("compile-dynamic", "torch.compile dynamic"), ("liger", "Liger-Kernel"))
DECODE_ROWS = 128
DECODE_IMPLS = (("reference", "reference"), ("compile", "torch.compile"), ("compile-dynamic", "compile dynamic"),
                ("liger", "Liger-Kernel"), ("eager", "eager"), ("copy", "copy of the bytes"))


def peer_table(a, b, notes):
    """The reference against each optional peer, in both runs where there are two."""
    keys = sorted(k for k in a if any(p in a[k] for p, _ in PEERS))
    if not keys:
        for note in notes:
            print(f"\nNo peer columns: {note}")
        return
    present = [(p, name) for p, name in PEERS if any(p in a[k] for k in keys)]
    runs = (a, b) if b else (a,)
    heads = (lambda name: f"vs {name}, 1st | vs {name}, 2nd") if b else (lambda name: f"vs {name}")
    print("\n| lesson | shape | dtype | " + " | ".join(heads(name) for _, name in present) + " |")
    print("|---|---|---|" + "---|" * len(runs) * len(present))
    counts, behind_both, paired = {}, {}, {}
    for key in keys:
        cells = []
        for p, _ in present:
            row = []
            for run in runs:
                g = run.get(key, {})
                if p in g and "reference" in g:
                    ratio, v = verdict(g, p)
                    cells.append(f"{ratio:.3f} {v}")
                    counts.setdefault(p, []).append(v)
                    row.append(v)
                else:
                    cells.append("")
            if len(row) == 2:
                paired[p] = paired.get(p, 0) + 1
                if row == ["slower", "slower"]:
                    behind_both.setdefault(p, []).append(f"{key[0]} {key[1]} {key[2]}")
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    for p, name in present:
        vs = counts.get(p, [])
        line = (f"\n- {name}: {sum(v != 'slower' for v in vs)} of {len(vs)} timings level or ahead, "
                f"{sum(v == 'slower' for v in vs)} behind by more than the noise")
        if paired.get(p):
            both = behind_both.get(p, [])
            line += f"; behind in both runs on {len(both)} of {paired[p]} rows"
            line += f" ({', '.join(both)})" if both else ""
        print(line)
    for note in notes:
        print(f"- {note}")


def decode_table(a):
    """Decode batches in microseconds, launch to completion of one call, every implementation."""
    keys = sorted(k for k in a if k[0] != 9 and int(k[1].split("x")[0]) <= DECODE_ROWS and "reference" in a[k])
    if not keys:
        return
    present = [(p, name) for p, name in DECODE_IMPLS if any(p in a[k] for k in keys)]
    print("\nDecode batches, microseconds from launch to completion of one call (one CUDA-graph replay, "
          "L2 flushed before it; the 1st run):\n")
    print("| lesson | shape | dtype | " + " | ".join(f"{name} µs" for _, name in present) +
          " | reference vs the fastest peer |")
    print("|---|---|---|" + "---:|" * len(present) + "---|")
    for key in keys:
        g = a[key]
        cells = [f"{g[p + ' us']:.2f}" if p in g else "" for p, _ in present]
        peers = [(g[p + " us"], name) for p, name in present if p in g and p not in ("reference", "copy")]
        judged = ""
        if peers:
            best, name = min(peers)
            ratio = best / g["reference us"]
            band = max(g.get("noise", 0.0), 0.01)
            judged = f"{ratio:.3f} {'faster' if ratio > 1 + band else 'slower' if ratio < 1 - band else 'tie'} ({name})"
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + f" | {judged} |")


def published_pair(ap, results, gpu, kind="torch"):
    """The two published runs of a peers' page, for the named GPU or the only one there is."""
    if gpu:
        pair = [results_names.raw(results, gpu, kind, run) for run in (1, 2)]
    else:
        pattern = "*" + results_names.KINDS[kind] + "-run1.json"
        firsts = sorted(glob.glob(os.path.join(results, results_names.RAW_FOLDER, pattern)))
        if len(firsts) != 1:
            ap.error(f"{len(firsts)} published pairs under {results}; name the GPU with --gpu")
        pair = [firsts[0], firsts[0].replace("-run1.json", "-run2.json")]
    for path in pair:
        if not os.path.exists(path):
            ap.error(f"{path} not found (bench/torch_compare.py --publish {results} --run 1, then --run 2)")
    return pair


def lesson9_group(key, g):
    """Which of lesson 9's summary lines a row counts in: decode batches, 64 MiB or more, or neither."""
    rows = int(key[1].rsplit("_", 1)[1].split("x")[0])
    # bytes is the rounded GB/s times the rounded µs (within 0.02%), and the 64 MiB shapes move 64 MiB plus their
    # parameters: the test allows 0.1%.
    return "decode" if rows <= DECODE_ROWS else "large" if g["bytes"] >= 0.999 * 64 * 2**20 else "other"


def lesson9_tables(a, b, copy_gbps):
    """Lesson 9's rows: counts by group and by option, in each run and in both, then every row."""
    nine = sorted(k for k in a if k[0] == 9 and "compile" in a[k])
    if not nine:
        return
    runs = [a] + ([b] if b and all(k in b and "compile" in b[k] for k in nine) else [])
    verdicts = {k: [verdict(run[k])[1] for run in runs] for k in nine}
    both = len(runs) == 2

    def counts(keys):
        cells = []
        for i in range(len(runs)):
            vs = [verdicts[k][i] for k in keys]
            cells.append(f"{vs.count('faster')}, {vs.count('tie')}, {vs.count('slower')}")
        if both:
            cells.append(str(sum(verdicts[k] == ["slower", "slower"] for k in keys)))
        return cells

    heads = ["faster, level, slower" + (f" ({n})" if both else "") for n in ("1st", "2nd")[:len(runs)]]
    heads += ["slower in both"] if both else []
    print("\nLesson 9 against torch.compile (a row is slower when behind by more than max(noise, 1%)):\n")
    print("| rows | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    names = (("decode", f"decode batches: {DECODE_ROWS} rows or fewer"), ("large", "64 MiB or more"))
    for group, name in names:
        keys = [k for k in nine if lesson9_group(k, a[k]) == group]
        print(f"| {name} ({len(keys)}) | " + " | ".join(counts(keys)) + " |")
    print(f"| all {len(nine)} rows | " + " | ".join(counts(nine)) + " |")
    print("\n| 64 MiB or more, by option | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    options = sorted({k[1].rsplit("_", 1)[0] for k in nine})
    for option in options:
        keys = [k for k in nine if k[1].rsplit("_", 1)[0] == option and lesson9_group(k, a[k]) == "large"]
        print(f"| {option} ({len(keys)}) | " + " | ".join(counts(keys)) + " |")
    lesson9_decode_table([k for k in nine if lesson9_group(k, a[k]) == "decode"], runs, verdicts)
    share = f" (of the fastest copy timed in the 1st run, {copy_gbps:.0f} GB/s)" if copy_gbps else ""
    if both:
        print("\n| lesson 9 option and shape | dtype | MiB moved | reference GB/s (1st, 2nd) | "
              f"torch.compile GB/s (1st, 2nd) | vs compile, 1st | vs compile, 2nd | % of the large copy{share} |")
        print("|---|---|---:|---:|---:|---|---|---:|")
    else:
        print("\n| lesson 9 option and shape | dtype | MiB moved | reference GB/s | torch.compile GB/s | vs compile | "
              f"% of the large copy{share} |")
        print("|---|---|---:|---:|---:|---|---:|")
    for key in nine:
        g = a[key]
        cells = [f"{key[1]}", key[2], f"{g['bytes'] / 2**20:.0f}",
                 ", ".join(f"{run[key]['reference']:.0f}" for run in runs),
                 ", ".join(f"{run[key]['compile']:.0f}" for run in runs)]
        cells += [f"{verdict(run[key])[0]:.3f} {v}" for run, v in zip(runs, verdicts[key])]
        cells.append(f"{100 * g['reference'] / copy_gbps:.1f}%" if copy_gbps else "")
        print("| " + " | ".join(cells) + " |")


def lesson9_decode_table(keys, runs, verdicts):
    """Lesson 9's decode batches in microseconds, the figure a decode step waits for, in each run."""
    if not keys:
        return
    first = runs[0]
    nth = ", ".join(("1st", "2nd")[:len(runs)])
    print(f"\nLesson 9's decode batches, microseconds from launch to completion of one call (one CUDA-graph replay, "
          f"L2 flushed before it; {nth} run{'s' if len(runs) > 1 else ''}):\n")
    print(f"| lesson 9 option and shape | dtype | reference µs ({nth}) | torch.compile µs ({nth}) | "
          "copy of the bytes µs (1st) | " + " | ".join(f"vs compile, {n}" for n in ("1st", "2nd")[:len(runs)]) + " |")
    print("|---|---|---:|---:|---:|" + "---|" * len(runs))
    for key in keys:
        cells = [key[1], key[2], ", ".join(f"{run[key]['reference us']:.2f}" for run in runs),
                 ", ".join(f"{run[key]['compile us']:.2f}" for run in runs),
                 f"{first[key]['copy us']:.2f}" if "copy us" in first[key] else ""]
        cells += [f"{verdict(run[key])[0]:.3f} {v}" for run, v in zip(runs, verdicts[key])]
        print("| " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("first", nargs="?")
    ap.add_argument("second", nargs="?")
    ap.add_argument("--results", metavar="DIR", help="read the published pair of runs from DIR/torch/")
    ap.add_argument("--gpu", help="with --results: the GPU's name (default: the only GPU with a published pair)")
    ap.add_argument("--kind", default="torch", choices=results_names.TWO_RUN_KINDS,
                    help="with --results: which two-run page (default: lessons 4-8)")
    ap.add_argument("--copy-gbps", type=float, default=0.0,
                    help="the large copy, for lesson 9's share column (default: the fastest copy of the 1st run)")
    args = ap.parse_args()
    if args.results:
        if args.first:
            ap.error("give either two run files or --results, not both")
        args.first, args.second = published_pair(ap, args.results, args.gpu, args.kind)
    if not args.first:
        ap.error("give the runs: A.json [B.json], or --results DIR")
    run_a, a = rows_of(args.first)
    run_b, b = rows_of(args.second) if args.second else (None, {})
    print(f"GPU {run_a.get('gpu')}, PyTorch {run_a.get('torch')}, CUDA {run_a.get('cuda')}, "
          f"{run_a.get('samples')} samples per timing{short_samples(run_a)}.\n")
    counts = {}
    pairs = sorted(k for k in a if k[0] != 9 and "compile" in a[k])
    if pairs and b:
        print("| lesson | shape | dtype | reference GB/s (1st, 2nd) | torch.compile GB/s (1st, 2nd) | "
              "vs compile, 1st | vs compile, 2nd |")
        print("|---|---|---|---:|---:|---|---|")
    elif pairs:
        print("| lesson | shape | dtype | reference GB/s | torch.compile GB/s | vs compile |")
        print("|---|---|---|---:|---:|---|")
    for key in pairs:
        ra, va = verdict(a[key])
        cells = [f"{a[key]['reference']:.0f}", f"{a[key]['compile']:.0f}", f"{ra:.3f} {va}"]
        if key in b and "compile" in b[key]:
            rb, vb = verdict(b[key])
            cells = [f"{a[key]['reference']:.0f}, {b[key]['reference']:.0f}",
                     f"{a[key]['compile']:.0f}, {b[key]['compile']:.0f}", f"{ra:.3f} {va}", f"{rb:.3f} {vb}"]
            counts.setdefault(key[0], []).append((va, vb))
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(cells) + " |")
    if pairs:
        print()
    for lesson, vs in sorted(counts.items()):
        both = sum(1 for va, vb in vs if va != "slower" and vb != "slower")
        print(f"- lesson {lesson}: {both} of {len(vs)} rows at least level with torch.compile in both runs; "
              f"slower in the 1st {sum(va == 'slower' for va, _ in vs)}, in the 2nd {sum(vb == 'slower' for _, vb in vs)}")
    notes = list(dict.fromkeys(run_a.get("peer_notes", []) + (run_b or {}).get("peer_notes", [])))
    peer_table(a, b, notes)
    decode_table(a)
    lesson9_tables(a, b, args.copy_gbps or max((g.get("copy", 0.0) for g in a.values()), default=0.0))


if __name__ == "__main__":
    main()
