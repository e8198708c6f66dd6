#!/usr/bin/env python3
"""Nsight Compute's view of a reference kernel next to torch.compile's, on the same rows.

Where bench/torch_compare.py says a reference is slower than torch.compile on a shape, this
says why: both kernels profiled by `ncu` on the same tensors, caches flushed before each, with
the time, DRAM and L2 traffic, occupancy (theoretical and achieved), registers, the launch
shape, the instructions executed and the top warp-stall reasons, side by side.

    python3 bench/ncu_torch.py --workbook build-gpu/lib --out DIR \
        --rows 4:32768x256:fp16,5:16384x8192:bf16,6:128:contig:bf16

A row is LESSON:ROWSxCOLS:DTYPE for lessons 4 and 5 (lesson 5 is the fused add, out of place),
6:TOKENS:LAYOUT:DTYPE for lesson 6 (q of [tokens, 32, 128], LAYOUT qkv or contig, as in
torch_compare), and 9:OPTION:ROWSxCOLS:DTYPE for lesson 9 (OPTION one of bench/production_norm.py's
VARIANTS: plain, bias_rstd, prenorm, weight_f32, layer_bias, layer_bias_rstd; pre-norm in place,
as torch_compare times it). The script runs itself once under ncu (`--profile-from-start off`): each
side's call sits alone between cudaProfilerStart and cudaProfilerStop, after warm-up and
compilation, so only the two kernels are profiled. Writes DIR/ncu.csv (ncu's raw page),
DIR/ncu_torch.json and DIR/ncu_torch.md; with --publish docs/results the JSON also goes to its
stable name, docs/results/torch/<gpu>-ncu-torch.json (docs/results/index.md), or
<gpu>-lesson9-ncu-torch.json for lesson 9's rows, and the table is the one of the page of that name.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "grader", "cli"))
from workbook import profile  # noqa: E402  (ncu's CSV reader and the metric list the grader uses)
import results_names  # noqa: E402  (the stable names under docs/results/)

EXTRA_METRICS = (
    "smsp__inst_executed.sum",
    "lts__t_sector_hit_rate.pct",
    "lts__t_bytes.sum",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__cycles_active.max",
    "sm__cycles_active.avg",
)
SIDES = ("reference", "compile")
# bench/production_norm.py's VARIANTS, named here so that a row is checked without importing torch.
LESSON9_OPTIONS = ("plain", "bias_rstd", "prenorm", "weight_f32", "layer_bias", "layer_bias_rstd")


def parse_rows(text):
    rows = []
    for item in (t for t in text.split(",") if t):
        parts = item.split(":")
        lesson = int(parts[0])
        if lesson in (4, 5) and len(parts) == 3:
            r, c = (int(v) for v in parts[1].split("x"))
            rows.append({"lesson": lesson, "rows": r, "cols": c, "dtype": parts[2], "label": item})
        elif lesson == 6 and len(parts) == 4 and parts[2] in ("qkv", "contig"):
            rows.append({"lesson": 6, "tokens": int(parts[1]), "layout": parts[2], "dtype": parts[3], "label": item})
        elif lesson == 9 and len(parts) == 4 and parts[1] in LESSON9_OPTIONS:
            r, c = (int(v) for v in parts[2].split("x"))
            rows.append({"lesson": 9, "option": parts[1], "rows": r, "cols": c, "dtype": parts[3], "label": item})
        else:
            raise SystemExit(f"ncu_torch: cannot read row {item!r}: use 4:RxC:DTYPE, 5:RxC:DTYPE, "
                             f"6:TOKENS:qkv|contig:DTYPE or 9:OPTION:RxC:DTYPE (OPTION one of "
                             f"{', '.join(LESSON9_OPTIONS)})")
    return rows


def inner(args):
    """Under ncu: build each row's call for both sides, warm them up, profile one call of each."""
    import torch
    import torch.nn.functional as F
    import torch_compare as tc

    for name in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 1024)
    torch._dynamo.config.automatic_dynamic_shapes = False
    compiled_norm = torch.compile(tc.rms_norm_formula, fullgraph=True)
    compiled_add = torch.compile(tc.add_rms_norm_formula, fullgraph=True)
    compiled_heads = torch.compile(tc.rms_norm_formula, fullgraph=True)
    refs = {}
    torch.manual_seed(0)
    for row in parse_rows(args.rows):
        n, dt = row["lesson"], tc.DTYPES[row["dtype"]]
        ref = None if n == 9 else refs.setdefault(n, tc.Reference(args.workbook, n))
        if n == 9:
            sides = lesson9_sides(args, refs, row, dt)
        elif n in (4, 5):
            rows, cols = row["rows"], row["cols"]
            x = tc.fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
            w = tc.fill(torch.empty(cols, dtype=dt, device="cuda"))
            y = torch.empty_like(x)
            torch._dynamo.mark_dynamic(x, 0)
            if n == 4:
                sides = (lambda: ref(dt, x.data_ptr(), cols, w.data_ptr(), y.data_ptr(), cols, rows, cols),
                         lambda: compiled_norm(x, w))
            else:
                r = tc.fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
                rout = torch.empty_like(r)
                torch._dynamo.mark_dynamic(r, 0)
                sides = (lambda: ref(dt, x.data_ptr(), r.data_ptr(), w.data_ptr(), y.data_ptr(), rout.data_ptr(),
                                     rows, cols),
                         lambda: compiled_add(x, r, w))
        else:
            tokens, d = row["tokens"], tc.QK_HEAD_DIM
            w = tc.fill(torch.empty(d, dtype=dt, device="cuda"))
            qkv = tc.fill(torch.empty(tokens, (tc.QK_HEADS + 2 * tc.QK_KV_HEADS) * d, dtype=dt, device="cuda"))
            src = qkv[:, : tc.QK_HEADS * d].view(tokens, tc.QK_HEADS, d)
            if row["layout"] == "contig":
                src = src.contiguous()
            out = torch.empty(tokens, tc.QK_HEADS, d, dtype=dt, device="cuda")
            torch._dynamo.mark_dynamic(src, 0)
            sides = (lambda: ref(dt, src.data_ptr(), src.stride(0), src.stride(1), w.data_ptr(), out.data_ptr(),
                                 out.stride(0), out.stride(1), tokens, tc.QK_HEADS, d),
                     lambda: compiled_heads(src, w))
        for fn in sides:  # compile, autotune and warm up outside the profiled windows
            for _ in range(3):
                fn()
        torch.cuda.synchronize()
        for side, fn in zip(SIDES, sides):
            torch.cuda.profiler.start()
            fn()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            print(f"ncu_torch: profiled {row['label']} {side}", flush=True)
    return 0


