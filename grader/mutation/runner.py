"""Grading mutants of a lesson's reference solution with the project's grader, and reporting.

A mutant is written to OUT/mutants/NAME.cu (.cpp for lesson 1) and graded by `./grade lessonN
--source FILE --no-bench --json ...`, on the CPU emulator (`--emulate`) or, with `gpu=True`, on the
GPU. Its verdict says what became of it:

  killed        the grader failed it (fail-correctness)
  timeout       it hung: the grader's watchdog reported a kernel that did not finish, or no verdict
                came within the per-mutant timeout (the watchdog would have caught it). Counts as killed.
  survived      every case passed: nothing the grader checks tells it from the reference
  not-compiled  fail-build; excluded from the score
  equivalent    declared in grader/mutation/equivalent/NN-slug.txt (not graded unless asked)
  error         no verdict for another reason (the grader crashed, no GPU, ...); excluded, reported

score = killed (timeouts included) / (compiled - equivalent), compiled = every mutant that built.

Results are cached in OUT/cache by the mutant's content (with the lesson, mode and seed): a
rerun grades only mutants it has not seen. A survivor is graded again when the grader itself
changed (its binary's hash), since a new case may kill it now.
"""
import datetime
import difflib
import fnmatch
import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from . import operators

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook.build import BUILD_DIR  # noqa: E402
from workbook.lessons import UsageError, all_lessons, find_lesson  # noqa: E402

EQUIVALENT_DIR = os.path.join(ROOT, "grader", "mutation", "equivalent")
DEFAULT_OUT_ROOT = os.path.join(BUILD_DIR, "mutation")
SUMMARY = os.path.join(ROOT, "docs", "results", "mutation.md")
KILLED, TIMEOUT, SURVIVED, NOT_COMPILED, EQUIVALENT, ERROR = (
    "killed", "timeout", "survived", "not-compiled", "equivalent", "error")
# ./grade's exit codes (DESIGN.md §4): pass, fail-correctness, fail-gate, fail-build, no GPU, usage.
# Any other status is a crash (a signal: the shell's 128 + N, or Python's 256 - N).
KNOWN_EXIT_CODES = (0, 1, 2, 3, 4, 64)
# A hang as the grader reports it, on the GPU (launch_guard.cu) and on the emulator (scheduler.cpp).
HANG = re.compile(r"did not finish within")


class MutationError(Exception):
    """A problem the user must fix (a stale equivalent entry, a malformed file)."""


# --------------------------------------------------------------------------------------------
# Equivalent mutants

def parse_equivalent(text, path="equivalent file"):
    """{name: reason} from a file of `name  reason` lines (`#` comments and blank lines ignored)."""
    entries = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2 or not parts[1].strip():
            raise MutationError(f"{path}:{number}: `{parts[0]}` has no reason; "
                                "write `NAME  why it cannot be told apart`")
        name, reason = parts[0], parts[1].strip()
        if not re.fullmatch(r"[a-z-]+@\d+(\.\d+)?", name):
            raise MutationError(f"{path}:{number}: `{name}` is not a mutant name (OPERATOR@LINE or OPERATOR@LINE.K)")
        if name in entries:
            raise MutationError(f"{path}:{number}: `{name}` is listed twice")
        entries[name] = reason
    return entries


def equivalent_path(lesson):
    return os.path.join(EQUIVALENT_DIR, f"{lesson.slug}.txt")


def load_equivalent(lesson, mutants):
    """The lesson's declared equivalent mutants; MutationError for an entry that names no mutant."""
    path = equivalent_path(lesson)
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        entries = parse_equivalent(f.read(), os.path.relpath(path, ROOT))
    check_stale(entries, mutants, os.path.relpath(path, ROOT))
    return entries


def check_stale(entries, mutants, path="equivalent file"):
    names = {m.name for m in mutants}
    stale = sorted(n for n in entries if n not in names)
    if stale:
        raise MutationError(f"{path}: no such mutant any more: {', '.join(stale)} (the reference changed? "
                            f"run scripts/mutate with --list and update the file)")


# --------------------------------------------------------------------------------------------
# Counting

def tally(statuses):
    """Counts and the score from a list of statuses (one per mutant)."""
    c = {s: 0 for s in (KILLED, TIMEOUT, SURVIVED, NOT_COMPILED, EQUIVALENT, ERROR)}
    for s in statuses:
        c[s] += 1
    killed = c[KILLED] + c[TIMEOUT]
    compiled = killed + c[SURVIVED] + c[EQUIVALENT]
    judged = compiled - c[EQUIVALENT]
    return {"mutants": len(statuses), "compiled": compiled, "killed": killed, "timeouts": c[TIMEOUT],
            "survived": c[SURVIVED], "equivalent": c[EQUIVALENT], "not_compiled": c[NOT_COMPILED],
            "errors": c[ERROR], "score": (killed / judged) if judged else None}


