"""Lesson 11 for bench/torch_compare.py: the reference through ctypes, and the PyTorch formula of
RMSNorm followed by dynamic per-row FP8 (e4m3) quantisation (eager, and the function torch.compile
is given).

The argument list mirrors grader/include/workbook/rmsnorm_fp8.h; the table is the one the adapter
exports (grader/include/workbook/lesson_api.h, Lesson11: a version, then the f32, f16 and bf16
entries).
"""
import ctypes
import os

import torch

E4M3_MAX = 448.0
NO_CLIP = float("inf")

i64, f32, ptr = ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
# x, x_row_stride, weight, q, q_row_stride, scale, rows, cols, eps, clip, stream
ENTRY = ctypes.CFUNCTYPE(ctypes.c_int, ptr, i64, ptr, ptr, i64, ptr, i64, i64, f32, f32, ptr)
NAMES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


class Table(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int), ("f32", ptr), ("f16", ptr), ("bf16", ptr)]


class Reference:
    """Lesson 11's reference, called on torch tensors on torch's current stream."""

    def __init__(self, libdir):
        path = os.path.join(libdir, "lesson11_reference.so")
        if not os.path.exists(path):
            raise SystemExit(f"torch_compare: {path} not found; build first (make, or scripts/gpu-check)")
        self.lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        api = self.lib.workbook_lesson11_api
        api.restype = ctypes.POINTER(Table)
        table = api().contents
        self.fns = {dt: ENTRY(getattr(table, name)) for dt, name in NAMES.items()}

    def bind(self, x, w, q, scale, eps, clip=NO_CLIP):
        """A launcher writing q (float8_e4m3fn, rows x cols) and scale (float32, rows) for x and w."""
        fn = self.fns[x.dtype]
        rows, cols = x.shape
        args = (x.data_ptr(), x.stride(0), w.data_ptr(), q.data_ptr(), q.stride(0), scale.data_ptr(), rows, cols, eps,
                clip)

        def launch():
            code = fn(*args, torch.cuda.current_stream().cuda_stream)
            if code != 0:
                raise RuntimeError(f"lesson 11 reference returned cudaError {code}")

        return launch


def formula(x, w, eps):
    """The textbook form, fp32 throughout: RMSNorm, the row's amax, its scale, and q saturated to ±448."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()
    scale = y.abs().amax(dim=-1, keepdim=True) / E4M3_MAX
    q = (y / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale.squeeze(-1)


def bytes_moved(rows, cols, elem_size):
    """The grader's count: x and the weight read once, q (one byte per element) and the scales written once."""
    return rows * cols * elem_size + cols * elem_size + rows * cols + 4 * rows


def check(name, q, scale, x, w, eps):
    """The reference did the work: its scales agree with fp64's and q · scale is within half an e4m3 step of y."""
    xd = x.double()
    y = xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * w.double()
    want = y.abs().amax(dim=-1) / E4M3_MAX
    bad_scale = (scale.double() - want).abs() > 1e-4 * want
    deq = q.double() * scale.double().unsqueeze(-1)
    # Half a step is at most 2^-4 of the value for normals; subnormals are 2^-9 apart (times the scale).
    bad_q = (deq - y).abs() > 2.0 ** -4 * y.abs() + scale.double().unsqueeze(-1) * 2.0 ** -10 * 1.01
    if bad_scale.any() or bad_q.any():
        raise SystemExit(f"torch_compare: {name}: the reference disagrees with fp64 at {int(bad_scale.sum())} "
                         f"scales and {int(bad_q.sum())} elements of q")
