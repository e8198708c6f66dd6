"""./grade lessonN --profile: Nsight Compute's view of your kernel next to the reference's.

One launch of each at one benchmark shape (the gate shape that moves the most bytes, or
--shape), each profiled by `ncu` in its own run with caches flushed, shown side by side:
DRAM throughput, bytes moved against the lesson's byte count, occupancy, registers, shared
memory, the launch shape and the top warp-stall reasons, then the most likely limit. The
verdict is never touched: this explains the gate, it does not grade.
"""
import csv
import glob
import io
import json
import os
import re
import shutil
import subprocess
import tempfile

from . import exitcodes
from .lessons import all_lessons

# Metrics read by name; the sections add the warp-stall breakdown (read by pattern, since its
# metric names differ between Nsight Compute versions).
METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__grid_size",
    "launch__block_size",
    "launch__waves_per_multiprocessor",
)
SECTIONS = ("LaunchStats", "Occupancy", "SpeedOfLight", "WarpStateStats")
STALL = re.compile(r"issue_stalled_([a-z_]+?)_per_(?:issue|warp)_active")


class ProfileError(Exception):
    """ncu is missing, not permitted, or failed; the message says which and what to do."""

    def __init__(self, message, code=exitcodes.NO_GPU):
        super().__init__(message)
        self.code = code


def find_ncu():
    """The ncu binary: PATH first, then the usual install folders; None when absent."""
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/opt/nvidia/nsight-compute/*/ncu", "/opt/nvidia/nsight-compute/ncu", "/usr/local/cuda/bin/ncu",
                    "/usr/local/cuda/nsight-compute*/ncu"):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def ncu_command(ncu, grader_cmd, clock_control="none", extra_metrics=()):
    """ncu over the grader's profile mode; `extra_metrics`: read besides METRICS (bench/profile_short_rows.py)."""
    cmd = [ncu, "--profile-from-start", "off", "--csv", "--page", "raw", "--print-units", "base",
           "--clock-control", clock_control, "--metrics", ",".join(METRICS + tuple(extra_metrics))]
    for section in SECTIONS:
        cmd += ["--section", section]
    return cmd + list(grader_cmd)


def _number(text):
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return None


def parse_ncu_csv(text):
    """The kernels of ncu's `--csv --page raw` output: a list of {column: value} dicts, with the
    units row left out. Lines before the header (ncu's ==PROF== lines, the program's own) are skipped."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(l for l in lines[start:] if not l.startswith("==")))))
    header, kernels = rows[0], []
    for row in rows[1:]:
        if not row or not row[0].strip() or not row[0].strip().isdigit():
            continue  # the units row has an empty ID
        kernels.append(dict(zip(header, row)))
    return kernels


def summarise(kernels):
    """One side's numbers: summed over its kernels where they add up, from the longest kernel otherwise."""
    if not kernels:
        return None
    main = max(kernels, key=lambda k: _number(k.get("gpu__time_duration.sum")) or 0)

    def total(name):
        values = [_number(k.get(name)) for k in kernels]
        return sum(v for v in values if v is not None) if any(v is not None for v in values) else None

    stalls = {}
    for name, value in main.items():
        m = STALL.search(name)
        v = _number(value)
        if m and v is not None and m.group(1) not in ("not_issued", "selected"):
            stalls[m.group(1)] = stalls.get(m.group(1), 0.0) + v
    shared = (_number(main.get("launch__shared_mem_per_block_static")) or 0) + \
             (_number(main.get("launch__shared_mem_per_block_dynamic")) or 0)
    return {
        "kernels": len(kernels),
        "name": main.get("Kernel Name", "?"),
        "time_us": (total("gpu__time_duration.sum") or 0) / 1e3,
        "dram_bytes": (total("dram__bytes_read.sum") or 0) + (total("dram__bytes_write.sum") or 0),
        "dram_pct": _number(main.get("dram__throughput.avg.pct_of_peak_sustained_elapsed")),
        "occupancy_pct": _number(main.get("sm__warps_active.avg.pct_of_peak_sustained_active")),
        "registers": _number(main.get("launch__registers_per_thread")),
        "shared_bytes": shared,
        "grid": main.get("Grid Size") or main.get("launch__grid_size", "?"),
        "block": main.get("Block Size") or main.get("launch__block_size", "?"),
        "waves": _number(main.get("launch__waves_per_multiprocessor")),
        "stalls": sorted(stalls.items(), key=lambda kv: -kv[1])[:3],
    }


