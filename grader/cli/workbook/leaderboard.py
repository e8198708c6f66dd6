"""Instructors' leaderboard: ./grade leaderboard lessonN DIR

Every submission under DIR (a source file directly in DIR, named by its file, or a folder holding
one source file, named by the folder) is built and graded in its own process, with a time limit,
on fresh inputs from a seed it is not told in advance. One student's compile error, crash or hang
never stops the others; each failure is named. Correct submissions are ranked by the geometric
mean of their bandwidth over the lesson's benchmark shapes; results within the noise band of the
one above share its rank. Results are cached by file content, grader and GPU, and only results
from the same GPU model are ranked together.
"""
import csv
import hashlib
import html
import io
import json
import math
import os
import queue
import resource
import secrets
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from . import exitcodes
from .build import BuildError, build_targets, compile_source, config, library
from .lessons import ROOT, UsageError, find_lesson
from .progress import STATE_DIR

CACHE_DIR = os.path.join(STATE_DIR, "leaderboard", "cache")


def find_submissions(lesson, folder):
    """(name, path) of every submission in `folder`, sorted by name."""
    if not os.path.isdir(folder):
        raise UsageError(f"no such folder: {folder}")
    exts = (".cpp", ".cu", ".cc") if lesson.number == 1 else (".cu",)
    found = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if os.path.isfile(path) and entry.endswith(exts):
            found.append((os.path.splitext(entry)[0], path))
        elif os.path.isdir(path):
            sources = [f for f in sorted(os.listdir(path)) if f.endswith(exts)]
            if len(sources) == 1:
                found.append((entry, os.path.join(path, sources[0])))
            elif sources:
                print(f"leaderboard: skipping {path}: it holds {len(sources)} source files, one is expected",
                      file=sys.stderr)
    if not found:
        raise UsageError(f"no submissions in {folder}: put one {'/'.join(exts)} file per student there, "
                         "or one folder per student holding one")
    return found


