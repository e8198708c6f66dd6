"""Which cases can kill which mutant of a schema: the schema run once as the reference, case by case, in
coverage mode (schema.py's WORKBOOK_MUTANT_COVERAGE).

In coverage mode every switch evaluates, beside the reference's value, each mutant's arm where that has no
effect (comparisons and arithmetic on values), and notes mutant K as *infected* when the two differ; where
an arm cannot be evaluated beside the reference's (a call, a memory access, a statement), reaching the
place is the note. A case in which mutant K is never infected runs exactly as it runs for the reference,
so it passes for K too: K need only run the cases that infected it, and a mutant no case infects survives
without running (no case of the grader makes its edit change anything). The run before any case (the
library's load and the plan, made in every process) is recorded apart: a mutant infected there runs every
case.
"""
import os
import subprocess
import types
from concurrent.futures import ThreadPoolExecutor

from . import grading, schema

NO_CASE = "=__no_case_at_all__"  # a --cases filter no case matches: the plan is made, nothing runs


class Infection:
    """The coverage of one schema: the mutants infected before any case, and in each case."""

    def __init__(self, setup, by_case):
        self.setup = setup
        self.by_case = by_case

    def cases_for(self, number):
        """The cases that can kill mutant `number`: None for every case, [] for none."""
        if number in self.setup:
            return None
        return sorted(c for c, infected in self.by_case.items() if number in infected)


def case_names(lesson, lib):
    """Every case of the lesson's plan (wb-grader-emu --list-cases)."""
    from workbook import emulated
    cfg = emulated._config()
    proc = subprocess.run([cfg["grader"], "--list-cases", "--lesson", str(lesson.number), "--student", lib],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"--list-cases failed: {proc.stdout.strip()[-300:]}")
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def _run(lesson, sc, cases, path, seed, timeout_s):
    """One coverage run of schema `sc` as the reference with the --cases filter `cases`; the exit code."""
    from workbook import emulated
    args = types.SimpleNamespace(seed=seed, json=None, cases=cases, fail_fast=False)
    cmd = emulated.grader_command(lesson, sc.lib, sc.shown, args)
    env = grading.grading_env(**{schema.ENV: "0", schema.COVERAGE_ENV: path})
    try:
        os.remove(path)
    except OSError:
        pass
    try:
        proc = subprocess.run(cmd, cwd=grading.ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, "no verdict within the timeout"
    return proc.returncode, proc.stdout


def _read(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return set()
    return {k for k, b in enumerate(data) if b}


def infection(lesson, sc, folder, seed, timeout_s, jobs=1, log=print):
    """The Infection of schema `sc`, or None when a coverage run did not pass (the schema is then graded
    without it)."""
    os.makedirs(folder, exist_ok=True)
    names = case_names(lesson, sc.lib)
    setup_path = os.path.join(folder, "setup.cov")
    code, output = _run(lesson, sc, NO_CASE, setup_path, seed, timeout_s)
    if code not in (64,):  # "no case matches": the plan was made and nothing ran
        log(f"  coverage: the run without cases ended with {code}: {(output or '').strip()[-200:]}")
        return None
    setup = _read(setup_path)

    def one(item):
        k, name = item
        path = os.path.join(folder, f"case-{k}.cov")
        return name, path, _run(lesson, sc, "=" + name, path, seed, timeout_s)

    by_case = {}
    failed = []
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for name, path, (code, output) in pool.map(one, enumerate(names)):
            if code != 0:
                failed.append(f"{name} ({code}: {(output or '').strip().splitlines()[-1:]})")
                continue
            by_case[name] = _read(path)
    if failed:
        log(f"  coverage: the reference did not pass {len(failed)} case(s) alone, e.g. {failed[0][:200]}; "
            "its mutants run every case")
        return None
    return Infection(setup, by_case)