def format_score(score):
    return "—" if score is None else f"{100 * score:.1f}%"


# --------------------------------------------------------------------------------------------
# One mutant

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


def cache_key(lesson, mode, seed, content):
    h = hashlib.sha256()
    h.update(f"{lesson.name}\0{mode}\0{seed}\0".encode())
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


def _remove_grader_copies(lesson, mode, content, since):
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


def grade_one(lesson, mutant_path, content, work, mode, seed, timeout_s, keep_libs=False):
    """Grades one mutant file; returns (status, detail, seconds)."""
    json_path = mutant_path + ".json"
    try:
        os.remove(json_path)
    except OSError:
        pass
    cmd = [sys.executable, os.path.join(ROOT, "grade"), lesson.name, "--source", mutant_path, "--no-bench",
           "--json", json_path, "--seed", str(seed)]
    if mode == "emulator":
        cmd.append("--emulate")
    env = dict(os.environ, WORKBOOK_STATE_DIR=os.path.join(work, "state"))  # not the learner's progress
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
    with open(mutant_path + ".log", "w", encoding="utf-8") as f:
        f.write(output or "")
    if not keep_libs:
        _remove_grader_copies(lesson, mode, content, start)
    status, detail = classify(proc.returncode, report, output, timed_out, timeout_s)
    return status, detail, seconds


# --------------------------------------------------------------------------------------------
# A lesson

def lesson_mutants(lesson):
    with open(lesson.solution, encoding="utf-8") as f:
        text = f.read()
    return text, operators.enumerate_mutants(text)


def sample_mutants(mutants, k, key):
    """`k` mutants spread over the operators: each operator's mutants in a seeded order (the seed is `key`,
    so the same source gives the same sample), taken one operator at a time in turn; returned in source order."""
    groups = {}
    for m in mutants:
        groups.setdefault(m.operator, []).append(m)
    rng = random.Random(key)
    for name in sorted(groups):
        rng.shuffle(groups[name])
    picked = []
    while len(picked) < k and any(groups.values()):
        for name in sorted(groups):
            if groups[name] and len(picked) < k:
                picked.append(groups[name].pop())
    order = {m.name: i for i, m in enumerate(mutants)}
    return sorted(picked, key=lambda m: order[m.name])


def select(mutants, only=None, limit=None, sample=None, sample_key=""):
    """The mutants `--only` names (exact names, operator names or fnmatch patterns, comma-separated),
    then a stratified sample of `sample` of them, then the first `limit` of them."""
    chosen = mutants
    if only:
        patterns = [p.strip() for p in only.split(",") if p.strip()]
        unknown = [p for p in patterns if not any(_matches(m, p) for m in mutants)]
        if unknown:
            raise UsageError(f"--only: no mutant matches {', '.join(unknown)} (see --list)")
        chosen = [m for m in mutants if any(_matches(m, p) for p in patterns)]
    if sample is not None and sample < len(chosen):
        chosen = sample_mutants(chosen, sample, sample_key)
    if limit is not None:
        chosen = chosen[:limit]
    return chosen


def _matches(mutant, pattern):
    return mutant.name == pattern or mutant.operator == pattern or fnmatch.fnmatchcase(mutant.name, pattern)


def _git_commit():
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout.strip()
        return head or None
    except OSError:
        return None


