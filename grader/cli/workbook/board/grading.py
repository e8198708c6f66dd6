"""Building and grading one submission inside the sandbox, and naming what happened.

The submission's file is copied into a private folder; the compiler and then the grader run on it in
the sandbox. The grader's verdict comes back on a pipe the board created (its write end handed to the
grader as an open descriptor, not a path), is parsed as exactly one JSON document, and is checked
against the seed the board drew and the grader's exit status before it is believed.

That first grading runs the submission's code in the grader's own process, which is what catches work
on the wrong stream or before a grid-dependency wait, but it also means the code could write that
process's report. So a "pass" there is only a ticket to the second grading, from outside (remote.py):
the grader in the board's own process, the submission's code in the sandbox in another one. The row's
verdict and timings are that second grading's.
"""
import json
import os
import secrets
import shutil
import signal
import time

from .. import exitcodes
from ..build import compile_command, config, library
from .gpu_guard import gpu_identity, settled_foreign_processes
from .leftovers import name_leftovers
from .remote import grade_remotely
from .ranking import summarise
from ..stub import shipped_stub
from .result_store import file_hash
from .sandbox import Limits

MiB = 1024 * 1024


class BoardLimits:
    """The board's limits per submission (README documents the defaults and the options)."""

    def __init__(self, timeout=900, compile_timeout=300, memory_mib=16384, output_mib=8, file_mib=1024,
                 processes=256, samples=None):
        self.samples = samples
        self.grading = Limits(timeout, memory_mib * MiB, output_mib * MiB, file_mib * MiB, processes)
        self.compile = Limits(compile_timeout, memory_mib * MiB, output_mib * MiB, file_mib * MiB, processes)
        self.options = ["--timeout", str(timeout), "--compile-timeout", str(compile_timeout), "--memory-limit",
                        str(memory_mib), "--output-limit", str(output_mib), "--file-size-limit", str(file_mib),
                        "--process-limit", str(processes)] + (["--samples", str(samples)] if samples else [])


def classify(report, code, timed_out):
    """A short name for what the grader's report says, for the table."""
    if timed_out:
        return "time limit"
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
        case = reason.split(":", 1)[0].strip() if ":" in reason else ""
        if report.get("still_stub"):
            return "still the stub"
        failed = [c for c in report.get("cases", []) if not c.get("passed")]
        cause = next((c.get("cause") for c in failed if c.get("name") == case), None) or \
            next((c.get("cause") for c in failed), None)
        if cause == "launch":
            return f"launch error at {case}" if case else "launch error"
        if cause == "stream":
            return f"wrong stream at {case}" if case else "wrong stream"
        if "IllegalAddress" in reason or "illegal address" in reason:
            return "illegal address"
        if "did not finish" in reason:
            return "hang"
        if "crashed" in reason:
            return "crash"
        if "wrote outside the output" in reason:
            return "write outside the output"
        return f"wrong answer at {case}" if case else "wrong answer"
    return f"grader exited with {code}"


