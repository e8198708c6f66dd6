"""The book's measured-bandwidth tables, from the `make bench` JSON in docs/results/ (build_pages.py calls it)."""
import glob
import json
import math
import os
import re

from book_error import BookError

RESULT_KEYS = ("gpu", "driver", "cuda", "date", "commit", "copy_gbps", "rows")
ROW_KEYS = ("lesson", "shape", "dtype", "reference_gbps", "copy_fraction")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def load_results(results_dir):
    """All docs/results/*.json files, validated, sorted by file name."""
    results = []
    if not results_dir or not os.path.isdir(results_dir):
        return results
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        try:
            data = json.loads(read(path))
        except ValueError as e:
            raise BookError(f"{path}: not valid JSON ({e})")
        missing = [k for k in RESULT_KEYS if k not in data]
        if missing:
            raise BookError(f"{path}: missing keys {missing}")
        if not re.match(r"^\d{4}-\d{2}-\d{2}$", str(data["date"])):
            raise BookError(f"{path}: date must be YYYY-MM-DD, found {data['date']!r}")
        for i, row in enumerate(data["rows"]):
            miss = [k for k in ROW_KEYS if k not in row]
            if miss:
                raise BookError(f"{path}: rows[{i}] is missing {miss}")
            if row["dtype"] not in ("f32", "f16", "bf16"):
                raise BookError(f"{path}: rows[{i}].dtype must be f32, f16 or bf16")
            for k in ("reference_gbps", "copy_fraction"):
                if not isinstance(row[k], (int, float)) or not math.isfinite(row[k]):
                    raise BookError(f"{path}: rows[{i}].{k} must be a number")
        data["_slug"] = os.path.splitext(os.path.basename(path))[0]
        results.append(data)
    return results


def md_cell(text):
    return str(text).replace("|", "\\|")


def torch_block(data, lesson):
    """The PyTorch side-by-side rows of a results file (bench/torch_compare.py), if it has them."""
    rows = [g for g in data.get("torch", []) if "vs_compile" in g and (lesson is None or int(g["lesson"]) == lesson)]
    if not rows:
        return []
    table = ["| lesson | shape | dtype | reference GB/s | F.rms_norm GB/s | torch.compile GB/s | vs compile | verdict |",
             "|---:|---|---|---:|---:|---:|---:|---|"]
    for g in rows:
        table.append("| " + " | ".join([str(int(g["lesson"])), md_cell(g["shape"]), md_cell(g["dtype"]),
                                        f"{g['reference']:.0f}", f"{g.get('eager', 0):.0f}", f"{g['compile']:.0f}",
                                        f"{g['vs_compile']:.3f}", md_cell(g.get("verdict", ""))]) + " |")
    return ["Against PyTorch on the same GPU, same tensors, one timer (`bench/torch_compare.py`; "
            "\"vs compile\" is the reference's speed over `torch.compile`'s, tie = within the noise):",
            "\n".join(table)]


def targets_block(data):
    """The reference targets a results file checked (scripts/collect-results), if it has them."""
    found = data.get("targets", [])
    if not found:
        return []
    table = ["| target | met | short of it |", "|---|---:|---|"]
    for t in found:
        table.append(f"| {md_cell(t['target'])} | {t['met']} of {t['total']} | "
                     + md_cell("; ".join(t.get("short", [])) or "–") + " |")
    return ["The design's targets for the references, checked against this run (rows that miss, worst first):",
            "\n".join(table)]


def results_table(results, lesson=None):
    """Markdown for the measured tables: one per GPU file that has rows for `lesson` (None: all)."""
    blocks = []
    for data in results:
        rows = [r for r in data["rows"] if lesson is None or int(r["lesson"]) == lesson]
        if not rows:
            continue
        commit = str(data["commit"])[:12]
        # Results measured before the same-size copy existed have no such column.
        sized = any(r.get("size_copy_fraction") for r in rows)
        blocks.append(
            f"Measured on **{md_cell(data['gpu'])}** (driver {md_cell(data['driver'])}, CUDA {md_cell(data['cuda'])}, "
            f"{data['date']}, commit `{commit}`). The device's own copy bandwidth, measured in the same run: "
            f"**{data['copy_gbps']:.0f} GB/s**. Source: `docs/results/{data['_slug']}.json`."
            + (" \"% of same-size copy\" is against a plain copy kernel moving the row's own bytes, timed the "
               "same way: below about 256 MiB a copy itself stays well under the large copy's bandwidth (launch, last wave, "
               "and the write-back of what the L2 clear left dirty)." if sized else ""))
        head = "| shape | dtype | reference GB/s | % of copy |" + (" % of same-size copy |" if sized else "")
        rule = "|---|---|---:|---:|" + ("---:|" if sized else "")
        if lesson is None:
            head, rule = "| lesson " + head, "|---:" + rule
        table = [head, rule]
        for r in rows:
            cells = [md_cell(r["shape"]), md_cell(r["dtype"]), f"{r['reference_gbps']:.0f}",
                     f"{100.0 * r['copy_fraction']:.1f} %"]
            if sized:
                size = r.get("size_copy_fraction")
                cells.append(f"{100.0 * size:.1f} %" if isinstance(size, (int, float)) and size > 0 else "–")
            if lesson is None:
                cells.insert(0, str(int(r["lesson"])))
            table.append("| " + " | ".join(cells) + " |")
        blocks.append("\n".join(table))
        blocks += torch_block(data, lesson)
        if lesson is None:
            blocks += targets_block(data)
    if not blocks:
        where = f"lesson {lesson}" if lesson is not None else "any lesson"
        return (f"**Not measured yet.** No file in `docs/results/` has rows for {where} so far. "
                "`scripts/gpu-check` measures the reference solutions on a GPU (`make bench`); "
                "the table appears here once its results are committed.")
    return "\n\n".join(blocks)