def _source_changed(lesson):
    """True when the reference differs from the committed one."""
    try:
        rel = os.path.relpath(lesson.solution, ROOT)
        proc = subprocess.run(["git", "diff", "--quiet", "HEAD", "--", rel], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return proc.returncode == 1
    except OSError:
        return False


def run_lesson(lesson, out, mode="emulator", jobs=1, limit=None, only=None, seed=1, timeout_s=1200,
               fresh=False, check_equivalent=False, keep_libs=False, log=print, sample=None):
    """Grades the selected mutants of one lesson and writes OUT's reports; returns the results dict."""
    text, mutants = lesson_mutants(lesson)
    equivalent = load_equivalent(lesson, mutants)
    chosen = select(mutants, only, limit, sample, f"{lesson.slug}-{seed}")
    os.makedirs(os.path.join(out, "mutants"), exist_ok=True)
    os.makedirs(os.path.join(out, "cache"), exist_ok=True)
    work = out
    fingerprint = grader_fingerprint(mode, lesson)
    suffix = mutant_suffix(lesson)
    results = {}
    lock = threading.Lock()
    todo = []
    for m in chosen:
        if m.name in equivalent and not check_equivalent:
            results[m.name] = {"status": EQUIVALENT, "detail": equivalent[m.name], "seconds": 0.0, "cached": False}
            continue
        content = m.apply(text)
        key = cache_key(lesson, mode, seed, content)
        cached = _read_cache(out, key)
        if cached and not fresh and _reusable(cached, fingerprint):
            results[m.name] = dict(cached, cached=True)
            continue
        todo.append((m, content, key))
    log(f"{lesson.name}: {len(mutants)} mutants, {len(chosen)} selected, {len(chosen) - len(todo)} known "
        f"(cache or equivalent), {len(todo)} to grade on {graded_on(lesson, mode)}")
    done = [0]
    stopping = threading.Event()

    def work_one(item):
        if stopping.is_set():
            return
        m, content, key = item
        path = os.path.join(out, "mutants", m.name + suffix)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
        status, detail, seconds = grade_one(lesson, path, content, work, mode, seed, timeout_s, keep_libs)
        if stopping.is_set():
            return  # stopped by Ctrl-C: not a verdict
        fp = grader_fingerprint(mode, lesson)
        entry = {"status": status, "detail": detail, "seconds": round(seconds, 1), "grader": fp, "name": m.name,
                 "when": datetime.datetime.now().isoformat(timespec="seconds")}
        if status != ERROR:
            _write_cache(out, key, entry)
        with lock:
            results[m.name] = dict(entry, cached=False)
            done[0] += 1
            log(f"  [{done[0]}/{len(todo)}] {m.name:24} {status:12} {seconds:6.1f} s  {detail[:90]}")

    if todo:
        pool = ThreadPoolExecutor(max_workers=max(1, jobs))
        try:
            for future in [pool.submit(work_one, item) for item in todo]:
                future.result()
        except KeyboardInterrupt:
            stopping.set()
            stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)

    for m in chosen:
        r = results[m.name]
        if m.name in equivalent and r["status"] != EQUIVALENT:
            if r["status"] in (KILLED, TIMEOUT):
                r["detail"] = f"declared equivalent ({equivalent[m.name]}) but KILLED: {r['detail']}"
                r["status"] = ERROR
            else:
                r["status"] = EQUIVALENT
                r["detail"] = equivalent[m.name]
    report = _results_dict(lesson, mode, seed, text, mutants, chosen, results, limit, only, sample)
    write_reports(out, report, text, {m.name: m for m in mutants})
    return report


