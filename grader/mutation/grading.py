"""Grading one mutant: the grader's run, its verdict, and the grader's own copies of the mutant.

A mutant is graded by `./grade lessonN --source FILE --no-bench --fail-fast --json ...` (with
`--emulate` unless on the GPU), or, when it is part of a schema (schema.py), by the grader program
itself on the schema's library with WORKBOOK_MUTANT set to its number: the same command line ./grade
would run, without compiling anything.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook.build import BUILD_DIR  # noqa: E402

from . import schema  # noqa: E402

KILLED, TIMEOUT, SURVIVED, NOT_COMPILED, EQUIVALENT, ERROR = (
    "killed", "timeout", "survived", "not-compiled", "equivalent", "error")
# ./grade's exit codes (DESIGN.md §4): pass, fail-correctness, fail-gate, fail-build, no GPU, usage.
# Any other status is a crash (a signal: the shell's 128 + N, or Python's 256 - N).
KNOWN_EXIT_CODES = (0, 1, 2, 3, 4, 64)
# A hang as the grader reports it, on the GPU (launch_guard.cu) and on the emulator (scheduler.cpp).
HANG = re.compile(r"did not finish within")



def classify(returncode, report, output, timed_out, timeout_s):
    """(status, detail) from one grading run: its exit code, its JSON report (None if none was
    written), its printed output, and whether mutate's own timeout stopped it."""
    if timed_out:
        return TIMEOUT, f"no verdict within {timeout_s:g} s (stopped by scripts/mutate)"
    if report is None:
        output = output or ""
        if HANG.search(output):
            return TIMEOUT, _first_line(output, HANG)
        failed = re.search(r"^\s*FAIL\s+(\S+).*(?:\n\s+(.+))?", output, re.M)
        crashed = returncode not in KNOWN_EXIT_CODES
        if failed and (returncode == 1 or crashed):
            # A case failed, then the run ended before its report: lesson 1 runs the submission
            # inside the grader, so an out-of-bounds write there can take the grader down with it.
            detail = f"{failed.group(1)}: {' '.join((failed.group(2) or '').split())}"
            if crashed:
                detail += f" (then the grading run crashed, exit code {returncode})"
            return KILLED, detail[:300]
        if crashed:
            return KILLED, f"the grading run crashed before its report (exit code {returncode})"
        tail = " | ".join(l.strip() for l in output.strip().splitlines()[-3:])
        return ERROR, f"no report (exit code {returncode}): {tail}"
    verdict = report.get("verdict")
    if verdict == "pass" or verdict == "fail-gate":  # --no-bench: the gate is never the verdict
        return SURVIVED, ""
    if verdict == "fail-build":
        return NOT_COMPILED, _first_error(report.get("reason", ""))
    if verdict == "fail-correctness":
        failed = [c for c in report.get("cases", []) if not c.get("passed") and not c.get("skipped")]
        texts = [report.get("reason", "")] + [c.get("detail", "") for c in failed]
        hang = any(HANG.search(t or "") for t in texts)
        if failed:
            first = failed[0]
            detail = f"{first.get('name')}: {' '.join((first.get('detail') or '').split())}"
            if len(failed) > 1:
                detail += f" (and {len(failed) - 1} more case(s))"
        else:
            detail = " ".join((report.get("reason") or "").split())
        return (TIMEOUT if hang else KILLED), detail[:300]
    return ERROR, f"verdict {verdict}: {' '.join((report.get('reason') or '').split())[:200]}"


def _first_line(text, pattern):
    for line in text.splitlines():
        if pattern.search(line):
            return line.strip()[:300]
    return ""


def _first_error(reason):
    for line in reason.splitlines():
        if "error" in line:
            return " ".join(line.split())[:300]
    return " ".join(reason.split())[:300]


def graded_on(lesson, mode):
    if mode == "gpu":
        return "the GPU"
    return "the CPU emulator" if lesson.needs_gpu else "the CPU (lesson 1 needs no emulator)"


def mutant_suffix(lesson):
    return os.path.splitext(lesson.solution)[1]


def cache_key(lesson, mode, seed, content, memory=None):
    """The cache's name for one mutant's verdict; `memory` names the emulator's memory (WBEMU_MEMORY) when it
    is not the default, so a verdict on one memory is never taken for the other's."""
    h = hashlib.sha256()
    h.update(f"{lesson.name}\0{mode}\0{seed}\0".encode())
    if memory:
        h.update(f"memory={memory}\0".encode())
    h.update(content.encode())
    return h.hexdigest()