def read_report(raw, seed, lesson):
    """(report, problem): the grader's JSON report, or why it cannot be believed."""
    if not raw:
        return None, None
    try:
        report, end = json.JSONDecoder().raw_decode(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "the report channel held something that is not the grader's JSON report"
    if raw.decode("utf-8")[end:].strip():
        return None, "more than one report arrived on the report channel"
    if not isinstance(report, dict) or str(report.get("seed")) != seed or report.get("lesson") not in (
            lesson.number, lesson.name, str(lesson.number)):
        return None, "the report does not carry the lesson and seed the board gave this run"
    return report, None


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _compile_problem(text, copy_name, shown_name):
    lines = text.replace(copy_name, shown_name).splitlines()
    first = next((l for l in lines if "error" in l), None)
    return first or (lines[0] if lines else "the compiler failed without a message")


class Submission:
    """One student's file on its way through the board: looked up, built, graded, remembered."""

    def __init__(self, lesson, name, path, sandbox, store, limits):
        self.lesson, self.name, self.path = lesson, name, path
        self.sandbox, self.store, self.limits = sandbox, store, limits
        self.cfg = config()
        self.reference = library(lesson, "reference")
        self.work = self.lib = self.key = None
        self.slot = None    # (GPU slot, when its grading started), once it is graded
        self.record = None  # set once the result is known (cached, failed to build, or graded)

    def lookup(self, use_cache=True):
        """The cached record, if this board signed one for these exact bytes, grader, GPU and sandbox."""
        ident = gpu_identity(None)
        self.key = self.store.key_for(self.lesson.number, file_hash(self.path), ident["gpu"],
                                      file_hash(self.cfg["grader"]),
                                      file_hash(self.reference) if os.path.exists(self.reference) else "",
                                      self.sandbox.mode)
        cached = self.store.cached(self.key) if use_cache else None
        if cached is not None:
            cached.update({"name": self.name, "source": self.path, "cached": True})
            self.record = cached
        return self.record

    def _finish(self, ident, result):
        record = {"name": self.name, "source": self.path, "lesson": self.lesson.name, **ident, "cached": False,
                  "sandbox": self.sandbox.mode, "bench": [], "clean": True}
        if self.slot:
            record.update(device=self.slot[0], grading_s=round(time.monotonic() - self.slot[1], 1))
        record.update(result)
        record.update(summarise(record["bench"]))
        self.store.remember(self.key, record)
        self.record = record
        if self.work:
            self.sandbox.discard(self.work)
            self.work = None
        return record

    def build(self):
        """Compiles the file in the sandbox (no GPU needed); a failure becomes the record."""
        self.work = self.sandbox.workdir()
        ext = ".cpp" if self.lesson.number == 1 else ".cu"
        copy = os.path.join(self.work, "submission" + ext)
        shutil.copyfile(self.path, copy)
        lib = os.path.join(self.work, "submission.so")
        if self.sandbox.mode == "unprivileged" and os.geteuid() == 0:
            os.chown(copy, 65534, 65534)
        inside = self.sandbox.inside
        out = self.sandbox.run(compile_command(self.lesson, inside(copy, self.work), inside(lib, self.work)),
                               self.work, self.limits.compile, report=False)
        self.left = list(out.left_behind)
        ident = gpu_identity(None)
        if out.limit:
            return self._finish(ident, {
                "status": f"compile {out.limit}", "verdict": "fail-build", "left_behind": self.left,
                "detail": f"the compiler hit the {out.limit} ({_limit_value(out.limit, self.limits.compile)})"})
        if out.code != 0 or not os.path.exists(lib):
            return self._finish(ident, {
                "status": "compile error", "verdict": "fail-build", "left_behind": self.left,
                "detail": _compile_problem(out.output(), inside(copy, self.work), os.path.basename(self.path))})
        self.lib = lib
        return None

    def _is_shipped_stub(self):
        stub = shipped_stub(self.lesson)
        with open(self.path, "rb") as f:
            return stub is not None and f.read() == stub

    def grade(self, device=None):
        """Grades the built library on `device` in the sandbox; returns the record (with its GPU slot
        and how long the grading took, kept in the cache with it)."""
        # Without --gpus a GPU lesson runs on the GPU CUDA picks by default, not on the CPU.
        where = "cpu" if not self.lesson.needs_gpu else "default"
        self.slot = (where if device is None else str(device), time.monotonic())
        return self._grade(device)

    def _grade(self, device):
        lesson, limits = self.lesson, self.limits
        seed = str(secrets.randbits(63))  # drawn now, after the submission is fixed: it cannot be anticipated
        cmd = [self.cfg["grader"], "--lesson", str(lesson.number), "--student",
               self.sandbox.inside(self.lib, self.work), "--source-name", self.name, "--seed", seed,
               "--json", "/dev/fd/{report_fd}", "--no-bench"]
        if lesson.needs_gpu:
            cmd += ["--reference", self.reference]
        if self._is_shipped_stub():
            cmd.append("--untouched-stub")  # the grader's reason then says so, whatever the stub does
        ident = gpu_identity(device)
        run = self.sandbox.run(cmd, self.work, limits.grading, device=device, report=True, gpu=lesson.needs_gpu,
                               solo=True)
        result = {"seed": seed, "left_behind": self.left + run.left_behind, "output_bytes": run.output_bytes,
                  "peak_memory_mib": round(run.peak_memory / MiB)}
        first = _verdict(run, seed, lesson, limits)
        if first.get("verdict") != "pass":
            result.update(first)
            return self._finish(ident, name_leftovers(result, run.beside))
        # Its own process said pass. Grade it again from outside, where nothing of it can reach the verdict.
        foreign, note = settled_foreign_processes(device) if lesson.needs_gpu else ([], None)
        result["gpu_check"] = note or "checked"
        if foreign:
            result.update({"clean": False, "foreign_gpu": foreign})
        # A process it started would start again beside the timing: then only correctness is graded.
        timed = lesson.needs_gpu and not run.beside
        remote = grade_remotely(self.sandbox, self.work, self.sandbox.inside(self.lib, self.work), self.cfg["grader"],
                                lesson, self.name, self.reference, limits.grading, device, limits.samples,
                                no_bench=not timed)
        result["seed"] = remote.seed
        result["output_bytes"] += remote.host.output_bytes if remote.host else 0
        if remote.host:
            result["left_behind"] += remote.host.left_behind
            result["peak_memory_mib"] = max(result["peak_memory_mib"], round(remote.host.peak_memory / MiB))
        result.update(_remote_verdict(remote, lesson, limits))
        result["verdict_to_end_s"] = round(remote.host_gone - remote.grader_ended, 2)
        before = remote.beside_before_verdict()
        after = [b for b in (remote.host.beside if remote.host else []) if b not in before]
        timing = "none" if not lesson.needs_gpu else "taken" if timed else "skipped"
        return self._finish(ident, name_leftovers(result, run.beside, before, timing, after))


def _verdict(run, seed, lesson, limits):
    """Status, verdict, detail (and the bench rows) of a finished grading run."""
    if run.limit:
        return {"status": run.limit, "verdict": None,
                "detail": f"stopped at the {run.limit} ({_limit_value(run.limit, limits.grading)})"}
    report, problem = read_report(run.report, seed, lesson)
    if run.report_overflow:
        problem = "the report channel received more than 4 MiB"
    if problem:
        return {"status": "report tampered", "verdict": None, "detail": problem}
    if report is None:
        if run.signal:
            return {"status": f"crashed (signal {run.signal}, {_signal_name(run.signal)})", "verdict": None,
                    "detail": run.output().strip()[-200:]}
        return {"status": "exited during grading", "verdict": None,
                "detail": f"the process exited with code {run.code} before the grader wrote its verdict"}
    if report.get("verdict") == "pass" and run.code != exitcodes.PASS:
        ended = f"signal {run.signal}" if run.signal else f"code {run.code}"
        return {"status": "report tampered", "verdict": None,
                "detail": f"the report says pass but the grading process ended with {ended}"}
    result = {"status": classify(report, run.code, False), "verdict": report.get("verdict"),
              "detail": report.get("reason", ""), "bench": report.get("bench", []), "cuda": report.get("cuda", "")}
    if report.get("driver"):
        result["driver"] = report["driver"]
    return result


def _remote_verdict(remote, lesson, limits):
    """Status, verdict, detail and bench rows of the grading from outside."""
    host = remote.host
    if host is not None and host.limit:
        return {"status": host.limit, "verdict": None,
                "detail": f"stopped at the {host.limit} ({_limit_value(host.limit, limits.grading)})"}
    if remote.timed_out:
        return {"status": "time limit", "verdict": None, "detail": f"stopped at the time limit ({limits.grading.seconds} s)"}
    report, problem = read_report(remote.report, remote.seed, lesson)
    if report is None:
        # The board's own grader failed: say so plainly, it is not the submission's doing.
        return {"status": "board error", "verdict": None,
                "detail": problem or ("the grader outside the sandbox ended with code "
                                      f"{remote.code} without a report: " + remote.grader_output.strip()[-300:])}
    result = {"verdict": report.get("verdict"), "detail": report.get("reason", ""), "bench": report.get("bench", []),
              "cuda": report.get("cuda", ""), "remote": True}
    for key in ("clocks", "remote_clock", "copy_gbps"):
        if report.get(key):
            result[key] = report[key]
    if report.get("driver"):
        result["driver"] = report["driver"]
    if report.get("host_lost"):
        if host is not None and host.signal:
            result["status"] = f"crashed (signal {host.signal}, {_signal_name(host.signal)})"
        else:
            result["status"] = "exited during grading"
        return result
    result["status"] = classify(report, remote.code, False)
    return result


def _limit_value(limit, limits):
    return {"time limit": f"{limits.seconds} s", "memory limit": f"{limits.memory_bytes // MiB} MiB",
            "output limit": f"{limits.output_bytes // MiB} MiB of output",
            "file size limit": f"{limits.file_bytes // MiB} MiB per file",
            "process limit": f"{limits.processes} processes"}.get(limit, "")
