"""The stable names of the measured results under docs/results/ (see docs/results/index.md).

One page per kind and GPU, named `<gpu-slug>[-<kind>].md`; the raw rows behind a page sit in
`torch/` under the same stem (`torch/<stem>.json`, or `torch/<stem>-run1.json` and `-run2.json`
for a page of two runs in a row). The book reads every `*.json` at the top of docs/results/ as a
`make bench` table, which is why raw PyTorch and Nsight Compute rows live one folder down.
A page is replaced when its kind is measured again; git keeps the earlier ones.

Standard library only: scripts/collect-results and the tests import it without PyTorch.
"""
import os
import re
import subprocess

# kind -> the suffix of its stem after the GPU slug, and what writes it.
KINDS = {
    "bench": "",                       # scripts/collect-results --publish (make bench)
    "torch": "-torch",                 # bench/torch_compare.py, lessons 4, 5, 6 and 8, two runs in a row
    "lesson9-torch": "-lesson9-torch",  # bench/torch_compare.py --lessons 9, two runs in a row
    "lessons10-11": "-lessons10-11",   # bench/torch_compare.py --lessons 10,11, two runs, beside the gate tables
    "decode": "-decode",               # bench/torch_compare.py --max-rows 128: decode batches in µs, two runs in a row
    "ncu-torch": "-ncu-torch",         # bench/ncu_torch.py, lessons 4, 5 and 6
    "lesson9-ncu-torch": "-lesson9-ncu-torch",  # bench/ncu_torch.py, lesson 9's options
    "check": "-check",                 # scripts/gpu-check, written up by hand from its summaries
}
RAW_FOLDER = "torch"
# The pages that set the references beside their peers: each is two runs in a row, since a row
# counts as behind only when it is behind in both (issue 31).
TWO_RUN_KINDS = ("torch", "decode", "lesson9-torch", "lessons10-11")


def gpu_slug(gpu):
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3' (the same rule as the book's results files)."""
    return re.sub(r"[^a-z0-9]+", "-", (gpu or "").lower()).strip("-") or "unknown-gpu"


def stem(gpu, kind):
    if kind not in KINDS:
        raise ValueError(f"unknown results kind {kind!r} (one of {', '.join(KINDS)})")
    return gpu_slug(gpu) + KINDS[kind]


def page(results_dir, gpu, kind):
    """The Markdown page of a kind: docs/results/<stem>.md."""
    return os.path.join(results_dir, stem(gpu, kind) + ".md")


def table_json(results_dir, gpu):
    """The make-bench table's JSON, the one file the book reads: docs/results/<slug>.json."""
    return os.path.join(results_dir, stem(gpu, "bench") + ".json")


def raw(results_dir, gpu, kind, run=None):
    """The raw rows behind a page: docs/results/torch/<stem>[-runN].json."""
    name = stem(gpu, kind) + (f"-run{run}" if run else "") + ".json"
    return os.path.join(results_dir, RAW_FOLDER, name)


def torch_kind(lessons):
    """The page a bench/torch_compare.py run over these lessons belongs to, or None when it mixes pages."""
    lessons = set(lessons)
    if lessons and lessons <= {4, 5, 6, 8}:
        return "torch"
    if lessons == {9}:
        return "lesson9-torch"
    if lessons and lessons <= {10, 11}:
        return "lessons10-11"
    return None


def gpu_name():
    """The first visible GPU's name from nvidia-smi, or '' where it cannot be asked."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    names = [line.strip() for line in out.splitlines() if line.strip()]
    index = int(visible) if visible.isdigit() and int(visible) < len(names) else 0
    return names[index] if names else ""