def lesson9_sides(args, refs, row, dt):
    """Lesson 9's reference and torch.compile on one option's tensors, as torch_compare times them."""
    import torch
    import torch_compare as tc
    import production_norm as l9

    if 9 not in refs:
        refs[9] = l9.Reference(args.workbook)
        refs["compiled9"] = {}
    layer, bias, rstd, residual, w32, _, formula = l9.VARIANTS[row["option"]]
    compiled = refs["compiled9"].setdefault(row["option"], torch.compile(formula, fullgraph=True))
    rows, cols = row["rows"], row["cols"]
    x = tc.fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
    w = tc.fill(torch.empty(cols, dtype=torch.float32 if w32 else dt, device="cuda"))
    b = tc.fill(torch.empty(cols, dtype=dt, device="cuda")) if bias else None
    r = tc.fill(torch.empty(rows, cols, dtype=dt, device="cuda")) if residual else None
    rs = torch.empty(rows, dtype=torch.float32, device="cuda") if rstd else None
    torch._dynamo.mark_dynamic(x, 0)
    if r is not None:
        torch._dynamo.mark_dynamic(r, 0)
    torch_args = [t for t in (x, r, w, b) if t is not None] + [tc.EPS]
    # In place for the residual form (y over x, the sum over the residual), out of place otherwise.
    y = x if residual else torch.empty_like(x)
    launch = refs[9].bind(tc.EPS, layer, x, w, y, residual=r, bias=b, residual_out=r, rstd=rs)
    return launch, lambda: compiled(*torch_args)


def is_compiled(kernel):
    return kernel.get("Kernel Name", "").startswith("triton")


def windows(kernels, count):
    """ncu's kernels grouped into the profiled calls: the calls alternate reference, compile, and
    inductor's kernels are the ones named triton_*, so each run of one kind is one call."""
    groups = []
    for k in kernels:
        if groups and is_compiled(groups[-1][-1]) == is_compiled(k):
            groups[-1].append(k)
        else:
            groups.append([k])
    kinds = [is_compiled(g[0]) for g in groups]
    if len(groups) != count or kinds != [i % 2 == 1 for i in range(count)]:
        names = [k.get("Kernel Name", "?")[:60] for k in kernels]
        raise SystemExit(f"ncu_torch: expected {count} profiled calls alternating reference/triton, got "
                         f"{len(groups)}: {names}")
    return groups


