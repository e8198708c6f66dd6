"""Lesson 10 for bench/torch_compare.py: the backward's entry points through ctypes, and the
textbook formula that eager PyTorch runs and torch.compile is given.

The table mirrors grader/include/workbook/lesson_api.h (Lesson10): a version, the three typed
entry points, then the three workspace queries.
"""
import ctypes
import os

import torch

i64, ptr, size = ctypes.c_int64, ctypes.c_void_p, ctypes.c_size_t
ENTRY = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}

# The shapes (rows, cols): 32768 x 1024 up, and a decode batch.
SHAPES = [(32768, 1024), (32768, 4096), (16384, 8192), (4096, 32768), (4096, 65536), (128, 4096)]


class Table(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int), ("f32", ptr), ("f16", ptr), ("bf16", ptr),
                ("ws_f32", ptr), ("ws_f16", ptr), ("ws_bf16", ptr)]


BACKWARD = ctypes.CFUNCTYPE(ctypes.c_int, ptr, i64, ptr, i64, ptr, ptr, ptr, i64, ptr, ptr, size, i64, i64, ptr)
WORKSPACE = ctypes.CFUNCTYPE(size, i64, i64)


class Reference:
    """Lesson 10's reference, called on torch tensors on torch's current stream."""

    def __init__(self, libdir):
        path = os.path.join(libdir, "lesson10_reference.so")
        if not os.path.exists(path):
            raise SystemExit(f"torch_compare: {path} not found; build first (make, or scripts/gpu-check)")
        self.lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        api = self.lib.workbook_lesson10_api
        api.restype = ctypes.POINTER(Table)
        t = api().contents
        self.fns = [BACKWARD(t.f32), BACKWARD(t.f16), BACKWARD(t.bf16)]
        self.ws = [WORKSPACE(t.ws_f32), WORKSPACE(t.ws_f16), WORKSPACE(t.ws_bf16)]

    def bind(self, dy, x, w, rstd, dx, dweight):
        """A launcher for this call, with its own workspace (contiguous rows)."""
        k = ENTRY[x.dtype]
        rows, cols = x.shape
        nbytes = self.ws[k](rows, cols)
        workspace = torch.empty(max(nbytes, 1), dtype=torch.uint8, device="cuda")
        fn = self.fns[k]

        def launch():
            code = fn(dy.data_ptr(), cols, x.data_ptr(), cols, w.data_ptr(), rstd.data_ptr(), dx.data_ptr(), cols,
                      dweight.data_ptr(), workspace.data_ptr(), nbytes, rows, cols,
                      torch.cuda.current_stream().cuda_stream)
            if code != 0:
                raise RuntimeError(f"lesson 10 reference returned cudaError {code}")
        launch.workspace = workspace  # kept alive with the launcher
        return launch


def backward_formula(dy, x, w, rstd):
    """RMSNorm's backward as written in the lesson, fp32 inside: (dx in T, dweight in fp32)."""
    xhat = x.float() * rstd.unsqueeze(-1)
    g = dy.float() * w.float()
    m = (g * xhat).mean(-1, keepdim=True)
    dx = (rstd.unsqueeze(-1) * (g - xhat * m)).to(x.dtype)
    return dx, (dy.float() * xhat).sum(0)


def saved_rstd(x, eps):
    """The rstd a forward saves: fp32, one per row."""
    return torch.rsqrt(x.float().pow(2).mean(-1) + eps)


def bytes_moved(rows, cols, es):
    """dy and x read, dx written (T); weight (T) and rstd (fp32) read; dweight (fp32) written."""
    return 3 * rows * cols * es + cols * es + 4 * rows + 4 * cols
