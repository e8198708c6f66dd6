#!/usr/bin/env python3
"""PyTorch baselines for the RMSNorm workbook's seed shapes.

Measures, on the current CUDA device, what the workbook's reference kernels are compared
against:

  lesson 4  rms_norm            F.rms_norm (eager)
            rms_norm_compiled   torch.compile of the textbook formula (fp32 accumulation)
  lesson 5  add_rms_norm        x + residual, then F.rms_norm (eager, two kernels)
            add_rms_norm_compiled  torch.compile of the fused add + norm (fp32 sum)
  lesson 6  qk_norm_qkv         F.rms_norm over heads of the q slice of a fused qkv tensor
                                (token stride (heads + 2*kv_heads)*head_dim, heads=32,
                                kv_heads=8, head_dim=128)
            qk_norm_qkv_compiled   the same through torch.compile
            qk_norm_contig / qk_norm_contig_compiled   the same heads, contiguous

Timing: each call is captured once into a CUDA graph and the graph is replayed, so the
Python and dispatcher time of a call (tens of microseconds for a compiled function with
dynamic shapes) is not counted: the numbers are GPU time, as the workbook's own timings
are. CUDA events around one replay, a 256 MiB buffer written before every sample so L2
holds none of the inputs, the median of --samples samples (20 or more) after warm-up.
--no-graphs times plain calls instead (a call that cannot be captured falls back too).
GB/s = (each input read once + each output written once) / 1e9 / seconds, the byte count
the workbook's grader uses, whatever the PyTorch path really moves.

torch.compile specialises on the row length (as a model specialises on its hidden size)
and treats the row count as dynamic, so one compilation serves every row count of a
given length. Compilation is the slow part of this script; --no-compile skips it.

Usage:
    python3 bench/torch_compare.py --out results.json
    python3 bench/torch_compare.py --lessons 4 --dtypes fp16 --out l4.json
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

EPS = 1e-6

# DESIGN §6 seed shapes (rows, cols).
SEED_SHAPES = (
    [(32768, c) for c in (256, 512, 1024, 2048, 4096, 6144)]
    + [(16384, 8192), (8192, 16384)]
    + [(4096, c) for c in (8192, 16384, 32768, 65536, 131072)]
    + [(8192, 8192), (16384, 16384)]
    + [(r, 4096) for r in (1, 16, 128)]
    + [(32768, c) for c in (4095, 5120, 7168)]
)
# Lesson 6: tokens of a [tokens, heads, head_dim] q tensor.
QK_TOKENS = (1, 128, 4096, 16384, 32768, 65536)
QK_HEADS, QK_KV_HEADS, QK_HEAD_DIM = 32, 8, 128

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


class Timer:
    """Median event time of a callable, with L2 flushed before every sample."""

    def __init__(self, samples, warmup=3):
        self.samples = samples
        self.warmup = warmup
        self.flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def __call__(self, fn):
        for _ in range(self.warmup):
            fn()
        torch.cuda.synchronize()
        times = []
        for i in range(self.samples):
            self.flush.fill_(i & 0xFF)
            self.start.record()
            fn()
            self.stop.record()
            self.stop.synchronize()
            times.append(self.start.elapsed_time(self.stop) * 1e-3)
        return statistics.median(times)


def as_graph(fn):
    """fn captured into a CUDA graph (after warm-up on a side stream), or fn itself."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(graph):
            fn()
    except Exception as exc:  # noqa: BLE001 - any capture failure means: time it uncaptured
        print(f"  (not captured: {type(exc).__name__}; timing plain calls)", file=sys.stderr)
        torch.cuda.synchronize()
        return fn, False
    return graph.replay, True


