"""Grading the GPU lessons, 2 to 11, on the CPU emulator (docs/emulator.md).

Without a CUDA GPU (or with --emulate), the learner's unmodified .cu file is rewritten
(grader/emulator/tools/emu_rewrite.py), compiled with g++ against the emulator's CUDA
headers and runtime, and graded by wb-grader-emu: the grader's own cases, oracle and
failure reports, with the bandwidth gate and the cases too large for a CPU listed as not run.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess

from . import recipe
from .build import BUILD_DIR, BuildError, build_targets
from .lessons import ROOT, UsageError

CONFIG = os.path.join(BUILD_DIR, "emulator_config.json")
LABEL = "correctness on the CPU emulator; the bandwidth gate needs a GPU"


def gpu_present():
    """True when a CUDA GPU is visible (nvidia-smi lists one); WORKBOOK_NO_GPU=1 says there is none."""
    if os.environ.get("WORKBOOK_NO_GPU") == "1":
        return False
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        out = subprocess.run([smi, "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def missing_headers(lesson):
    """The CUDA headers the lesson's reference includes that the emulator does not provide.

    A lesson that needs one cannot be compiled for the emulator: it is built with nvcc instead, and
    without a GPU the grader says plainly that it needs one. Empty when nothing is missing (every
    lesson so far: the emulator has its own cuda_fp8.h for lesson 11).
    """
    if not lesson.solution:
        return []
    include = os.path.join(ROOT, "grader", "emulator", "include")
    with open(lesson.solution, encoding="utf-8") as f:
        wanted = re.findall(r'^\s*#\s*include\s*<(cuda\w*\.h)>', f.read(), flags=re.M)
    return [h for h in wanted if not os.path.exists(os.path.join(include, h))]


def _config():
    build_targets("wb-grader-emu")
    try:
        with open(CONFIG, encoding="utf-8") as f:
            return json.load(f)
    except OSError:
        raise BuildError("the CPU emulator is not part of this build: install Boost.Context "
                         "(Debian: apt install libboost-context-dev), then run make again")


def _library_key(lesson, cfg, content):
    """The cache key of a library compiled from `content`: the file, the emulator's tools and headers, the settings."""
    tool_bytes = b""
    # The emulator's own headers (cuda_runtime.h, cooperative_groups.h, cub/...) and the contract's
    # are compiled into the library too: a change to any of them makes a new one.
    headers = sorted(os.path.join(d, n) for d, _, names in os.walk(cfg["emulator_include"]) for n in names)
    headers += recipe.headers(lesson)
    for path in (cfg["rewrite"], cfg["adapter"], cfg["runtime"], *headers):
        with open(path, "rb") as f:
            tool_bytes += hashlib.sha256(f.read()).digest()
    settings = (str(lesson.number) + cfg["kernel_flags"] + cfg["cxx"]).encode()
    return hashlib.sha256(content + tool_bytes + settings).hexdigest()[:16]


def _rewrite(cfg, copy, shown):
    """Rewrites the copy of a submission for g++ (emu_rewrite.py); returns the rewritten file's path."""
    rewritten = copy + ".cpp"
    rewrite = subprocess.run([cfg["python"], cfg["rewrite"], copy, rewritten, "--display-name", shown],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if rewrite.returncode != 0:
        raise BuildError(f"{shown} could not be prepared for the CPU emulator", rewrite.stdout)
    return rewritten


def _compile_command(lesson, cfg, rewritten, *out):
    flags = [f for f in cfg["kernel_flags"].split(";") if f]
    return [cfg["cxx"], "-std=c++17", "-fPIC", "-fvisibility=hidden", *flags,
            "-I", cfg["emulator_include"], *recipe.flags(lesson, rewritten), "-x", "c++", "-c", cfg["adapter"], *out]


def compile_for_emulator(lesson, source, shown):
    """Compiles `source` for the emulator into a library cached by content; returns its path."""
    if not os.path.isfile(source):
        raise UsageError(f"no such file: {source}. Give the path of a .cu file.")
    cfg = _config()
    with open(source, "rb") as f:
        content = f.read()
    key = _library_key(lesson, cfg, content)
    out_dir = os.path.join(BUILD_DIR, "emulated")
    os.makedirs(out_dir, exist_ok=True)
    lib = os.path.join(out_dir, f"{lesson.name}-{key}.so")
    if os.path.exists(lib):
        return lib
    copy = os.path.join(out_dir, f"{lesson.name}-{key}.cu")
    with open(copy, "wb") as f:
        f.write(content)
    rewritten = _rewrite(cfg, copy, shown)
    obj = lib + ".o"
    proc = subprocess.run(_compile_command(lesson, cfg, rewritten, "-o", obj), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{shown} did not compile for the CPU emulator", proc.stdout.replace(copy, shown))
    runtime_dir = os.path.dirname(cfg["runtime"])
    link = [cfg["cxx"], "-shared", obj, "-o", lib + ".tmp", f"-L{runtime_dir}", "-lwbemu", f"-Wl,-rpath,{runtime_dir}"]
    proc = subprocess.run(link, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{shown} did not link for the CPU emulator", proc.stdout)
    os.replace(lib + ".tmp", lib)
    os.remove(obj)
    return lib


def check_for_emulator(lesson, source, shown):
    """Checks that `source` compiles for the emulator without generating code (g++ -fsyntax-only: the
    parse and every template instantiation, a fraction of the instrumented build's time); raises
    BuildError with the compiler's messages when it does not."""
    cfg = _config()
    with open(source, "rb") as f:
        content = f.read()
    out_dir = os.path.join(BUILD_DIR, "emulated")
    os.makedirs(out_dir, exist_ok=True)
    copy = os.path.join(out_dir, f"{lesson.name}-{_library_key(lesson, cfg, content)}-check.cu")
    with open(copy, "wb") as f:
        f.write(content)
    try:
        rewritten = _rewrite(cfg, copy, shown)
        proc = subprocess.run(_compile_command(lesson, cfg, rewritten, "-fsyntax-only"), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise BuildError(f"{shown} did not compile for the CPU emulator", proc.stdout.replace(copy, shown))
    finally:
        for path in (copy, copy + ".cpp"):
            try:
                os.remove(path)
            except OSError:
                pass


def grader_command(lesson, lib, shown, args, untouched_stub=False, reference=None, traffic=None):
    """The wb-grader-emu command line for one run; `untouched_stub`: the file is the stub as shipped;
    `reference` and `traffic`: the reference's library and the file for the traffic report's figures."""
    with open(CONFIG, encoding="utf-8") as f:
        cfg = json.load(f)
    cmd = [cfg["grader"], "--lesson", str(lesson.number), "--student", lib, "--source-name", shown]
    for flag, value in (("--seed", args.seed), ("--json", args.json), ("--cases", args.cases)):
        if value is not None:
            cmd += [flag, str(value)]
    if os.environ.get("WORKBOOK_WATCHDOG_SECONDS"):
        cmd += ["--watchdog", os.environ["WORKBOOK_WATCHDOG_SECONDS"]]
    if untouched_stub:
        cmd.append("--untouched-stub")
    if getattr(args, "fail_fast", False):
        cmd.append("--fail-fast")
    if reference and traffic:
        cmd += ["--reference", reference, "--traffic", traffic]
    return cmd


def wants_traffic(args):
    """The traffic report comes with a whole grade: not with --cases (a part of it), --no-bench or
    --build-only."""
    return not (args.cases or getattr(args, "no_bench", False) or getattr(args, "build_only", False))
