"""Instructors' leaderboard: ./grade leaderboard lessonN DIR

Every submission under DIR (a source file directly in DIR, named by its file, or a folder holding
one source file, named by the folder) is built and graded in a sandbox (bubblewrap: the system and
the grader and the lessons' libraries read-only, a private empty folder, no network, only the GPU's device nodes, nothing of
other students, the cache or the exports), with limits on time, memory, output, file size and
processes, on fresh inputs from a seed drawn after it was handed in. Nothing a submission starts
outlives its grading. One student's compile error, crash, hang or hostile code never stops or
touches the others; each failure is named. Correct submissions are ranked by the geometric mean of
their bandwidth over the lesson's benchmark shapes; results within the noise band of the one above
share its rank. Results are signed and cached by file content, grader, GPU and sandbox; only results
from the same GPU model are ranked together.
"""
import os
import queue
import resource
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import exitcodes
from .board import exports, ranking, slurm
from .board.grading import BoardLimits, Submission
from .board.result_store import ResultStore
from .board.sandbox import Sandbox, become_subreaper
from .build import BUILD_DIR, build_targets, config, library
from .lessons import ROOT, UsageError, find_lesson
from .progress import STATE_DIR

BOARD_DIR = os.path.join(STATE_DIR, "leaderboard")


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


def _sandbox(lesson, folder, out_dir, result_dir, want):
    """The strongest sandbox available, hiding the store, the submissions and every export."""
    hidden = [STATE_DIR, folder, os.path.join(BUILD_DIR, "submissions")] + [d for d in (out_dir, result_dir) if d]
    cfg = config()
    probe = [cfg["grader"], cfg["include_dir"], library(lesson, "reference") if lesson.needs_gpu else cfg["grader"]]
    return Sandbox.detect(visible=_needed(cfg), hidden=hidden, probe_paths=probe, want=want)


def _needed(cfg):
    """What a submission's compile and grading read from the project: the grader's sources (headers and
    the adapters), its program and the lessons' libraries. Never the whole project or build folder: an
    instructor's other classes, their boards and exports may live anywhere in either (a class graded
    after another saw the first one's sources on two H200 when the build folder was visible)."""
    return [cfg["grader_root"], os.path.dirname(cfg["grader"]), cfg["lib_dir"]]


def _meta(sandbox):
    return {"sandbox": sandbox.describe(), "isolated": sandbox.isolated}