def side_numbers(kernels):
    s = profile.summarise(kernels)
    main = max(kernels, key=lambda k: profile._number(k.get("gpu__time_duration.sum")) or 0)

    def total(name):
        return sum(profile._number(k.get(name)) or 0 for k in kernels)

    s.update({
        "instructions": total("smsp__inst_executed.sum"),
        "l2_hit_pct": profile._number(main.get("lts__t_sector_hit_rate.pct")),
        "l2_bytes": total("lts__t_bytes.sum"),
        "theoretical_occupancy_pct": profile._number(main.get("sm__maximum_warps_per_active_cycle_pct")),
        "sm_cycles_max": profile._number(main.get("sm__cycles_active.max")),
        "sm_cycles_avg": profile._number(main.get("sm__cycles_active.avg")),
    })
    return s


def markdown(results):
    lines = ["| row | side | kernels | µs | DRAM MB | DRAM % | L2 MB | L2 hit % | regs | block × grid | "
             "occupancy th./ach. % | warp instr. (M) | SM cycles max/avg | top stalls |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---|---|"]
    for r in results:
        for side in SIDES:
            s = r[side]
            stalls = ", ".join(f"{name} {v:.1f}" for name, v in s["stalls"])
            cyc = (f"{s['sm_cycles_max'] / 1e3:.1f}K/{s['sm_cycles_avg'] / 1e3:.1f}K"
                   if s["sm_cycles_max"] and s["sm_cycles_avg"] else "?")
            lines.append(
                f"| {r['row']} | {side} | {s['kernels']} | {s['time_us']:.1f} | {s['dram_bytes'] / 1e6:.1f} | "
                f"{s['dram_pct'] or 0:.0f} | {s['l2_bytes'] / 1e6:.1f} | {s['l2_hit_pct'] or 0:.0f} | "
                f"{s['registers'] or 0:.0f} | {s['block']} × {s['grid']} | "
                f"{s['theoretical_occupancy_pct'] or 0:.0f}/{s['occupancy_pct'] or 0:.0f} | "
                f"{s['instructions'] / 1e6:.2f} | {cyc} | {stalls} |")
    return "\n".join(lines) + "\n"


def publish_kind(rows):
    """The page a profile belongs to: lesson 9's options have their own, beside its peers' page."""
    nine = [r["lesson"] == 9 for r in rows]
    if all(nine):
        return "lesson9-ncu-torch"
    if not any(nine):
        return "ncu-torch"
    raise SystemExit("ncu_torch: --publish takes lesson 9's rows or the other lessons' rows, not both: "
                     "profile them in two runs")


def outer(args):
    if args.publish:
        publish_kind(parse_rows(args.rows))  # a mixed list fails here, before ncu runs
    ncu = profile.find_ncu()
    if not ncu:
        raise SystemExit("ncu_torch: Nsight Compute (ncu) was not found on PATH or in the CUDA toolkit")
    rows = parse_rows(args.rows)
    os.makedirs(args.out, exist_ok=True)
    cmd = [ncu, "--profile-from-start", "off", "--csv", "--page", "raw", "--print-units", "base",
           "--clock-control", "none", "--cache-control", "all",
           "--metrics", ",".join(profile.METRICS + EXTRA_METRICS)]
    for section in profile.SECTIONS:
        cmd += ["--section", section]
    cmd += [sys.executable, os.path.abspath(__file__), "--inner", "--workbook", args.workbook, "--rows", args.rows,
            "--out", args.out]
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    with open(os.path.join(args.out, "ncu.csv"), "w") as f:
        f.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        raise SystemExit(f"ncu_torch: ncu exited {proc.returncode}")
    groups = windows(profile.parse_ncu_csv(proc.stdout), 2 * len(rows))
    results = []
    for i, row in enumerate(rows):
        results.append({"row": row["label"], "reference": side_numbers(groups[2 * i]),
                        "compile": side_numbers(groups[2 * i + 1])})
    with open(os.path.join(args.out, "ncu_torch.json"), "w") as f:
        json.dump(results, f, indent=1)
    if args.publish:
        path = results_names.raw(args.publish, results_names.gpu_name(), publish_kind(rows))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(results, f, indent=1)
        print(f"ncu_torch: wrote {path}")
    table = markdown(results)
    with open(os.path.join(args.out, "ncu_torch.md"), "w") as f:
        f.write(table)
    print(table)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workbook", default="build-gpu/lib", help="folder holding lessonN_reference.so")
    ap.add_argument("--rows", required=True, help="comma-separated rows (see above)")
    ap.add_argument("--out", required=True, help="folder for ncu.csv, ncu_torch.json and ncu_torch.md")
    ap.add_argument("--publish", metavar="DIR", help="also write the JSON under its stable name in DIR/torch/ "
                    "(DIR: docs/results)")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    parse_rows(args.rows)
    return inner(args) if args.inner else outer(args)


if __name__ == "__main__":
    sys.exit(main())