STALL_ADVICE = {
    "long_scoreboard": "warps wait on loads from memory: put more independent loads in flight per thread "
                       "(wider vectors, several vectors per thread, every load before the first use)",
    "barrier": "warps wait at __syncthreads: fewer block-wide barriers (a warp-level reduction, or one "
               "barrier per row instead of several)",
    "membar": "warps wait on memory fences",
    "short_scoreboard": "warps wait on shared memory or special-function results",
    "mio_throttle": "the shared-memory / special-function queue is full",
    "lg_throttle": "the load/store queue is full of narrow accesses: fewer, wider (16-byte) accesses",
    "math_pipe_throttle": "an arithmetic pipe is saturated",
    "wait": "warps wait on fixed-latency dependencies",
    "no_instruction": "warps wait for instructions (instruction cache misses)",
    "drain": "warps wait for their last stores to drain at exit",
    "branch_resolving": "warps wait on branch resolution",
}


def _share(fraction):
    """A fraction as a percentage, with a decimal where it is small."""
    pct = 100 * (fraction or 0)
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%"


def _what_limits(side, lesson_bytes):
    """What limits a kernel whose time is already as good as the reference's (or the reference itself)."""
    if side["dram_pct"] is not None and side["dram_pct"] >= 80:
        return f"DRAM bandwidth ({side['dram_pct']:.0f}% of peak): only moving fewer bytes would be faster"
    if side["waves"] is not None and side["waves"] < 1:
        return (f"the shape itself: its rows give {_share(side['waves'])} of one wave of blocks, so launch "
                "latency and a part-empty GPU dominate (at decode sizes this is what PDL and fusion hide)")
    if side["stalls"]:
        return f"{side['stalls'][0][0]} stalls"
    return "nothing that stands out"


def most_likely_limit(mine, ref, lesson_bytes):
    """One line on what most likely limits the submission, judged against the reference's numbers:
    a limit the reference shares is the shape's or the device's, not the submission's."""
    if mine["dram_bytes"] > 1.15 * lesson_bytes and mine["dram_bytes"] > 1.10 * ref["dram_bytes"]:
        return (f"extra traffic: your kernel moves {mine['dram_bytes'] / lesson_bytes:.2f}x the bytes the lesson "
                f"needs (the reference {ref['dram_bytes'] / lesson_bytes:.2f}x): an input read twice from DRAM, or a "
                "second pass; remove that before anything else")
    if mine["time_us"] <= 1.05 * ref["time_us"]:
        return (f"level with the reference ({mine['time_us']:.1f} against {ref['time_us']:.1f} us); what limits both: "
                + _what_limits(mine, lesson_bytes))
    slower = f"{mine['time_us'] / ref['time_us']:.1f}x the reference's time: "
    if mine["dram_pct"] is not None and mine["dram_pct"] >= 80:
        return slower + (f"at {mine['dram_pct']:.0f}% of DRAM peak it is at the memory limit, so it moves more "
                         "bytes than it should")
    if mine["waves"] is not None and mine["waves"] < 1 and (ref["waves"] is None or mine["waves"] < 0.5 * ref["waves"]):
        return slower + (f"too few blocks: the grid fills {_share(mine['waves'])} of one wave of the GPU "
                         f"(the reference {_share(ref['waves'])}), so SMs sit idle; launch more blocks")
    if (mine["occupancy_pct"] is not None and ref["occupancy_pct"] is not None
            and mine["occupancy_pct"] < 0.6 * ref["occupancy_pct"]):
        return slower + (f"too few warps in flight to hide DRAM latency: occupancy {mine['occupancy_pct']:.0f}% "
                         f"against the reference's {ref['occupancy_pct']:.0f}% (registers, shared memory or the "
                         "block size limit it)")
    if mine["stalls"]:
        reason = mine["stalls"][0][0]
        return slower + f"{reason} stalls lead; " + STALL_ADVICE.get(reason, "see Nsight Compute's WarpStateStats")
    return slower + "nothing single stands out; compare the two columns"


def _bytes(n):
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _pct(v):
    return "n/a" if v is None else f"{v:.1f}%"


