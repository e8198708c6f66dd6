"""Optional peers for bench/torch_compare.py: Liger-Kernel's Triton kernels and torch.compile with
dynamic shapes, each a column beside the reference when it is there, and a note when it is not.

Liger-Kernel (https://github.com/linkedin/Liger-Kernel) is what many training stacks use for
RMSNorm: its forward, its fused residual add + RMSNorm, and its backward are called here the way its
autograd functions call them (casting mode "llama": the inverse RMS in fp32; no weight offset), so
the time includes the outputs it allocates, as it does in a model. It is pure Python over Triton:
install it with `pip install liger-kernel` (or, without a network, from a wheel with
`pip install --no-deps --no-index WHEEL`). Where it does not import, its columns are left out and
the run says why.

torch.compile "dynamic" is the same formula compiled with `dynamic=True`: one kernel for every row
length, the setting a framework gets when it cannot specialise on the hidden size; the "compile"
column of torch_compare.py stays the static one (one compilation per row length).
"""
import torch

_LIGER = None
_LIGER_WHY = None


def liger():
    """Liger-Kernel's ops module pair (rms_norm, fused_add_rms_norm), or None; `why_absent` says why."""
    global _LIGER, _LIGER_WHY
    if _LIGER is None and _LIGER_WHY is None:
        try:
            from liger_kernel.ops import fused_add_rms_norm, rms_norm  # noqa: PLC0415 - optional peer
            _LIGER = (rms_norm, fused_add_rms_norm)
        except Exception as exc:  # noqa: BLE001 - any import failure means: no Liger columns
            _LIGER_WHY = f"Liger-Kernel not importable ({type(exc).__name__}: {exc})"
    return _LIGER


def why_absent():
    """The note for a run without Liger-Kernel columns (None when they are there)."""
    liger()
    return _LIGER_WHY


def version():
    try:
        from importlib.metadata import version as v  # noqa: PLC0415
        return v("liger-kernel")
    except Exception:  # noqa: BLE001
        return None


def liger_norm(x, w, eps):
    """Liger's RMSNorm forward: y (it also saves rstd, as its autograd function does)."""
    ops = liger()
    return ops[0].rms_norm_forward(x, w, eps, 0.0, "llama", None)[0]


def liger_add_norm(x, r, w, eps):
    """Liger's fused residual add + RMSNorm forward: (y, residual_out)."""
    ops = liger()
    out = ops[1].fused_add_rms_norm_forward(x, r, w, eps, 0.0, "llama")
    return out[0], out[1]


def liger_backward(dy, x, w, rstd):
    """Liger's RMSNorm backward from the saved rstd: (dx, dweight). Its own block size and warps
    for the row length, as its forward would have chosen them; dy is not overwritten."""
    ops = liger()
    block, warps = ops[0].calculate_settings(x.shape[-1])
    out = ops[0].rms_norm_backward(dy, x, w, rstd, 0.0, ops[0]._str_to_casting_mode["llama"], block, warps, False, None)
    return out[0], out[1]


def compile_dynamic(fn):
    """fn under torch.compile with dynamic shapes: one compilation for every row length."""
    return torch.compile(fn, fullgraph=True, dynamic=True)
