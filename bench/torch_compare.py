#!/usr/bin/env python3
"""The workbook's reference kernels against PyTorch, same tensors, same timer, same run.

For every shape of the seed table (DESIGN §6), on the current CUDA device, this times:

  reference   the workbook's reference solution, loaded from its built library
              (lessonN_reference.so) and called on the PyTorch tensors' memory
  eager       PyTorch eager: F.rms_norm (lesson 5: x + residual, then F.rms_norm)
  compile     torch.compile of the textbook formula with fp32 accumulation
              (lesson 5: the fused add + norm, the sum kept in fp32)
  copy        a device-to-device copy moving the same number of bytes: the roofline
              for a kernel of that size, launch and last wave included
  compile-dynamic, liger
              optional peers (bench/peers.py), lessons 4, 5 and 10: the same formula under
              torch.compile(dynamic=True), and Liger-Kernel's Triton kernels; a column is left
              out, with a note in the output and the JSON, where its peer is not there

Decode batches (1, 16 and 128 rows of 4096 and 7168 columns, lessons 4 and 5) are latency,
not bandwidth: their rows carry the microseconds from launch to completion of one call
(one graph replay), which bench/two_runs.py tabulates as such.

Lessons and their shapes:
  4  rows x cols, every seed shape up to 65536 cols
  5  the same shapes, fused add-residual (out of place)
  6  q of a fused qkv tensor, [tokens, 32 heads, 128] with token stride (32 + 2*8)*128,
     and the same heads contiguous
  8  the long rows: 65536, 131072 and 262144 cols
  9  the production norm, each option the gate times (bench/production_norm.py): plain RMSNorm,
     bias + rstd, residual in/out (in place), fp32 weight, LayerNorm + bias (F.layer_norm),
     LayerNorm + bias + rstd (native_layer_norm), on the 2-D seed shapes up to 65536 cols
  10 the backward pass (bench/rmsnorm_backward.py): dx and dweight from dy, x, weight and the
     saved rstd, against the textbook formula eager and under torch.compile, on the issue's
     shapes (32768 x 1024 to 4096 x 65536, and 128 x 4096)
  11 RMSNorm fused with per-row FP8 (e4m3) quantisation (bench/fp8_quant.py): the reference
     against the textbook formula (norm in fp32, amax, scale, q clamped to ±448 and cast to
     float8_e4m3fn), eager and compiled; the issue's six shapes (--fp8-shapes issue) or every
     2-D seed shape up to 65536 cols (seed, the default)

Timing: each call is captured once into a CUDA graph and the graph is replayed, so host
time (Python, the dispatcher, a compiled function's guards) is not counted: these are GPU
times, as the grader's are. CUDA events around one replay, the L2 lines held under an evict-last
priority reset to normal (a write alone leaves them) and a 256 MiB buffer written before
every sample, so L2 holds none of the inputs, the median of --samples samples after warm-up.
Shapes moving under 16 MiB (decode batches, a few tokens) take --short-samples instead, spread
over --placements passes: a call of about 5 us is a few hundred steps of the event timer, and
its time depends on where its tensors sit (the same kernels, timed in two processes whose
allocations differed, read up to 5% apart). Each pass first allocates buffers of a size no
other pass uses, so its tensors land elsewhere; a short shape's samples from every pass are
pooled into one median.
A shape's implementations are timed interleaved (sample i of each before sample i + 1 of
any), and the reference is timed twice: the gap between its two medians is the row's noise.
GB/s = (each input read once + each output written once) / 1e9 / seconds: the grader's
byte count, whatever a PyTorch path really moves.

Before timing, the reference's output is compared with F.rms_norm's on the same input, so
a table row can never come from a kernel that did not do the work.

torch.compile specialises on the row length (as a model does on its hidden size) and
keeps the row count dynamic. Compilation is the slow part; --no-compile skips it.

Usage (after a build; LIBDIR holds lessonN_reference.so):
    python3 bench/torch_compare.py --workbook build-gpu/lib --out torch.json
    python3 bench/torch_compare.py --workbook build/lib --lessons 4 --dtypes fp16 --out l4.json
Then: scripts/collect-results DIR --torch torch.json adds the side-by-side table.

To refresh the published rows (docs/results/index.md), write them under their stable names instead:
    python3 bench/torch_compare.py --lessons 4,5,6,8 --publish docs/results --run 1
    python3 bench/torch_compare.py --lessons 9 --publish docs/results --run 1
    python3 bench/torch_compare.py --lessons 10,11 --fp8-shapes issue --publish docs/results --run 1
    python3 bench/torch_compare.py --lessons 4,5,10 --max-rows 128 --kind decode --publish docs/results --run 1
each again with --run 2 straight after: every peers' page is two runs in a row. They write
docs/results/torch/<gpu>-<kind>-run1.json and -run2.json (kinds: torch, lesson9-torch, lessons10-11,
decode); bench/two_runs.py --results docs/results [--kind KIND] makes a page's tables from its pair.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

import fp8_quant as l11
import peers
import production_norm as l9
import results_names
import rmsnorm_backward as l10

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
# Decode batches beside the seed table's 4096-column ones (lessons 4 and 5): a model of 7168.
DECODE_SHAPES = [(r, 7168) for r in (1, 16, 128)]
LESSON4_MAX_COLS = 65536
# Shapes moving fewer bytes than this are latency-bound launches of a few microseconds (the
# largest decode batch, lesson 5's 128 x 7168, moves 7 MiB; the smallest bandwidth shape 32).
SHORT_BYTES = 16 << 20
LONG_ROWS = [(4096, 65536), (4096, 131072), (1024, 262144), (2048, 262144)]
# Lesson 6: tokens of a [tokens, heads, head_dim] q tensor.
QK_TOKENS = (1, 128, 4096, 16384, 32768, 65536)
QK_HEADS, QK_KV_HEADS, QK_HEAD_DIM = 32, 8, 128

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
ENTRY = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}

i64, f32, ptr = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
# Argument lists of the lesson entry points (grader/include/workbook/lesson_api.h).
SIGNATURES = {
    4: [ptr, i64, ptr, ptr, i64, i64, i64, f32, ptr],
    8: [ptr, i64, ptr, ptr, i64, i64, i64, f32, ptr],
    5: [ptr, ptr, ptr, ptr, ptr, i64, i64, f32, ptr],
    6: [ptr, i64, i64, ptr, ptr, i64, i64, i64, i64, i64, f32, ptr],
}


class Table(ctypes.Structure):
    """A typed lesson's entry-point table: a version, then the f32, f16 and bf16 entries."""
    _fields_ = [("version", ctypes.c_int), ("f32", ptr), ("f16", ptr), ("bf16", ptr)]