def gpu_identity(device=None):
    """Name, driver and SM clock of the GPU a grading process will see; 'no GPU' without one."""
    cmd = ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm", "--format=csv,noheader"]
    if device is not None:
        cmd += ["-i", str(device)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            name, driver, clock = [p.strip() for p in out.stdout.strip().splitlines()[0].split(",")]
            return {"gpu": name, "driver": driver, "sm_clock": clock}
    except (OSError, subprocess.TimeoutExpired, ValueError):
        pass
    return {"gpu": "no GPU", "driver": "", "sm_clock": ""}


def _file_hash(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _limits():
    """In the grading process: no core dumps, and a CPU-time cap well above the wall-clock limit."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def classify(report, code, timed_out):
    """A short name for what happened, for the table."""
    if timed_out:
        return "timeout"
    verdict = report.get("verdict") if report else None
    reason = (report or {}).get("reason", "")
    if verdict == "pass":
        return "correct"
    if verdict == "fail-gate":
        return "correct, below the gate"
    if verdict == "fail-build" or code == exitcodes.FAIL_BUILD:
        return "compile error"
    if verdict == "no-gpu" or code == exitcodes.NO_GPU:
        return "no GPU"
    if verdict == "fail-correctness":
        if "IllegalAddress" in reason or "illegal address" in reason:
            return "illegal address"
        if "did not finish" in reason:
            return "hang"
        if "crashed" in reason:
            return "crash"
        if "wrote outside the output" in reason:
            return "write outside the output"
        case = reason.split(":", 1)[0].strip() if ":" in reason else ""
        return f"wrong answer at {case}" if case else "wrong answer"
    return f"grader exited with {code}"


def grade_one(lesson, name, path, timeout, device=None, use_cache=True):
    """Builds and grades one submission in its own process; returns its result record."""
    ident = gpu_identity(device)
    cfg = config()
    grader_id = hashlib.sha256()
    for p in (cfg["grader"], library(lesson, "reference")):
        if os.path.exists(p):
            grader_id.update(_file_hash(p).encode())
    key = hashlib.sha256(f"{lesson.number}|{_file_hash(path)}|{ident['gpu']}|{grader_id.hexdigest()}".encode())
    cache = os.path.join(CACHE_DIR, key.hexdigest()[:24] + ".json")
    if use_cache and os.path.exists(cache):
        with open(cache, encoding="utf-8") as f:
            result = json.load(f)
        result.update({"name": name, "source": path, "cached": True})
        return result
    result = {"name": name, "source": path, "lesson": lesson.name, **ident, "cached": False}
    try:
        lib = compile_source(lesson, path)
    except BuildError as e:
        first = next((l for l in e.output.splitlines() if "error" in l), e.output.strip()[:200])
        result.update({"status": "compile error", "detail": first, "verdict": "fail-build"})
        _store(cache, result)
        return result
    os.makedirs(CACHE_DIR, exist_ok=True)
    report_path = cache + ".report"
    seed = str(secrets.randbits(63))  # drawn here, after the submission is fixed: it cannot be anticipated
    cmd = [cfg["grader"], "--lesson", str(lesson.number), "--student", lib, "--source-name", name,
           "--seed", seed, "--json", report_path]
    if lesson.needs_gpu:
        cmd += ["--reference", library(lesson, "reference")]
    env = dict(os.environ)
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(device)
    timed_out, code = False, None
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                              timeout=timeout, preexec_fn=_limits)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        timed_out = True
    report = None
    if not timed_out and os.path.exists(report_path):
        with open(report_path, encoding="utf-8") as f:
            report = json.load(f)
        os.remove(report_path)
    status = classify(report, code, timed_out)
    if code is not None and code < 0 and not report:
        status = f"crashed (signal {-code})"
    bench = (report or {}).get("bench", [])
    result.update({"status": status, "verdict": (report or {}).get("verdict"), "seed": seed,
                   "detail": (report or {}).get("reason", "") if status != "timeout" else
                   f"no result within {timeout} s", "bench": bench,
                   "driver": (report or {}).get("driver") or ident["driver"], "cuda": (report or {}).get("cuda", "")})
    result.update(summarise(bench))
    _store(cache, result)
    return result


def _store(path, result):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)


def _geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else 0.0


def summarise(bench):
    return {"gbps": _geomean([b["student_gbps"] for b in bench]),
            "of_reference": _geomean([b["ratio"] for b in bench]),
            "of_copy": _geomean([b["copy_fraction"] for b in bench]),
            "noise": max([b.get("noise", 0.01) for b in bench] or [0.01])}


def rank(results):
    """{gpu: [rows]} with rank numbers; correct first by bandwidth, ties within the noise band."""
    by_gpu = {}
    for r in results:
        by_gpu.setdefault(r.get("gpu", "no GPU"), []).append(dict(r))
    for gpu, rows in by_gpu.items():
        correct = [r for r in rows if r["status"].startswith("correct")]
        failed = [r for r in rows if not r["status"].startswith("correct")]
        correct.sort(key=lambda r: (-r.get("gbps", 0), r["name"]))
        previous = None
        for i, r in enumerate(correct):
            if previous and previous.get("gbps", 0) > 0 and \
                    previous["gbps"] - r.get("gbps", 0) <= max(previous["noise"], r["noise"]) * previous["gbps"]:
                r["rank"], r["tie"] = previous["rank"], True
                previous["tie"] = True
            elif previous and previous.get("gbps", 0) == 0 and r.get("gbps", 0) == 0:
                r["rank"], r["tie"] = previous["rank"], True  # no timing (lesson 1): all correct ones tie
                previous["tie"] = True
            else:
                r["rank"], r["tie"] = i + 1, False
            previous = r
        for r in sorted(failed, key=lambda r: r["name"]):
            r["rank"], r["tie"] = None, False
        by_gpu[gpu] = correct + sorted(failed, key=lambda r: r["name"])
    return by_gpu


def _rank_text(r):
    if r["rank"] is None:
        return "-"
    return f"={r['rank']}" if r.get("tie") else str(r["rank"])


COLUMNS = ["rank", "name", "status", "GB/s", "% of ref", "% of copy", "detail"]


def _row(r):
    timed = r.get("gbps", 0) > 0
    return [_rank_text(r), r["name"], r["status"], f"{r['gbps']:.0f}" if timed else "",
            f"{100 * r['of_reference']:.0f}%" if timed else "", f"{100 * r['of_copy']:.0f}%" if timed else "",
            (r.get("detail") or "")[:120] if not r["status"].startswith("correct") else ""]


def to_text(ranked, lesson):
    out = io.StringIO()
    for gpu, rows in ranked.items():
        info = next((r for r in rows), {})
        if gpu == "no GPU":
            out.write(f"\n{lesson.name} leaderboard, graded without a GPU\n")
        else:
            out.write(f"\n{lesson.name} leaderboard on {gpu} (driver {info.get('driver', '')}, CUDA "
                      f"{info.get('cuda', '')}, SM clock {info.get('sm_clock', '')})\n")
        table = [COLUMNS] + [_row(r) for r in rows]
        widths = [max(len(str(row[i])) for row in table) for i in range(len(COLUMNS) - 1)]
        for row in table:
            out.write("  " + "  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] + "\n")
    return out.getvalue()


def to_markdown(ranked, lesson):
    lines = [f"# {lesson.name} leaderboard", ""]
    for gpu, rows in ranked.items():
        lines += [f"## {gpu}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in _row(r)) + " |" for r in rows]
        lines.append("")
    return "\n".join(lines)


def to_csv(ranked):
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["gpu"] + COLUMNS)
    for gpu, rows in ranked.items():
        for r in rows:
            writer.writerow([gpu] + _row(r))
    return out.getvalue()


def to_html(ranked, lesson):
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{lesson.name} leaderboard</title>",
             "<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
             "td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}"
             ".fail{color:#a00}</style></head><body>", f"<h1>{html.escape(lesson.name)} leaderboard</h1>"]
    for gpu, rows in ranked.items():
        parts.append(f"<h2>{html.escape(gpu)}</h2>")
        timed = [r for r in rows if r.get("gbps", 0) > 0]
        if timed:
            top = max(r["gbps"] for r in timed)
            bar_h, width = 22, 640
            svg = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width + 260}' height='{bar_h * len(timed) + 10}'>"]
            for i, r in enumerate(timed):
                w = max(1, int(width * r["gbps"] / top))
                y = 5 + i * bar_h
                svg.append(f"<text x='0' y='{y + 15}' font-size='13'>{html.escape(r['name'])}</text>"
                           f"<rect x='160' y='{y}' width='{w}' height='{bar_h - 6}' fill='#4a7bd0'/>"
                           f"<text x='{165 + w}' y='{y + 15}' font-size='12'>{r['gbps']:.0f} GB/s</text>")
            svg.append("</svg>")
            parts.append("".join(svg))
        parts.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in COLUMNS) + "</tr>")
        for r in rows:
            cls = "" if r["status"].startswith("correct") else " class='fail'"
            parts.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in _row(r)) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def export(ranked, lesson, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    files = {"leaderboard.md": to_markdown(ranked, lesson), "leaderboard.csv": to_csv(ranked),
             "leaderboard.json": json.dumps(ranked, indent=2), "leaderboard.html": to_html(ranked, lesson)}
    for name, text in files.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(text)
    return [os.path.join(out_dir, n) for n in files]


def slurm_script(lesson, folder, result_dir, count):
    return f"""#!/bin/bash
#SBATCH --job-name={lesson.name}-leaderboard
#SBATCH --array=0-{count - 1}
#SBATCH --gres=gpu:1
#SBATCH --time=00:30:00
# One task grades one submission into JSON; merge afterwards with:
#   ./grade leaderboard merge {lesson.name} {result_dir}
cd {ROOT}
./grade leaderboard {lesson.name} {folder} --only "$SLURM_ARRAY_TASK_ID" --result-dir {result_dir}
"""


def run(lesson_name, folder, out_dir=None, timeout=600, gpus=None, use_cache=True, only=None, result_dir=None,
        slurm=None):
    lesson = find_lesson(lesson_name)
    submissions = find_submissions(lesson, folder)
    if slurm:
        with open(slurm, "w", encoding="utf-8") as f:
            f.write(slurm_script(lesson, os.path.abspath(folder), os.path.abspath(result_dir or "results"),
                                 len(submissions)))
        print(f"wrote {slurm}: a job array of {len(submissions)} tasks (sbatch {slurm})")
        return exitcodes.PASS
    build_targets("wb-grader", f"{lesson.name}_reference")
    if only is not None:
        if not 0 <= only < len(submissions):
            raise UsageError(f"--only {only}: there are {len(submissions)} submissions (0 to {len(submissions) - 1})")
        submissions = [submissions[only]]
    devices = gpus or [None]
    print(f"grading {len(submissions)} submission(s) of {lesson.name} on {len(devices)} device slot(s) ...",
          flush=True)

    free = queue.Queue()
    for d in devices:
        free.put(d)

    def work(indexed):
        _, (name, path) = indexed
        device = free.get()  # one submission per GPU at a time, so no two timings share a device
        try:
            result = grade_one(lesson, name, path, timeout, device, use_cache)
        finally:
            free.put(device)
        print(f"  {name}: {result['status']}" + (" (cached)" if result.get("cached") else ""), flush=True)
        return result

    with ThreadPoolExecutor(max_workers=len(devices)) as pool:
        results = list(pool.map(work, enumerate(submissions)))
    if result_dir:
        os.makedirs(result_dir, exist_ok=True)
        for r in results:
            _store(os.path.join(result_dir, r["name"] + ".json"), r)
        if only is not None:
            return exitcodes.PASS
    return report(lesson, results, out_dir)


def report(lesson, results, out_dir):
    ranked = rank(results)
    print(to_text(ranked, lesson))
    if out_dir:
        for path in export(ranked, lesson, out_dir):
            print(f"wrote {path}")
    return exitcodes.PASS


def merge(lesson_name, result_dir, out_dir=None):
    lesson = find_lesson(lesson_name)
    results = []
    for entry in sorted(os.listdir(result_dir)):
        if entry.endswith(".json"):
            with open(os.path.join(result_dir, entry), encoding="utf-8") as f:
                results.append(json.load(f))
    if not results:
        raise UsageError(f"no results in {result_dir}")
    return report(lesson, results, out_dir)