def grader_fingerprint(mode, lesson):
    """A hash of what decides a verdict besides the mutant: the grader program (its cases are
    compiled into it) and, on the emulator, its runtime; on the GPU, the reference library. None
    before they are built."""
    try:
        if mode == "emulator":
            with open(os.path.join(BUILD_DIR, "emulator_config.json"), encoding="utf-8") as f:
                cfg = json.load(f)
            files = [cfg["grader"], cfg["runtime"]]
        else:
            with open(os.path.join(BUILD_DIR, "workbook_config.json"), encoding="utf-8") as f:
                cfg = json.load(f)
            files = [cfg["grader"], os.path.join(BUILD_DIR, "lib", f"{lesson.name}_reference.so")]
        h = hashlib.sha256()
        for path in files:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        return h.hexdigest()[:16]
    except (OSError, ValueError, KeyError):
        return None


def remove_grader_copies(lesson, mode, content, since):
    """The grader keeps a compiled library per source it saw (build/emulated, build/submissions);
    a mutant's is never used again, so it is removed. Only files written since `since` whose
    source bytes are the mutant's own are touched."""
    emulated = mode == "emulator" and lesson.needs_gpu  # lesson 1 is compiled as on any machine
    folder, suffix = ("emulated", ".cu") if emulated else ("submissions", ".src")
    d = os.path.join(BUILD_DIR, folder)
    data = content.encode()
    try:
        names = os.listdir(d)
    except OSError:
        return
    for name in names:
        if not (name.startswith(lesson.name + "-") and name.endswith(suffix)):
            continue
        path = os.path.join(d, name)
        try:
            if os.path.getmtime(path) < since - 1 or os.path.getsize(path) != len(data):
                continue
            with open(path, "rb") as f:
                if f.read() != data:
                    continue
        except OSError:
            continue
        stem = path[: -len(suffix)]
        for extra in (suffix, suffix + ".cpp", ".so", ".so.o", ".so.tmp"):
            try:
                os.remove(stem + extra)
            except OSError:
                pass


_LIVE = set()  # grading runs in progress, each in a process group of its own
_LIVE_LOCK = threading.Lock()


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the grade run and the grader it started
    except OSError:
        pass


def stop_all():
    """Ends every grading run this process started (on Ctrl-C: they do not share its terminal's signals)."""
    with _LIVE_LOCK:
        for proc in list(_LIVE):
            _kill_group(proc)


# The emulator's watchdog for mutation runs (its default is 20 s): many gradings at once on a loaded
# machine stretch a long launch (lesson 3's 70001 rows) past 20 s, and a watchdog stop is a kill.
WATCHDOG_SECONDS = "90"


def grading_env(**extra):
    """The environment of a grading run: the emulator's watchdog for loaded machines, `extra` set, the
    mutant switch and coverage file of the caller's own environment left out."""
    env = dict(os.environ)
    env.setdefault("WORKBOOK_WATCHDOG_SECONDS", WATCHDOG_SECONDS)
    env.pop(schema.ENV, None)
    env.pop(schema.COVERAGE_ENV, None)
    env.update(extra)
    return env


def grade_one(lesson, mutant_path, content, work, mode, seed, timeout_s, keep_libs=False):
    """Grades one mutant file with ./grade; returns (status, detail, seconds)."""
    json_path = mutant_path + ".json"
    cmd = [sys.executable, os.path.join(ROOT, "grade"), lesson.name, "--source", mutant_path, "--no-bench",
           "--fail-fast", "--json", json_path, "--seed", str(seed)]
    if mode == "emulator":
        cmd.append("--emulate")
    env = grading_env(WORKBOOK_STATE_DIR=os.path.join(work, "state"))  # not the learner's progress
    start = time.time()
    status, detail, seconds = _run_grading(cmd, env, json_path, mutant_path + ".log", timeout_s)
    if not keep_libs:
        remove_grader_copies(lesson, mode, content, start)
    return status, detail, seconds


def grade_in_schema(lesson, lib, shown, number, log_base, seed, timeout_s, cases=None):
    """Grades mutant `number` of the schema compiled into `lib` (the emulator's grader, run directly);
    returns (status, detail, seconds). Number 0 grades the reference the schema holds. `cases`: the names
    of the only cases to run (None: every case)."""
    from workbook import emulated
    json_path = log_base + ".json"
    selected = ",".join("=" + c for c in cases) if cases else None
    args = types.SimpleNamespace(seed=seed, json=json_path, cases=selected, fail_fast=True)
    cmd = emulated.grader_command(lesson, lib, shown, args)
    env = grading_env(**{schema.ENV: str(number)})
    return _run_grading(cmd, env, json_path, log_base + ".log", timeout_s)


def _run_grading(cmd, env, json_path, log_path, timeout_s):
    """Runs one grading command in a process group of its own; (status, detail, seconds)."""
    try:
        os.remove(json_path)
    except OSError:
        pass
    start = time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", start_new_session=True)
    with _LIVE_LOCK:
        _LIVE.add(proc)
    timed_out = False
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        output, _ = proc.communicate()
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    seconds = time.time() - start
    report = None
    try:
        with open(json_path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError):
        pass
    with open(log_path, "w", encoding="utf-8") as f:
        f.write(output or "")
    status, detail = classify(proc.returncode, report, output, timed_out, timeout_s)
    return status, detail, seconds