class Reference:
    """One lesson's reference solution, called on torch tensors on torch's current stream."""

    def __init__(self, libdir, lesson):
        path = os.path.join(libdir, f"lesson{lesson}_reference.so")
        if not os.path.exists(path):
            raise SystemExit(f"torch_compare: {path} not found; build first (make, or scripts/gpu-check)")
        self.lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        api = getattr(self.lib, f"workbook_lesson{lesson}_api")
        api.restype = ctypes.POINTER(Table)
        self.table = api().contents
        self.proto = ctypes.CFUNCTYPE(ctypes.c_int, *SIGNATURES[lesson])
        self.lesson = lesson

    def fn(self, dtype):
        return self.proto(getattr(self.table, ENTRY[dtype]))

    def __call__(self, dtype, *args):
        stream = torch.cuda.current_stream().cuda_stream
        code = self.fn(dtype)(*args, EPS, stream)
        if code != 0:
            raise RuntimeError(f"lesson {self.lesson} reference returned cudaError {code}")


def persisting_l2_reset():
    """cudaCtxResetPersistingL2Cache from the CUDA runtime, or None where no runtime library loads.

    A write of 256 MiB does not evict the lines that a kernel loaded under an evict-last
    priority (inductor's first read of a row, lesson 5's): measured on an H100, the kernel
    timed after torch.compile's read part of x from L2 and was 0.5-1.5% faster than the
    same kernel elsewhere in the order. Reset to normal before the write, they are evicted."""
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
        try:
            fn = ctypes.CDLL(name).cudaCtxResetPersistingL2Cache
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        return fn
    return None