def _read_cache(out, key):
    try:
        with open(os.path.join(out, "cache", key + ".json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _write_cache(out, key, entry):
    path = os.path.join(out, "cache", key + ".json")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(entry, f, indent=1)
    os.replace(path + ".tmp", path)


def _reusable(entry, fingerprint):
    """A verdict that still holds: a kill stays a kill and a build failure a build failure; a
    survivor holds only for the grader that graded it."""
    if entry.get("status") in (KILLED, TIMEOUT, NOT_COMPILED):
        return True
    return entry.get("status") == SURVIVED and fingerprint is not None and entry.get("grader") == fingerprint


def _results_dict(lesson, mode, seed, text, mutants, chosen, results, limit, only, sample=None):
    rows = []
    for m in chosen:
        r = results[m.name]
        rows.append({"name": m.name, "operator": m.operator, "line": m.line, "description": m.description,
                     "status": r["status"], "detail": r.get("detail", ""), "seconds": r.get("seconds", 0.0),
                     "cached": r.get("cached", False)})
    counts = tally([r["status"] for r in rows])
    # Every graded mutant's time, cached ones included (the cache keeps how long each took).
    graded_times = [r["seconds"] for r in rows if r["status"] != EQUIVALENT and r["seconds"]]
    return {
        "lesson": lesson.name, "slug": lesson.slug, "source": os.path.relpath(lesson.solution, ROOT),
        "source_sha256": hashlib.sha256(text.encode()).hexdigest()[:16], "commit": _git_commit(),
        "source_modified": _source_changed(lesson), "mode": mode, "graded_on": graded_on(lesson, mode), "seed": seed,
        "when": datetime.datetime.now().isoformat(timespec="seconds"),
        "mutants_total": len(mutants), "selected": len(chosen),
        "partial": len(chosen) != len(mutants), "limit": limit, "only": only, "sample": sample,
        "counts": counts,
        "seconds_per_mutant": (round(sum(graded_times) / len(graded_times), 1) if graded_times else None),
        "mutants": rows,
    }


def table_header():
    return ("| lesson | mutants | compiled | killed | survived | equivalent | score |\n"
            "|---|---:|---:|---:|---:|---:|---:|")


def table_row(report):
    c = report["counts"]
    mutants = str(report["mutants_total"])
    if report["partial"]:
        mutants += f" ({report['selected']} graded)"
    return (f"| {report['lesson']} | {mutants} | {c['compiled']} | {c['killed']} | {c['survived']} | "
            f"{c['equivalent']} | {format_score(c['score'])} |")


def write_reports(out, report, text, by_name):
    """OUT/results.json, OUT/row.md (the lesson's table row), OUT/survivors.md and a diff per survivor."""
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out, "row.md"), "w", encoding="utf-8") as f:
        f.write(table_header() + "\n" + table_row(report) + "\n")
    diffs = os.path.join(out, "survivors")
    os.makedirs(diffs, exist_ok=True)
    for name in os.listdir(diffs):
        os.remove(os.path.join(diffs, name))
    lines = [f"# {report['lesson']}: surviving mutants", ""]
    survivors = [r for r in report["mutants"] if r["status"] == SURVIVED]
    if not survivors:
        lines.append("None.")
    for r in survivors:
        lines.append(f"- `{r['name']}`: {r['description']}")
        m = by_name[r["name"]]
        diff = difflib.unified_diff(text.splitlines(True), m.apply(text).splitlines(True),
                                    report["source"], report["source"] + f" ({r['name']})", n=2)
        with open(os.path.join(diffs, r["name"] + ".diff"), "w", encoding="utf-8") as f:
            f.writelines(diff)
    problems = [r for r in report["mutants"] if r["status"] == ERROR]
    if problems:
        lines += ["", "## Not graded (errors)", ""]
        lines += [f"- `{r['name']}`: {r['detail']}" for r in problems]
    with open(os.path.join(out, "survivors.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


# --------------------------------------------------------------------------------------------
# All lessons: docs/results/mutation.md

def write_summary(out_root=DEFAULT_OUT_ROOT, path=SUMMARY):
    """Merges OUT_ROOT/lesson*/results.json into one Markdown page; returns the reports merged."""
    reports = []
    for lesson in all_lessons():
        try:
            with open(os.path.join(out_root, lesson.name, "results.json"), encoding="utf-8") as f:
                reports.append(json.load(f))
        except (OSError, ValueError):
            continue
    if not reports:
        raise UsageError(f"no results under {out_root}: run scripts/mutate lessonN first")
    lines = [
        "# Mutation testing of the reference solutions",
        "",
        "Each mutant is the lesson's reference solution with one small edit (a dropped term of a check, a",
        "flipped comparison, a bound one off, a dropped barrier, ...), graded like any submission. A mutant",
        "the grader passes is a **survivor**: a wrong kernel nothing checks for, unless it is **equivalent**",
        "(it cannot be told from the reference; the reason is in `grader/mutation/equivalent/`).",
        "score = killed / (compiled − equivalent); a hang counts as killed, a mutant that does not compile",
        "is left out. `scripts/mutate lessonN` grades one lesson, `scripts/mutate --summary` writes this page;",
        "`grader/mutation/README.md` lists the operators.",
        "",
        table_header(),
    ]
    lines += [table_row(r) for r in reports]
    lines.append("")
    notes = []
    for r in reports:
        where = r.get("graded_on") or ("the GPU" if r["mode"] == "gpu" else "the CPU emulator")
        state = f"at {r['commit']}" + (" (reference modified)" if r.get("source_modified") else "")
        part = ""
        if r["partial"]:
            part = f"; partial: {r['selected']} of {r['mutants_total']} mutants"
            part += f" (--limit {r['limit']})" if r.get("limit") else ""
            part += (f" (--sample {r['sample']}: a sample spread over the operators, the same for the same source)"
                     if r.get("sample") else "")
            part += f" (--only {r['only']})" if r.get("only") else ""
        pace = f", {r['seconds_per_mutant']:g} s a mutant" if r.get("seconds_per_mutant") else ""
        notes.append(f"- {r['lesson']}: graded on {where} {state}, seed {r['seed']}, {r['when']}{pace}{part}.")
    lines += notes
    lines += ["", "## Survivors", ""]
    any_survivor = False
    for r in reports:
        survivors = [m for m in r["mutants"] if m["status"] == SURVIVED]
        if not survivors:
            continue
        any_survivor = True
        lines += [f"### {r['lesson']} (`{r['source']}`)", ""]
        lines += [f"- `{m['name']}`: {m['description']}" for m in survivors]
        lines.append("")
    if not any_survivor:
        lines += ["None.", ""]
    equivalents = [(r, m) for r in reports for m in r["mutants"] if m["status"] == EQUIVALENT]
    if equivalents:
        lines += ["## Equivalent (declared)", ""]
        lines += [f"- {r['lesson']} `{m['name']}` ({m['description']}): {m['detail']}" for r, m in equivalents]
        lines.append("")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    return reports


def lessons_named(name):
    """`all` or one lesson."""
    return all_lessons() if name == "all" else [find_lesson(name)]