def format_table(info, mine, ref):
    """The side-by-side table and the closing line, as printed."""
    lesson_bytes = info["bytes"]
    rows = [
        ("kernels launched", str(mine["kernels"]), str(ref["kernels"])),
        ("time (one launch)", f"{mine['time_us']:.1f} us", f"{ref['time_us']:.1f} us"),
        ("DRAM throughput, % of peak", _pct(mine["dram_pct"]), _pct(ref["dram_pct"])),
        (f"DRAM bytes (lesson: {_bytes(lesson_bytes)})", f"{_bytes(mine['dram_bytes'])} "
         f"({mine['dram_bytes'] / lesson_bytes:.2f}x)", f"{_bytes(ref['dram_bytes'])} "
         f"({ref['dram_bytes'] / lesson_bytes:.2f}x)"),
        ("achieved occupancy", _pct(mine["occupancy_pct"]), _pct(ref["occupancy_pct"])),
        ("registers per thread", f"{mine['registers']:.0f}" if mine["registers"] is not None else "n/a",
         f"{ref['registers']:.0f}" if ref["registers"] is not None else "n/a"),
        ("shared memory per block", _bytes(mine["shared_bytes"]), _bytes(ref["shared_bytes"])),
        ("grid", str(mine["grid"]), str(ref["grid"])),
        ("block", str(mine["block"]), str(ref["block"])),
    ]
    for i in range(3):
        cells = []
        for side in (mine, ref):
            s = side["stalls"]
            cells.append(f"{s[i][0]} {s[i][1]:.1f}" if i < len(s) else "")
        rows.append((f"warp stall #{i + 1} (stalled warps per issue)", *cells))
    width = max(len(r[0]) for r in rows)
    col = max(14, max(len(r[1]) for r in rows), max(len(r[2]) for r in rows))
    out = [f"  {'':<{width}}  {'your kernel':>{col}}  {'reference':>{col}}"]
    out += [f"  {a:<{width}}  {b:>{col}}  {c:>{col}}" for a, b, c in rows]
    if min(mine["dram_bytes"], ref["dram_bytes"]) < 0.9 * lesson_bytes:
        out.append("  (DRAM bytes below the lesson's count: what the kernel wrote can still sit in L2 when it "
                   "ends, and that write-back is not counted)")
    out.append(f"\nmost likely limit: {most_likely_limit(mine, ref, lesson_bytes)}")
    return "\n".join(out)


def _run_side(ncu, grader_cmd, side, clock_control):
    with tempfile.TemporaryDirectory(prefix="workbook-profile-") as tmp:
        info_path = os.path.join(tmp, "info.json")
        cmd = ncu_command(ncu, [*grader_cmd, "--profile-side", side, "--profile-info", info_path], clock_control)
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        text = proc.stdout
        info = None
        if os.path.exists(info_path):
            with open(info_path, encoding="utf-8") as f:
                info = json.load(f)
    if "ERR_NVGPUCTRPERM" in text:
        raise ProfileError("ncu is not permitted to read the GPU's performance counters here "
                           "(ERR_NVGPUCTRPERM): run as root, or have the administrator allow profiling "
                           "(NVreg_RestrictProfilingToAdminUsers=0)")
    if info and info.get("error"):
        raise ProfileError(info["error"] + (f"\nshapes: {', '.join(info.get('available', []))}"
                                            if info.get("available") else ""),
                           exitcodes.USAGE if "no benchmark shape" in info["error"] else exitcodes.NO_GPU)
    kernels = parse_ncu_csv(text)
    if proc.returncode != 0 or not info or not kernels:
        tail = "\n".join(l for l in text.splitlines() if "==ERROR==" in l or "==WARNING==" in l)[-2000:]
        raise ProfileError(f"ncu did not profile the {side}'s launch (exit {proc.returncode})"
                           + (f":\n{tail}" if tail else ""))
    return info, kernels, text


def run(lesson, grader_cmd, shape=None, clock_control="none", raw_dir=None):
    """Profiles both sides and prints the table; returns an exit code (0 when the profile ran)."""
    if not lesson.needs_gpu:
        gpu = [l.number for l in all_lessons() if l.needs_gpu]
        print(f"{lesson.name} runs on the CPU: there is no kernel to profile (--profile is for the GPU lessons, "
              f"{gpu[0]} to {gpu[-1]})")
        return exitcodes.USAGE
    ncu = find_ncu()
    if not ncu:
        print("Nsight Compute (ncu) was not found: it ships with the CUDA toolkit and with Nsight Compute "
              "(/opt/nvidia/nsight-compute); put its folder on PATH. The verdict does not need it.")
        return exitcodes.NO_GPU
    cmd = list(grader_cmd) + (["--profile-shape", shape] if shape else [])
    try:
        results = {}
        for side in ("student", "reference"):
            print(f"profiling the {side}'s launch with {ncu} ...", flush=True)
            results[side] = _run_side(ncu, cmd, side, clock_control)
            if raw_dir:
                os.makedirs(raw_dir, exist_ok=True)
                with open(os.path.join(raw_dir, f"{lesson.name}-{side}.csv"), "w", encoding="utf-8") as f:
                    f.write(results[side][2])
    except ProfileError as e:
        print(f"\n--profile: {e}")
        return e.code
    info = results["student"][0]
    mine, ref = summarise(results["student"][1]), summarise(results["reference"][1])
    print(f"\n{lesson.name} at {info['shape']} {info['dtype']} on {info.get('gpu', 'the GPU')}: one launch of each, "
          f"caches flushed, clocks: {clock_control} (Nsight Compute)")
    print(format_table(info, mine, ref))
    print("\nThe profile explains; it does not grade: ./grade without --profile gives the verdict.")
    return exitcodes.PASS
