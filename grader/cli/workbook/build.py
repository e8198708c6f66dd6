"""Building what a grading run needs: the grader, the reference, and the submission.

The exercise is built by CMake (`make lessonN`); a `--source` file is compiled here with the
same compiler and flags, into a library cached by the file's content, so a compile error in
one learner's file never touches the build of anything else.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess

from . import recipe
from .lessons import ROOT, UsageError

BUILD_DIR = os.environ.get("WORKBOOK_BUILD_DIR", os.path.join(ROOT, "build"))


class BuildError(Exception):
    """The submission (or the project) did not compile; `output` holds the compiler's lines."""

    def __init__(self, message, output=""):
        super().__init__(message)
        self.output = output


def _run(cmd, cwd=ROOT):
    proc = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def _compiler_lines(output):
    """The compiler's own lines, without the build tool's progress chatter."""
    keep = []
    for line in output.splitlines():
        if re.match(r"^\s*\[\s*\d+%\]", line) or re.match(r"^g?make(\[\d+\])?:", line):
            continue
        if line.startswith(("Consolidate compiler generated dependencies", "Scanning dependencies")):
            continue
        keep.append(line)
    return "\n".join(keep).strip()


@contextlib.contextmanager
def _build_lock():
    """One build at a time per build tree: parallel ./grade runs (the leaderboard, gpu-check) share it."""
    os.makedirs(BUILD_DIR, exist_ok=True)
    with open(os.path.join(BUILD_DIR, ".workbook-build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def configure():
    """Configures build/ once; later builds reuse it."""
    if os.path.exists(os.path.join(BUILD_DIR, "CMakeCache.txt")):
        return
    if not shutil.which("cmake"):
        raise BuildError("cmake is not installed: install CMake 3.24 or newer (Debian: apt install cmake)")
    code, out = _run(["cmake", "-S", ROOT, "-B", BUILD_DIR, "-DCMAKE_BUILD_TYPE=Release"])
    if code != 0:
        raise BuildError("configuring the project failed (see the lines above)", out)


def build_targets(*targets):
    """Builds CMake targets (only what is stale is rebuilt)."""
    with _build_lock():
        configure()
        jobs = str(os.cpu_count() or 2)
        code, out = _run(["cmake", "--build", BUILD_DIR, "-j", jobs, "--target", *targets])
    if code != 0:
        raise BuildError("the build failed", _compiler_lines(out))


def config():
    path = os.path.join(BUILD_DIR, "workbook_config.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def library(lesson, which):
    """Path of build/lib/lessonN_{exercise,reference}.so."""
    return os.path.join(BUILD_DIR, "lib", f"{lesson.name}_{which}.so")


def compile_command(lesson, source_copy, out):
    """The compiler command that builds `source_copy` (a submission's bytes) into the library `out`."""
    cfg = config()
    common = recipe.flags(lesson, source_copy)
    adapter = cfg["adapter_cpp"] if not lesson.needs_gpu else cfg["adapter_cu"]
    if not lesson.needs_gpu:
        return [cfg["cxx"], "-std=c++17", "-O2", "-fPIC", "-shared", "-fvisibility=hidden", *common,
                "-x", "c++", adapter, "-o", out]
    archs = [a for a in cfg["cuda_architectures"].split(",") if a]
    gencode = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    return [cfg["nvcc"], "-std=c++17", "-O3", *gencode, "--expt-relaxed-constexpr", "-cudart", "shared",
            "-Xcompiler", "-fPIC,-fvisibility=hidden", "-shared", *common, adapter, "-o", out,
            f"-L{cfg['cuda_library_dir']}"]


def compile_source(lesson, source):
    """Compiles any file written against the lesson's contract; returns the library's path."""
    if not os.path.isfile(source):
        raise UsageError(f"no such file: {source}. Give the path of a .cu file (a .cpp file for lesson 1).")
    cfg = config()
    with open(source, "rb") as f:
        content = f.read()
    adapter = cfg["adapter_cpp"] if not lesson.needs_gpu else cfg["adapter_cu"]
    with open(adapter, "rb") as f:
        built_with = f.read()
    for path in recipe.headers(lesson):
        with open(path, "rb") as f:
            built_with += f.read()
    key = hashlib.sha256(content + built_with + cfg["cuda_architectures"].encode()).hexdigest()[:16]
    out_dir = os.path.join(BUILD_DIR, "submissions")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, f"{lesson.name}-{key}.so")
    if os.path.exists(out):
        return out
    # The file is copied beside the library so the adapter includes exactly the bytes that were hashed.
    copy = os.path.join(out_dir, f"{lesson.name}-{key}.src")
    with open(copy, "wb") as f:
        f.write(content)
    cmd = compile_command(lesson, copy, out + ".tmp")
    code, output = _run(cmd)
    if code != 0:
        # Point the compiler's messages at the learner's file, not the hashed copy.
        raise BuildError(f"{source} did not compile", output.replace(copy, source))
    os.replace(out + ".tmp", out)
    return out


def grader_command(lesson, lib, source_name, seed=None, json_path=None, cases=None, samples=None,
                   no_bench=False, full_bench=False, untouched_stub=False, fail_fast=False):
    """The grader's command line for one compiled submission.

    `WORKBOOK_GRADER` names another grader program to run instead of the built one (the interview
    tests use a stand-in that replays recorded reports, to cover GPU lessons on a machine without one).
    """
    cfg = config()
    grader = os.environ.get("WORKBOOK_GRADER") or cfg["grader"]
    cmd = [grader, "--lesson", str(lesson.number), "--student", lib, "--source-name", source_name]
    if lesson.needs_gpu:
        cmd += ["--reference", library(lesson, "reference")]
    for flag, value in (("--seed", seed), ("--json", json_path), ("--cases", cases), ("--samples", samples)):
        if value is not None:
            cmd += [flag, str(value)]
    if os.environ.get("WORKBOOK_WATCHDOG_SECONDS"):
        cmd += ["--watchdog", os.environ["WORKBOOK_WATCHDOG_SECONDS"]]
    if untouched_stub:
        cmd.append("--untouched-stub")  # the grader then says plainly that the file is still the stub
    if no_bench:
        cmd.append("--no-bench")
    if full_bench:
        cmd.append("--full-bench")
    if fail_fast:
        cmd.append("--fail-fast")
    return cmd