def rms_norm_formula(x, w):
    """The textbook RMSNorm with fp32 accumulation, for torch.compile."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()
    return y.to(x.dtype)


def add_rms_norm_formula(x, r, w):
    """Fused residual add + RMSNorm: returns (y, residual_out), sum kept in fp32."""
    s = x.float() + r.float()
    y = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + EPS) * w.float()
    return y.to(x.dtype), s.to(x.dtype)


def add_rms_norm_eager(x, r, w):
    s = x + r
    return F.rms_norm(s, (s.shape[-1],), w, EPS), s


def make_compiled(fn):
    return torch.compile(fn, fullgraph=True)


def fill(t):
    """Random, never all-zero, inputs in [-2, 2]."""
    return t.uniform_(-2.0, 2.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON file to write")
    ap.add_argument("--lessons", default="4,5,6", help="comma-separated subset of 4,5,6")
    ap.add_argument("--dtypes", default="fp16,bf16", help="comma-separated subset of fp16,bf16")
    ap.add_argument("--samples", type=int, default=25, help="timed samples per measurement (>= 20)")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    ap.add_argument("--no-graphs", action="store_true", help="time plain calls, host overhead included")
    ap.add_argument("--max-cols", type=int, default=131072, help="skip seed shapes with more cols")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        print("torch_compare: no CUDA device", file=sys.stderr)
        return 4
    if args.samples < 20:
        ap.error("--samples must be at least 20")
    lessons = {int(v) for v in args.lessons.split(",") if v}
    dtypes = [d for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype {d}")

    # One compilation per row length; the row count stays symbolic.
    torch._dynamo.config.cache_size_limit = 256
    torch._dynamo.config.automatic_dynamic_shapes = False

    timer = Timer(args.samples)
    torch.manual_seed(0)
    rows_out = []
    started = time.time()
    compiled_norm = make_compiled(rms_norm_formula)
    compiled_add = make_compiled(add_rms_norm_formula)

    def record(op, shape, dtype, nbytes, fn):
        graphed = False
        if not args.no_graphs:
            fn, graphed = as_graph(fn)
        seconds = timer(fn)
        gbps = nbytes / seconds / 1e9
        rows_out.append({"op": op, "shape": shape, "dtype": dtype, "gbps": round(gbps, 1),
                         "us": round(seconds * 1e6, 2), "graph": graphed})
        print(f"{op:26s} {shape:>16s} {dtype:5s} {seconds * 1e6:10.2f} us {gbps:8.1f} GB/s", flush=True)

    for dname in dtypes:
        dt = DTYPES[dname]
        es = torch.finfo(dt).bits // 8
        for rows, cols in SEED_SHAPES:
            if cols > args.max_cols or not lessons & {4, 5}:
                continue
            shape = f"{rows}x{cols}"
            x = fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
            w = fill(torch.empty(cols, dtype=dt, device="cuda"))
            torch._dynamo.mark_dynamic(x, 0)
            if 4 in lessons:
                nbytes = (2 * rows * cols + cols) * es
                record("rms_norm", shape, dname, nbytes, lambda: F.rms_norm(x, (cols,), w, EPS))
                if not args.no_compile:
                    record("rms_norm_compiled", shape, dname, nbytes, lambda: compiled_norm(x, w))
            if 5 in lessons:
                r = fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
                torch._dynamo.mark_dynamic(r, 0)
                nbytes = (4 * rows * cols + cols) * es
                record("add_rms_norm", shape, dname, nbytes, lambda: add_rms_norm_eager(x, r, w))
                if not args.no_compile:
                    record("add_rms_norm_compiled", shape, dname, nbytes, lambda: compiled_add(x, r, w))
                del r
            del x, w
        if 6 in lessons:
            d = QK_HEAD_DIM
            w = fill(torch.empty(d, dtype=dt, device="cuda"))
            for tokens in QK_TOKENS:
                shape = f"{tokens}x{QK_HEADS}x{d}"
                qkv = fill(torch.empty(tokens, (QK_HEADS + 2 * QK_KV_HEADS) * d, dtype=dt, device="cuda"))
                q = qkv[:, : QK_HEADS * d].view(tokens, QK_HEADS, d)  # token stride (H + 2*KV)*D
                qc = q.contiguous()
                for t in (q, qc, qkv):
                    torch._dynamo.mark_dynamic(t, 0)
                nbytes = (2 * tokens * QK_HEADS * d + d) * es
                record("qk_norm_qkv", shape, dname, nbytes, lambda: F.rms_norm(q, (d,), w, EPS))
                record("qk_norm_contig", shape, dname, nbytes, lambda: F.rms_norm(qc, (d,), w, EPS))
                if not args.no_compile:
                    record("qk_norm_qkv_compiled", shape, dname, nbytes, lambda: compiled_norm(q, w))
                    record("qk_norm_contig_compiled", shape, dname, nbytes, lambda: compiled_norm(qc, w))
                del qkv, q, qc

    result = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "samples": args.samples,
        "graphs": not args.no_graphs,
        "seconds": round(time.time() - started, 1),
        "rows": rows_out,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {len(rows_out)} rows to {args.out} in {result['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
