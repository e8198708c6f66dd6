#!/usr/bin/env python3
"""Nsight Compute on the references at the rows a `make bench` page has short of its target.

bench/short_rows.json gives, for each row short of DESIGN §6's bandwidth target, the reason
measured on that GPU. This profiles the reference alone at each such row (one launch through the
grader's --profile-side reference, caches flushed, the GPU's own clocks), with the figures a
reason needs: time, DRAM traffic and its share of peak, occupancy (theoretical and achieved),
registers, the launch shape, warp instructions and issue rate, and the top warp stalls.

    python3 bench/profile_short_rows.py --results docs/results/nvidia-h200.json --out DIR
    python3 bench/profile_short_rows.py --rows 11:16384x4095/bf16,9:layer_bias_4096x65536/bf16 --out DIR

--results reads the rows short of the page's bandwidth target as the design reads it (90% of the
large copy or 95% of a copy of the row's own size); --rows names them as LESSON:SHAPE/DTYPE. Needs the
build (WORKBOOK_BUILD_DIR, default build-gpu) and ncu. Writes DIR/short_rows.json and
DIR/short_rows.md; the reasons themselves are written by hand into bench/short_rows.json.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
os.environ.setdefault("WORKBOOK_BUILD_DIR", os.path.join(ROOT, "build-gpu"))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook import build, profile  # noqa: E402  (the grader's command line and ncu's CSV reader)
from workbook.lessons import all_lessons  # noqa: E402
import results_names  # noqa: E402  (the GPU's name as the pages spell it)

EXTRA_METRICS = (
    "sm__maximum_warps_per_active_cycle_pct",
    "smsp__inst_executed.sum",
    "smsp__inst_executed.avg.per_cycle_active",
)
SHORT = re.compile(r"^(\d+) (\S+) (\S+) ")


def rows_from_results(path):
    """LESSON:SHAPE/DTYPE of each row short of the page's last target."""
    with open(path, encoding="utf-8") as f:
        page = json.load(f)
    # The bandwidth target as the design reads it (its wording, as scripts/collect-results writes it).
    targets = [t for t in page.get("targets", []) if "of a copy of their own size" in t.get("target", "")]
    if not targets:
        raise SystemExit(f"profile_short_rows: {path} has no bandwidth target (a make bench page's JSON "
                         "from scripts/collect-results has one)")
    rows = []
    for text in targets[0].get("short", []):
        m = SHORT.match(text)
        if not m:
            raise SystemExit(f"profile_short_rows: cannot read the short row {text!r} in {path}")
        rows.append(f"{m.group(1)}:{m.group(2)}/{m.group(3)}")
    return rows


def parse_row(text):
    m = re.fullmatch(r"(\d+):([A-Za-z0-9_x]+)/([a-z0-9]+)", text)
    if not m:
        raise SystemExit(f"profile_short_rows: cannot read row {text!r}: use LESSON:SHAPE/DTYPE, "
                         "e.g. 11:16384x4095/bf16")
    number = int(m.group(1))
    lesson = next((l for l in all_lessons() if l.number == number), None)
    if lesson is None or not lesson.needs_gpu:
        raise SystemExit(f"profile_short_rows: lesson {number} has no GPU reference to profile")
    return lesson, f"{m.group(2)}/{m.group(3)}"