def run(lesson_name, folder, out_dir=None, limits=None, gpus=None, use_cache=True, only=None, result_dir=None,
        slurm_file=None, use_sandbox=True):
    started = time.monotonic()
    lesson = find_lesson(lesson_name)
    submissions = find_submissions(lesson, folder)
    folder = os.path.abspath(folder)
    limits = limits or BoardLimits()
    if slurm_file:
        results = os.path.abspath(result_dir or "results")
        os.makedirs(results, exist_ok=True)
        with open(slurm_file, "w", encoding="utf-8") as f:
            f.write(slurm.job_script(lesson, ROOT, folder, results, len(submissions), lesson.needs_gpu,
                                     limits.options + ([] if use_sandbox else ["--no-sandbox"])))
        print(f"wrote {slurm_file}: a job array of {len(submissions)} tasks (sbatch {slurm_file}); "
              f"then ./grade leaderboard merge {lesson.name} {results}")
        return exitcodes.PASS
    build_targets("wb-grader", f"{lesson.name}_reference")
    if only is not None:
        if not 0 <= only < len(submissions):
            raise UsageError(f"--only {only}: there are {len(submissions)} submissions (0 to {len(submissions) - 1})")
        submissions = [submissions[only]]
    become_subreaper()
    sandbox = _sandbox(lesson, folder, out_dir and os.path.abspath(out_dir),
                       result_dir and os.path.abspath(result_dir), use_sandbox)
    meta = _meta(sandbox)
    print(exports.banner(meta), flush=True)
    store = ResultStore(BOARD_DIR)
    devices = gpus or [None]
    print(f"grading {len(submissions)} submission(s) of {lesson.name} on {len(devices)} device slot(s) ...",
          flush=True)
    jobs = [Submission(lesson, name, path, sandbox, store, limits) for name, path in submissions]

    def announce(job):
        while store.refused:
            path, why = store.refused.pop(0)
            print(f"  ignored the cached result {os.path.basename(path)}: {why}; graded again", flush=True)
        if job.record is not None:
            note = " (cached)" if job.record.get("cached") else ""
            print(f"  {job.name}: {job.record['status']}{note}", flush=True)

    # Builds need no GPU: they run side by side; gradings run one per GPU, so no two timings share one.
    # A file with the same bytes as one before it waits for that one's result (it is then cached).
    first = {}
    for job in jobs:
        if job.lookup(use_cache) is None:
            first.setdefault(job.key, job)
        announce(job)

    def build(job):
        if job.record is None and first[job.key] is job:
            job.build()
        return job

    free = queue.Queue()
    for d in devices:
        free.put(d)

    def grade(job):
        if job.record is None and first[job.key] is not job:
            twin = first[job.key]
            twin.done.wait()
            job.record = dict(twin.record, name=job.name, source=job.path, cached=True)
        if job.record is None:
            device = free.get()
            try:
                job.grade(device)
            finally:
                free.put(device)
        job.done.set()
        announce(job)
        return job.record

    for job in jobs:
        job.done = threading.Event()
        if job.record is not None:
            job.done.set()
    try:
        builders = ThreadPoolExecutor(max_workers=max(1, min(8, (os.cpu_count() or 2) // 2)))
        built = [builders.submit(build, job) for job in jobs]
        with ThreadPoolExecutor(max_workers=len(devices)) as pool:
            results = list(pool.map(lambda f: grade(f.result()), built))
        builders.shutdown()
    finally:
        sandbox.close()
    meta["run"] = run_summary(results, devices, time.monotonic() - started)
    print(meta["run"]["text"], flush=True)
    if result_dir:
        for r in results:
            store.write(os.path.join(result_dir, r["name"] + ".json"), {**r, "board": meta})
        if only is not None:
            return exitcodes.PASS
    return report(lesson, results, meta, out_dir)


def run_summary(results, devices, seconds):
    """How long the board took, and how busy each GPU slot was (the gradings it ran, summed)."""
    busy = {}
    for r in results:
        if not r.get("cached") and "grading_s" in r:
            slot = busy.setdefault(r.get("device", "cpu"), [0.0, 0])
            slot[0] += r["grading_s"]
            slot[1] += 1
    names = {"cpu": "no GPU", "default": "the default GPU"}
    slots = ", ".join(f"{names.get(d, 'GPU ' + d)} busy {b:.0f} s ({n} grading{'s' * (n != 1)})"
                      for d, (b, n) in sorted(busy.items()))
    cached = sum(1 for r in results if r.get("cached"))
    text = (f"{len(results)} submission(s) in {seconds:.1f} s on {len(devices)} slot(s)"
            + (f": {slots}" if slots else "") + (f"; {cached} from the cache" if cached else ""))
    return {"seconds": round(seconds, 1), "slots": len(devices),
            "busy": {d: {"seconds": round(b, 1), "gradings": n} for d, (b, n) in busy.items()},
            "cached": cached, "text": text}


def report(lesson, results, meta, out_dir):
    ranked = ranking.rank(results)
    print(exports.to_text(ranked, lesson, meta))
    if out_dir:
        for path in exports.export(ranked, lesson, meta, out_dir):
            print(f"wrote {path}")
    if os.environ.get("WORKBOOK_BOARD_MEMORY"):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"board peak memory: {peak // 1024} MiB", file=sys.stderr)
    return exitcodes.PASS


def merge(lesson_name, result_dir, out_dir=None):
    """Ranks the records a Slurm job array left in result_dir; refuses any this board did not sign."""
    lesson = find_lesson(lesson_name)
    if not os.path.isdir(result_dir):
        raise UsageError(f"no such folder: {result_dir}")
    store = ResultStore(BOARD_DIR)
    results, metas = [], []
    for entry in sorted(os.listdir(result_dir)):
        if entry.endswith(".json"):
            record = store.read(os.path.join(result_dir, entry))
            if record is not None:
                metas.append(record.pop("board", {"sandbox": "unknown", "isolated": False}))
                results.append(record)
    for path, why in store.refused:
        print(f"leaderboard: refused {path}: {why}", file=sys.stderr)
    if not results:
        raise UsageError(f"no results this board signed in {result_dir}")
    weakest = dict(next((m for m in metas if not m.get("isolated")), metas[0]))
    weakest.pop("run", None)  # one task's own timing, not the merged board's
    return report(lesson, results, weakest, out_dir)