class Timer:
    """Interleaved event times of several callables, L2 flushed before every sample (Bench takes
    the medians).

    Sample i of every callable is taken before sample i + 1 of any, so a drift of the
    GPU's clocks or memory state during a shape's measurement falls on all of them alike
    and their ratios stay honest. The flush resets the lines held under an evict-last
    priority to normal, then writes 256 MiB, so no callable inherits another's L2."""

    def __init__(self, samples, warmup=3):
        self.samples = samples
        self.warmup = warmup
        self.flush = torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")
        self.reset = persisting_l2_reset()
        if self.reset is None:
            print("torch_compare: no CUDA runtime library to reset evict-last L2 lines; an implementation "
                  "timed after one that loads under evict-last may read part of its input from L2",
                  file=sys.stderr)
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def samples_of(self, fns, samples=None):
        """Every timed sample of each callable, in seconds."""
        samples = samples or self.samples
        for fn in fns:
            for _ in range(self.warmup):
                fn()
        torch.cuda.synchronize()
        times = [[] for _ in fns]
        for i in range(samples):
            for k, fn in enumerate(fns):
                # The previous sample has finished: reset, then write, so the write evicts them.
                if self.reset is not None and self.reset() != 0:
                    raise RuntimeError("cudaCtxResetPersistingL2Cache failed")
                self.flush.fill_(i & 0xFF)
                self.start.record()
                fn()
                self.stop.record()
                self.stop.synchronize()
                times[k].append(self.start.elapsed_time(self.stop) * 1e-3)
        return times


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


def fill(t):
    """Random, never all-zero, inputs in [-2, 2]."""
    return t.uniform_(-2.0, 2.0)


def check_close(name, got, want):
    """The reference did the work: its output agrees with PyTorch's to a few ulp of T."""
    got, want = got.float(), want.float()
    bad = (got - want).abs() > 1e-2 * (1 + want.abs())
    if bad.any():
        raise SystemExit(f"torch_compare: {name}: the reference disagrees with PyTorch at "
                         f"{int(bad.sum())} elements")


# Lesson 11: the shapes issue 16 names (its table of torch.compile measurements).
FP8_ISSUE_SHAPES = [(32768, 1024), (32768, 4096), (16384, 8192), (4096, 32768), (4096, 65536), (128, 4096)]


def lesson11_shape(bench, ref, compiled, rows, cols, dt, dname, no_compile):
    """Norm + per-row FP8 at one shape: the reference, eager PyTorch and torch.compile of the formula."""
    es = torch.finfo(dt).bits // 8
    x = fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
    w = fill(torch.empty(cols, dtype=dt, device="cuda"))
    q = torch.empty(rows, cols, dtype=torch.float8_e4m3fn, device="cuda")
    scale = torch.empty(rows, dtype=torch.float32, device="cuda")
    torch._dynamo.mark_dynamic(x, 0)
    launch = ref.bind(x, w, q, scale, EPS)
    launch()
    l11.check(f"lesson 11 {rows}x{cols} {dname}", q, scale, x, w, EPS)
    impls = [("reference", launch), ("eager", lambda: l11.formula(x, w, EPS))]
    if not no_compile:
        impls.append(("compile", lambda: compiled(x, w, EPS)))
    bench.shape(11, f"{rows}x{cols}", dname, l11.bytes_moved(rows, cols, es), impls)
    del x, w, q, scale


