"""Lesson 9 for bench/torch_compare.py: the descriptor API through ctypes, and each option's
PyTorch formula (eager, and the function torch.compile is given).

The structs mirror grader/include/workbook/production_norm.h field for field; the table is the
one the adapter exports (grader/include/workbook/lesson_api.h, Lesson9).
"""
import ctypes
import os

import torch
import torch.nn.functional as F

i32, i64, f32, ptr = ctypes.c_int32, ctypes.c_int64, ctypes.c_float, ctypes.c_void_p
DATA_TYPE = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2}
STATUS = ["success", "missing_tensor", "bad_rank", "negative_dimension", "shape_mismatch", "inner_stride_not_one",
          "overlapping_rows", "unsupported_dtype", "cols_out_of_range", "partial_overlap", "bad_eps", "bad_mode"]


class TensorDesc(ctypes.Structure):
    _fields_ = [("data", ptr), ("dtype", i32), ("rank", i32), ("shape", i64 * 3), ("stride", i64 * 3)]


class NormProblem(ctypes.Structure):
    _fields_ = [("mode", i32), ("eps", f32), ("x", TensorDesc), ("residual", TensorDesc), ("weight", TensorDesc),
                ("bias", TensorDesc), ("y", TensorDesc), ("residual_out", TensorDesc), ("rstd", TensorDesc)]


class Table(ctypes.Structure):
    _fields_ = [("version", ctypes.c_int), ("create", ptr), ("launch", ptr), ("destroy", ptr)]


CREATE = ctypes.CFUNCTYPE(i32, ctypes.POINTER(NormProblem), ctypes.POINTER(ptr))
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ptr, ptr)
DESTROY = ctypes.CFUNCTYPE(None, ptr)


def describe(t):
    """The contract's TensorDesc of a torch tensor (None: absent)."""
    d = TensorDesc()
    if t is None:
        return d
    d.data = t.data_ptr()
    d.dtype = DATA_TYPE[t.dtype]
    d.rank = t.dim()
    for k in range(t.dim()):
        d.shape[k] = t.shape[k]
        d.stride[k] = t.stride(k)
    return d


class Reference:
    """Lesson 9's reference: one descriptor per call site, created once, launched on torch's stream."""

    def __init__(self, libdir):
        path = os.path.join(libdir, "lesson9_reference.so")
        if not os.path.exists(path):
            raise SystemExit(f"torch_compare: {path} not found; build first (make, or scripts/gpu-check)")
        self.lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
        api = self.lib.workbook_lesson9_api
        api.restype = ctypes.POINTER(Table)
        table = api().contents
        self.create, self.launch, self.destroy = CREATE(table.create), LAUNCH(table.launch), DESTROY(table.destroy)
        self.descriptors = []

    def bind(self, eps, layer, x, weight, y, residual=None, bias=None, residual_out=None, rstd=None):
        """A launcher for this call; the descriptor is freed by close()."""
        p = NormProblem()
        p.mode, p.eps = (1 if layer else 0), eps
        p.x, p.weight, p.y = describe(x), describe(weight), describe(y)
        p.residual, p.bias = describe(residual), describe(bias)
        p.residual_out, p.rstd = describe(residual_out), describe(rstd)
        desc = ptr()
        status = self.create(ctypes.byref(p), ctypes.byref(desc))
        if status != 0:
            raise SystemExit(f"torch_compare: lesson 9 norm_create refused the call: {STATUS[status]}")
        self.descriptors.append(desc)

        def launch():
            code = self.launch(desc, torch.cuda.current_stream().cuda_stream)
            if code != 0:
                raise RuntimeError(f"lesson 9 reference returned cudaError {code}")
        return launch

    def close(self):
        for d in self.descriptors:
            self.destroy(d)
        self.descriptors = []


# The options the gate times (lesson_production.cu), each as PyTorch computes it. Every function
# returns its outputs in the order the reference writes them: y, then rstd or residual_out.

def plain(x, w, eps):
    return (F.rms_norm(x, (x.shape[-1],), w, eps),)


def plain_formula(x, w, eps):
    xf = x.float()
    return ((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype),)


def bias_rstd(x, w, b, eps):
    xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * rstd * w.float() + b.float()).to(x.dtype), rstd.squeeze(-1)


def prenorm(x, r, w, eps):
    s = x.float() + r.float()
    return (s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype), s.to(x.dtype)


def prenorm_eager(x, r, w, eps):
    s = x + r
    return F.rms_norm(s, (s.shape[-1],), w, eps), s


def weight_f32(x, w32, eps):
    return plain_formula(x, w32, eps)


def layer_bias(x, w, b, eps):
    return (F.layer_norm(x, (x.shape[-1],), w, b, eps),)


def layer_bias_rstd(x, w, b, eps):
    y, _, rstd = torch.ops.aten.native_layer_norm(x, [x.shape[-1]], w, b, eps)
    return y, rstd.reshape(x.shape[:-1]).float()


# label (as in lesson_production.cu): (LayerNorm?, bias?, rstd?, residual in/out?, fp32 weight?,
#                                      eager function, the function torch.compile is given)
VARIANTS = {
    "plain": (False, False, False, False, False, plain, plain_formula),
    "bias_rstd": (False, True, True, False, False, bias_rstd, bias_rstd),
    "prenorm": (False, False, False, True, False, prenorm_eager, prenorm),
    "weight_f32": (False, False, False, False, True, weight_f32, weight_f32),
    "layer_bias": (True, True, False, False, False, layer_bias, layer_bias),
    "layer_bias_rstd": (True, True, True, False, False, layer_bias_rstd, layer_bias_rstd),
}


def bytes_moved(rows, cols, es, layer, bias, rstd, residual, w32):
    """The grader's count: each input read once, each output written once."""
    n = (2 + (2 if residual else 0)) * rows * cols * es
    n += cols * (4 if w32 else es) + (cols * es if bias else 0) + (4 * rows if rstd else 0)
    return n
