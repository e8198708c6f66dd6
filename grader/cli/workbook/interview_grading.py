"""Building and grading the candidate's file for `check` and `submit`.

Results come from the grader's JSON report (`--json`), never from its terminal text; the terminal
text is shown to the candidate as the grader wrote it. A run that could not grade (no usable GPU, a
GPU too old for the lesson) is recorded but not counted as a failed attempt. A report marked
`"emulated": true` (the grader's CPU emulator) is a correctness-only result: no bandwidth, no gate.
"""
import json
import os
import subprocess
import types

from . import emulated, exitcodes
from .build import BuildError, build_targets, compile_source, grader_command
from .interview_content import interview_file
from .interview_state import show
from .lessons import UsageError


def _on_emulator(lesson):
    """A GPU lesson on a machine without a GPU: graded for correctness on the CPU emulator, where it is built
    (unless WORKBOOK_GRADER names the grader to run)."""
    return (lesson.needs_gpu and not os.environ.get("WORKBOOK_GRADER") and not emulated.gpu_present()
            and os.path.exists(emulated.CONFIG) and not emulated.missing_headers(lesson))


def _command(lesson, lib, shown, seed, json_path, cases=None, no_bench=False):
    if _on_emulator(lesson):
        args = types.SimpleNamespace(seed=seed, json=json_path, cases=cases)
        return emulated.grader_command(lesson, lib, shown, args)
    return grader_command(lesson, lib, shown, seed=seed, json_path=json_path, cases=cases, no_bench=no_bench)


def _build(lesson, source, shown):
    """The compiled submission's path, or (None, attempt) when it did not compile.

    `source` is what is compiled (a submit compiles its kept copy); `shown` is the candidate's own file,
    which the compiler's messages name instead.
    """
    on_emulator = _on_emulator(lesson)
    print(f"building {lesson.name} ({show(shown)}){' for the CPU emulator' if on_emulator else ''} ...", flush=True)
    try:
        if on_emulator:
            return emulated.compile_for_emulator(lesson, source, show(shown)), None
        build_targets("wb-grader", f"{lesson.name}_reference")
        return compile_source(lesson, source), None
    except BuildError as e:
        message, output = str(e).replace(source, show(shown)), e.output.replace(source, show(shown))
        print(f"\n{message}:\n\n{output}\n" if output else f"\n{message}\n")
        return None, {"verdict": "fail-build", "reason": message, "counted": True, "code": exitcodes.FAIL_BUILD,
                      "cases_passed": 0, "cases_total": 0, "failed": [], "bench": []}


def _read_report(path, code):
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        if isinstance(report, dict) and report.get("verdict"):
            return report
    except (OSError, ValueError):
        pass
    status = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
    return {"verdict": exitcodes.VERDICTS.get(code, "error"),
            "reason": f"the grader {status} without writing its report", "cases": [], "bench": []}


def summarise(report, code):
    """What the interview keeps of one grader report."""
    cases = report.get("cases") or []
    ran = [c for c in cases if not c.get("skipped")]
    emulated = report.get("emulated") is True
    verdict = report.get("verdict", "error")
    return {
        "verdict": verdict,
        "reason": report.get("reason", ""),
        "code": code,
        "counted": verdict != "no-gpu",
        "emulated": emulated,
        "cases_passed": sum(1 for c in ran if c.get("passed")),
        "cases_total": len(ran),
        "failed": [c.get("name", "?") for c in ran if not c.get("passed")],
        "bench": [] if emulated else report.get("bench") or [],
        "copy_gbps": report.get("copy_gbps"),
        "gate_fraction": report.get("gate_fraction"),
        "gpu": report.get("gpu", ""),
        "seed": report.get("seed"),
    }


def check(lesson, source, out_dir, seed, patterns):
    """The interviewer's cases: one grader run over the lesson's check patterns, the same seed every
    check, no timing."""
    lib, failed_build = _build(lesson, source, source)
    if failed_build:
        return failed_build
    path = os.path.join(out_dir, "check.json")
    cmd = _command(lesson, lib, show(source), seed, path, cases=",".join(patterns), no_bench=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    report = _read_report(path, proc.returncode)
    names = [c.get("name", "") for c in report.get("cases") or []]
    if report.get("verdict") != "no-gpu":
        missing = [p for p in patterns if not any(p in n for n in names)]
        if missing:
            raise UsageError(f"{show(interview_file(lesson))} lists the check case '{missing[0]}', which "
                             f"{lesson.name}'s grader does not have; fix the lesson's list under '## Cases run by check'")
    print(proc.stdout.rstrip("\n"), flush=True)
    merged = {"verdict": report.get("verdict"), "reason": report.get("reason", ""), "cases": report.get("cases") or [],
              "bench": [], "gpu": report.get("gpu"), "seed": report.get("seed"),
              "emulated": report.get("emulated") is True}
    return summarise(merged, proc.returncode)


def submit(lesson, snapshot, source, json_path, seed):
    """Every case on fresh inputs, then the gate: the grader's full run, its output streamed.

    The kept copy `snapshot` is graded, so what is recorded is exactly what was submitted even if the
    candidate edits `source` meanwhile; messages name `source`.
    """
    lib, failed_build = _build(lesson, snapshot, source)
    if failed_build:
        return failed_build
    cmd = _command(lesson, lib, show(source), seed, json_path)
    code = subprocess.call(cmd)
    return summarise(_read_report(json_path, code), code)