def ncu_run(ncu, cmd, extra):
    return subprocess.run(profile.ncu_command(ncu, cmd, "none", extra), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def profile_row(ncu, lesson, shape):
    """One launch of the reference at `shape`, under ncu; its summary, or an error string."""
    lib = build.library(lesson, "reference")
    if not os.path.exists(lib):
        return None, f"{lib} not built (make {lesson.name}, or scripts/gpu-check)"
    with tempfile.TemporaryDirectory(prefix="short-rows-") as tmp:
        info_path = os.path.join(tmp, "info.json")
        cmd = build.grader_command(lesson, lib, "reference") + [
            "--profile-side", "reference", "--profile-shape", shape, "--profile-info", info_path]
        proc = ncu_run(ncu, cmd, EXTRA_METRICS)
        if proc.returncode != 0 and "metric" in proc.stdout.lower():
            proc = ncu_run(ncu, cmd, ())  # an ncu without one of the extra metrics: the grader's set
        info = {}
        if os.path.exists(info_path):
            with open(info_path, encoding="utf-8") as f:
                info = json.load(f)
    if info.get("error"):
        return None, info["error"]
    kernels = profile.parse_ncu_csv(proc.stdout)
    if proc.returncode != 0 or not kernels:
        tail = [l for l in proc.stdout.splitlines() if "==ERROR==" in l][-3:]
        return None, f"ncu exited {proc.returncode}: {' '.join(tail) or 'no kernel profiled'}"
    s = profile.summarise(kernels)
    main = max(kernels, key=lambda k: profile._number(k.get("gpu__time_duration.sum")) or 0)
    s["theoretical_occupancy_pct"] = profile._number(main.get("sm__maximum_warps_per_active_cycle_pct"))
    s["instructions"] = sum(profile._number(k.get("smsp__inst_executed.sum")) or 0 for k in kernels) or None
    s["ipc_per_scheduler"] = profile._number(main.get("smsp__inst_executed.avg.per_cycle_active"))
    s["bytes"] = info.get("bytes")
    return s, None


def markdown(results):
    lines = ["| row | µs | DRAM MB (÷ lesson's bytes) | DRAM % of peak | regs | block × grid | occupancy th./ach. % | "
             "warp instr. (M) | issue / scheduler-cycle | top stalls (per issue) |",
             "|---|---:|---:|---:|---:|---|---|---:|---:|---|"]
    for r in results:
        if r.get("error"):
            lines.append(f"| {r['row']} | not profiled: {r['error']} |||||||||")
            continue
        s = r["profile"]
        ratio = f" ({s['dram_bytes'] / s['bytes']:.2f}×)" if s.get("bytes") else ""
        stalls = ", ".join(f"{n} {v:.1f}" for n, v in s["stalls"])
        instr = f"{s['instructions'] / 1e6:.1f}" if s.get("instructions") else "?"
        ipc = f"{s['ipc_per_scheduler']:.2f}" if s.get("ipc_per_scheduler") is not None else "?"
        lines.append(f"| {r['row']} | {s['time_us']:.1f} | {s['dram_bytes'] / 1e6:.1f}{ratio} | "
                     f"{s['dram_pct'] or 0:.0f} | {s['registers'] or 0:.0f} | {s['block']} × {s['grid']} | "
                     f"{s['theoretical_occupancy_pct'] or 0:.0f}/{s['occupancy_pct'] or 0:.0f} | {instr} | {ipc} | "
                     f"{stalls} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", help="a make bench page's JSON: profile the rows short of its last target")
    ap.add_argument("--rows", help="comma-separated LESSON:SHAPE/DTYPE rows")
    ap.add_argument("--out", required=True, help="folder for short_rows.json and short_rows.md")
    ap.add_argument("--deadline", type=float, help="seconds after which no further row is started")
    args = ap.parse_args()
    if bool(args.results) == bool(args.rows):
        ap.error("give --results or --rows (one of them)")
    rows = rows_from_results(args.results) if args.results else [r for r in args.rows.split(",") if r]
    parsed = [parse_row(r) for r in rows]  # every row read before the first profile
    ncu = profile.find_ncu()
    if not ncu:
        raise SystemExit("profile_short_rows: Nsight Compute (ncu) was not found on PATH or in the CUDA toolkit")
    os.makedirs(args.out, exist_ok=True)
    started, results = time.time(), []
    for text, (lesson, shape) in zip(rows, parsed):
        if args.deadline and time.time() - started > args.deadline:
            results.append({"row": text, "error": f"not started: --deadline {args.deadline:g} s passed"})
            continue
        summary, error = profile_row(ncu, lesson, shape)
        results.append({"row": text, "profile": summary} if summary else {"row": text, "error": error})
        print(f"profile_short_rows: {text}: {'done' if summary else error}", flush=True)
        with open(os.path.join(args.out, "short_rows.json"), "w", encoding="utf-8") as f:
            json.dump({"gpu": results_names.gpu_name(), "rows": results}, f, indent=1)
    table = markdown(results)
    with open(os.path.join(args.out, "short_rows.md"), "w", encoding="utf-8") as f:
        f.write(table)
    print(table)
    return 1 if any(r.get("error") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