def lesson9_shape(bench, ref, compiled, variant, rows, cols, dt, dname, no_compile):
    """One lesson 9 option at one shape: the reference, eager PyTorch and torch.compile."""
    layer, bias, rstd, residual, w32, eager, _ = l9.VARIANTS[variant]
    es = torch.finfo(dt).bits // 8
    x = fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
    w = fill(torch.empty(cols, dtype=torch.float32 if w32 else dt, device="cuda"))
    b = fill(torch.empty(cols, dtype=dt, device="cuda")) if bias else None
    r = fill(torch.empty(rows, cols, dtype=dt, device="cuda")) if residual else None
    rs = torch.empty(rows, dtype=torch.float32, device="cuda") if rstd else None
    torch._dynamo.mark_dynamic(x, 0)
    if r is not None:
        torch._dynamo.mark_dynamic(r, 0)
    torch_args = [t for t in (x, r, w, b) if t is not None] + [EPS]
    shape = f"{variant}_{rows}x{cols}"
    # Checked out of place first; timed in place for the residual form, as models call it.
    y = torch.empty_like(x)
    rout = torch.empty_like(r) if residual else None
    launch = ref.bind(EPS, layer, x, w, y, residual=r, bias=b, residual_out=rout, rstd=rs)
    launch()
    want = eager(*torch_args)
    check_close(f"lesson 9 {shape} {dname} y", y, want[0])
    if rstd:
        check_close(f"lesson 9 {shape} {dname} rstd", rs, want[1])
    if residual:
        check_close(f"lesson 9 {shape} {dname} residual_out", rout, want[1])
        launch = ref.bind(EPS, layer, x, w, x, residual=r, bias=b, residual_out=r, rstd=rs)
    del want
    impls = [("reference", launch), ("eager", lambda: eager(*torch_args))]
    if not no_compile:
        impls.append(("compile", lambda: compiled(*torch_args)))
    bench.shape(9, shape, dname, l9.bytes_moved(rows, cols, es, layer, bias, rstd, residual, w32), impls)
    ref.close()
    del x, w, b, r, rs, y, rout


def lesson10_shape(bench, ref, compiled, rows, cols, dt, dname, no_compile):
    """The backward at one shape: the reference, the formula eager and under torch.compile."""
    es = torch.finfo(dt).bits // 8
    x = fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
    dy = fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
    w = fill(torch.empty(cols, dtype=dt, device="cuda"))
    rstd = l10.saved_rstd(x, EPS)
    dx = torch.empty_like(x)
    dweight = torch.empty(cols, dtype=torch.float32, device="cuda")
    for t in (x, dy, rstd):
        torch._dynamo.mark_dynamic(t, 0)
    shape = f"{rows}x{cols}"
    launch = ref.bind(dy, x, w, rstd, dx, dweight)
    launch()
    want_dx, want_dw = l10.backward_formula(dy, x, w, rstd)
    check_close(f"lesson 10 {shape} {dname} dx", dx, want_dx)
    check_close(f"lesson 10 {shape} {dname} dweight", dweight, want_dw)
    del want_dx, want_dw
    impls = [("reference", launch), ("eager", lambda: l10.backward_formula(dy, x, w, rstd))]
    if not no_compile:
        impls.append(("compile", lambda: compiled[0](dy, x, w, rstd)))
        impls.append(("compile-dynamic", lambda: compiled[1](dy, x, w, rstd)))
    dy_liger = None
    if peers.liger():
        # Liger writes dx over dy, as its autograd function does by default: its own copy of dy.
        dy_liger = dy.clone()
        impls.append(("liger", lambda: peers.liger_backward(dy_liger, x, w, rstd)))
    bench.shape(10, shape, dname, l10.bytes_moved(rows, cols, es), impls)
    del x, dy, w, rstd, dx, dweight, launch, dy_liger


class Bench:
    """One shape at a time: every implementation, a second reference run and a copy of
    the same bytes, timed interleaved; the two reference runs give the noise band.

    Shapes moving under SHORT_BYTES are measured again in each placement pass (main places
    the pass's tensors at other addresses) and their samples pooled; finish() turns every
    shape's samples into its rows."""

    def __init__(self, args):
        self.args = args
        self.timer = Timer(args.samples)
        self.pass_index = 0
        self.measured = {}  # (lesson, shape, dtype) -> bytes, samples and graph flags per implementation
        self.rows = []

    def samples_per_pass(self, nbytes):
        if nbytes >= SHORT_BYTES:
            return self.args.samples
        short = max(self.args.samples, self.args.short_samples)
        return -(-short // self.args.placements)

    def shape(self, lesson, shape, dtype, nbytes, impls):
        """impls: (name, callable) pairs, the reference first."""
        if self.pass_index > 0 and nbytes >= SHORT_BYTES:
            return
        half = nbytes // 2
        src = torch.empty(half, dtype=torch.uint8, device="cuda").fill_(1)
        dst = torch.empty_like(src)
        impls = list(impls) + [("reference-again", impls[0][1]), ("copy", lambda: dst.copy_(src))]
        fns, graphed = [], []
        for _, fn in impls:
            g, ok = (fn, False) if self.args.no_graphs else as_graph(fn)
            fns.append(g)
            graphed.append(ok)
        times = self.timer.samples_of(fns, self.samples_per_pass(nbytes))
        entry = self.measured.setdefault((lesson, shape, dtype), {"nbytes": nbytes, "times": {}, "graph": {}})
        where = f"  (placement {self.pass_index + 1})" if nbytes < SHORT_BYTES else ""
        for (name, _), t, ok in zip(impls, times, graphed):
            entry["times"].setdefault(name, []).extend(t)
            entry["graph"][name] = entry["graph"].get(name, True) and ok
            if name != "reference-again":
                sec = statistics.median(t)
                moved = 2 * half if name == "copy" else nbytes
                print(f"lesson {lesson} {name:9s} {shape:>20s} {dtype:5s} {sec * 1e6:10.2f} us "
                      f"{moved / sec / 1e9:8.1f} GB/s{where}", flush=True)
        del src, dst
        torch.cuda.empty_cache()

    def finish(self):
        """Every measured shape's rows: medians over all its samples, the noise band from the
        reference's two pooled medians."""
        for (lesson, shape, dtype), entry in self.measured.items():
            nbytes, times = entry["nbytes"], entry["times"]
            seconds = {name: statistics.median(t) for name, t in times.items()}
            ref, again = seconds["reference"], seconds["reference-again"]
            noise = abs(ref - again) / min(ref, again)
            placements = self.args.placements if nbytes < SHORT_BYTES else 1
            for name, sec in seconds.items():
                if name == "reference-again":
                    continue
                moved = 2 * (nbytes // 2) if name == "copy" else nbytes
                self.rows.append({"lesson": lesson, "impl": name, "shape": shape, "dtype": dtype,
                                  "gbps": round(moved / sec / 1e9, 1), "us": round(sec * 1e6, 2),
                                  "graph": entry["graph"][name], "noise": round(noise, 4),
                                  "samples": len(times[name]), "placements": placements})


def placement_pads(index):
    """Buffers allocated before placement pass `index` (none before the first), so the pass's
    tensors land at other addresses: one from the caching allocator's small-block pool and one
    from its large one, each of a size no other pass uses."""
    if index == 0:
        return []
    return [torch.empty(index * (37 * 1024 + 512), dtype=torch.uint8, device="cuda"),
            torch.empty(index * ((2 << 20) + 37 * 1024), dtype=torch.uint8, device="cuda")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="JSON file to write")
    ap.add_argument("--publish", metavar="DIR",
                    help="also write the rows under their stable name in DIR/torch/ (DIR: docs/results)")
    ap.add_argument("--kind", choices=("torch", "lesson9-torch", "lessons10-11", "decode"),
                    help="the results page the published rows belong to (default: from --lessons)")
    ap.add_argument("--run", type=int, choices=(1, 2),
                    help="with --publish: which of the page's two runs in a row this is (every peers' page has two)")
    ap.add_argument("--workbook", default="build-gpu/lib", help="folder holding lessonN_reference.so")
    ap.add_argument("--lessons", default="4,5,6,8,9,10,11", help="comma-separated subset of 4,5,6,8,9,10,11")
    ap.add_argument("--fp8-shapes", choices=("issue", "seed"), default="seed",
                    help="lesson 11's shapes: the six of issue 16, or every 2-D seed shape up to 65536 cols")
    ap.add_argument("--variants", default=",".join(l9.VARIANTS),
                    help="lesson 9's options to time, comma-separated subset of " + ",".join(l9.VARIANTS))
    ap.add_argument("--lesson9-cols", default="",
                    help="lesson 9 on the seed shapes of these row lengths only (comma-separated; default: all)")
    ap.add_argument("--dtypes", default="fp16,bf16", help="comma-separated subset of fp16,bf16")
    ap.add_argument("--samples", type=int, default=25, help="timed samples per measurement (>= 20)")
    ap.add_argument("--short-samples", type=int, default=600,
                    help=f"timed samples per measurement for shapes moving under {SHORT_BYTES >> 20} MiB "
                         "(latency-bound launches of a few microseconds)")
    ap.add_argument("--placements", type=int, default=6,
                    help="shapes moving under 16 MiB: measurement passes, each with the tensors at other "
                         "addresses; --short-samples is split over them and their samples pooled")
    ap.add_argument("--no-compile", action="store_true", help="skip the torch.compile baselines")
    ap.add_argument("--no-graphs", action="store_true", help="time plain calls, host overhead included")
    ap.add_argument("--max-rows", type=int, default=0,
                    help="only shapes of at most this many rows (tokens for lesson 6): 128 times the decode batches")
    args = ap.parse_args()

    if not torch.cuda.is_available():
        print("torch_compare: no CUDA device", file=sys.stderr)
        return 4
    if args.samples < 20:
        ap.error("--samples must be at least 20")
    if args.placements < 1:
        ap.error("--placements must be at least 1")
    lessons = {int(v) for v in args.lessons.split(",") if v}
    if not lessons <= {4, 5, 6, 8, 9, 10, 11}:
        ap.error("--lessons takes a subset of 4,5,6,8,9,10,11")
    if not args.out and not args.publish:
        ap.error("name where the rows go: --out FILE, --publish DIR, or both")
    kind = args.kind or results_names.torch_kind(lessons)
    if args.publish and kind is None:
        ap.error("these lessons belong to more than one results page (4,5,6,8 | 9 | 10,11): "
                 "publish them in separate runs, or name the page with --kind")
    if args.publish and kind in results_names.TWO_RUN_KINDS and not args.run:
        ap.error(f"the {kind} page is two runs in a row: say which with --run 1 or --run 2")
    if kind == "decode" and not 0 < args.max_rows <= 128:
        ap.error("the decode page is the decode batches alone: give --max-rows 128 (or fewer)")
    variants = [v for v in args.variants.split(",") if v]
    for v in variants:
        if v not in l9.VARIANTS:
            ap.error(f"unknown lesson 9 variant {v}")
    dtypes = [d for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in DTYPES:
            ap.error(f"unknown dtype {d}")
    refs = {n: Reference(args.workbook, n) for n in sorted(lessons - {9, 10, 11})}
    ref9 = l9.Reference(args.workbook) if 9 in lessons else None
    ref10 = l10.Reference(args.workbook) if 10 in lessons else None
    ref11 = l11.Reference(args.workbook) if 11 in lessons else None

    # One compilation per row length; the row count stays symbolic.
    # Each row length is a recompilation: raise the limits (named differently across releases).
    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 1024)
    torch._dynamo.config.automatic_dynamic_shapes = False
    compiled_norm = torch.compile(rms_norm_formula, fullgraph=True)
    compiled_add = torch.compile(add_rms_norm_formula, fullgraph=True)
    # The per-head norm gets its own compiled function, so its 3-D shapes never share a
    # cache (or its limits) with the 2-D rows above.
    compiled_heads = torch.compile(rms_norm_formula, fullgraph=True)
    compiled9 = {v: torch.compile(l9.VARIANTS[v][6], fullgraph=True) for v in variants}
    compiled10 = (torch.compile(l10.backward_formula, fullgraph=True), peers.compile_dynamic(l10.backward_formula))
    compiled_norm_dynamic = peers.compile_dynamic(rms_norm_formula)
    compiled_add_dynamic = peers.compile_dynamic(add_rms_norm_formula)
    if peers.why_absent():
        print(f"torch_compare: no Liger-Kernel columns: {peers.why_absent()}", file=sys.stderr)
    compiled11 = torch.compile(l11.formula, fullgraph=True)

    def few(rows):
        return not args.max_rows or rows <= args.max_rows

    def this_pass(rows, cols, es=2):
        """False for a shape that a placement pass after the first leaves alone: one moving at
        least SHORT_BYTES (two rows x cols tensors of es-byte elements are the least a lesson moves)."""
        return bench.pass_index == 0 or 2 * rows * cols * es < SHORT_BYTES

    bench = Bench(args)
    started = time.time()

    def one_pass():
        torch.manual_seed(0)
        for dname in dtypes:
            dt = DTYPES[dname]
            es = torch.finfo(dt).bits // 8
            shapes = [(r, c, 4) for r, c in SEED_SHAPES + DECODE_SHAPES if c <= LESSON4_MAX_COLS]
            shapes += [(r, c, 8) for r, c in LONG_ROWS]
            shapes = [(r, c, n) for r, c, n in shapes if few(r) and this_pass(r, c, es)]
            for rows, cols, norm_lesson in shapes:
                todo = lessons & ({4, 5} if norm_lesson == 4 else {8})
                if not todo:
                    continue
                shape = f"{rows}x{cols}"
                x = fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
                w = fill(torch.empty(cols, dtype=dt, device="cuda"))
                y = torch.empty_like(x)
                torch._dynamo.mark_dynamic(x, 0)
                if norm_lesson in todo:
                    n, ref = norm_lesson, refs[norm_lesson]
                    nbytes = (2 * rows * cols + cols) * es
                    ref(dt, x.data_ptr(), cols, w.data_ptr(), y.data_ptr(), cols, rows, cols)
                    check_close(f"lesson {n} {shape} {dname}", y, F.rms_norm(x, (cols,), w, EPS))
                    impls = [("reference",
                              lambda: ref(dt, x.data_ptr(), cols, w.data_ptr(), y.data_ptr(), cols, rows, cols)),
                             ("eager", lambda: F.rms_norm(x, (cols,), w, EPS))]
                    if not args.no_compile:
                        impls.append(("compile", lambda: compiled_norm(x, w)))
                        if n == 4:
                            impls.append(("compile-dynamic", lambda: compiled_norm_dynamic(x, w)))
                    if n == 4 and peers.liger():
                        impls.append(("liger", lambda: peers.liger_norm(x, w, EPS)))
                    bench.shape(n, shape, dname, nbytes, impls)
                if 5 in todo:
                    ref = refs[5]
                    r = fill(torch.empty(rows, cols, dtype=dt, device="cuda"))
                    rout = torch.empty_like(r)
                    torch._dynamo.mark_dynamic(r, 0)
                    nbytes = (4 * rows * cols + cols) * es
                    args5 = (x.data_ptr(), r.data_ptr(), w.data_ptr(), y.data_ptr(), rout.data_ptr(), rows, cols)
                    ref(dt, *args5)
                    want_y, want_r = add_rms_norm_eager(x.float(), r.float(), w.float())
                    check_close(f"lesson 5 {shape} {dname} residual_out", rout, want_r)
                    check_close(f"lesson 5 {shape} {dname} y", y, want_y)
                    del want_y, want_r
                    impls = [("reference", lambda: ref(dt, *args5)), ("eager", lambda: add_rms_norm_eager(x, r, w))]
                    if not args.no_compile:
                        impls.append(("compile", lambda: compiled_add(x, r, w)))
                        impls.append(("compile-dynamic", lambda: compiled_add_dynamic(x, r, w)))
                    if peers.liger():
                        impls.append(("liger", lambda: peers.liger_add_norm(x, r, w, EPS)))
                    bench.shape(5, shape, dname, nbytes, impls)
                    del r, rout
                del x, w, y
            if 6 in lessons:
                ref, d = refs[6], QK_HEAD_DIM
                w = fill(torch.empty(d, dtype=dt, device="cuda"))
                for tokens in (t for t in QK_TOKENS if few(t) and this_pass(t * QK_HEADS, d, es)):
                    qkv = fill(torch.empty(tokens, (QK_HEADS + 2 * QK_KV_HEADS) * d, dtype=dt, device="cuda"))
                    q = qkv[:, : QK_HEADS * d].view(tokens, QK_HEADS, d)  # token stride (H + 2*KV)*D
                    qc = q.contiguous()
                    out = torch.empty_like(qc)
                    for t in (q, qc, qkv):
                        torch._dynamo.mark_dynamic(t, 0)
                    nbytes = (2 * tokens * QK_HEADS * d + d) * es
                    for layout, src in (("qkv", q), ("contig", qc)):
                        shape = f"{tokens}x{QK_HEADS}x{d} {layout}"
                        args6 = (src.data_ptr(), src.stride(0), src.stride(1), w.data_ptr(), out.data_ptr(),
                                 out.stride(0), out.stride(1), tokens, QK_HEADS, d)
                        ref(dt, *args6)
                        check_close(f"lesson 6 {shape} {dname}", out, F.rms_norm(src, (d,), w, EPS))
                        impls = [("reference", lambda: ref(dt, *args6)),
                                 ("eager", lambda: F.rms_norm(src, (d,), w, EPS))]
                        if not args.no_compile:
                            impls.append(("compile", lambda: compiled_heads(src, w)))
                        bench.shape(6, shape, dname, nbytes, impls)
                    del qkv, q, qc, out
            if ref9 is not None:
                only = {int(c) for c in args.lesson9_cols.split(",") if c}
                for rows, cols in SEED_SHAPES:
                    if cols <= LESSON4_MAX_COLS and (not only or cols in only) and few(rows) \
                            and this_pass(rows, cols, es):
                        for v in variants:
                            lesson9_shape(bench, ref9, compiled9[v], v, rows, cols, dt, dname, args.no_compile)
            if ref10 is not None:
                for rows, cols in filter(lambda s: few(s[0]) and this_pass(*s, es), l10.SHAPES):
                    lesson10_shape(bench, ref10, compiled10, rows, cols, dt, dname, args.no_compile)

            if ref11 is not None:
                fp8_shapes = FP8_ISSUE_SHAPES if args.fp8_shapes == "issue" else \
                    [(r, c) for r, c in SEED_SHAPES if c <= LESSON4_MAX_COLS]
                for rows, cols in filter(lambda s: few(s[0]) and this_pass(*s, es), fp8_shapes):
                    lesson11_shape(bench, ref11, compiled11, rows, cols, dt, dname, args.no_compile)

    # A short launch's time depends on where its tensors sit (the same kernels read up to 5% apart
    # in two processes whose allocations differed), so shapes moving under 16 MiB are measured in
    # every placement pass and their samples pooled; the rest in the first pass only.
    for index in range(args.placements):
        bench.pass_index = index
        pads = placement_pads(index)
        one_pass()
        del pads
        torch.cuda.empty_cache()
    bench.finish()

    result = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "samples": args.samples,
        "short_samples": max(args.samples, args.short_samples),
        "short_bytes": SHORT_BYTES,
        "placements": args.placements,
        "graphs": not args.no_graphs,
        "l2_reset": bench.timer.reset is not None,
        "liger": peers.version() if peers.liger() else None,
        "peer_notes": [peers.why_absent()] if peers.why_absent() else [],
        "seconds": round(time.time() - started, 1),
        "rows": bench.rows,
        # What dynamo did (compilations, graph breaks, fallbacks): a slow compiled row can be
        # told apart from a function that silently ran uncompiled.
        "dynamo": {str(k): {str(a): b for a, b in v.items()} for k, v in torch._dynamo.utils.counters.items()},
    }
    targets = [args.out] if args.out else []
    if args.publish:
        targets.append(results_names.raw(args.publish, result["gpu"], kind, args.run if kind in results_names.TWO_RUN_KINDS else None))
    for path in targets:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
        print(f"wrote {len(bench.rows)} rows to {path} in {result['seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
