"""Grading mutants of a lesson's reference solution with the project's grader.

A mutant is written to OUT/mutants/NAME.cu (.cpp for lesson 1) and graded with `--fail-fast`, on the
CPU emulator or, with `gpu=True`, on the GPU. On the emulator the mutants are compiled together into
schemata (schema.py): one compile of many mutants, each graded with WORKBOOK_MUTANT naming it; a
mutant no schema can hold is compiled and graded alone by `./grade lessonN --source FILE --emulate`.
On the GPU every mutant is compiled alone. Its verdict says what became of it:

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
import collections
import datetime
import fnmatch
import hashlib
import json
import os
import random
import re
import subprocess
import sys
import threading
import time

from . import coverage, operators, schema, schema_compile
from .grading import (  # noqa: F401  (part of this module's interface)
    BUILD_DIR, EQUIVALENT, ERROR, HANG, KILLED, KNOWN_EXIT_CODES, NOT_COMPILED, SURVIVED, TIMEOUT, WATCHDOG_SECONDS, cache_key, classify,
    grade_in_schema, grade_one, graded_on, grader_fingerprint, mutant_suffix, remove_grader_copies, stop_all)
from .report import (  # noqa: F401
    DEFAULT_OUT_ROOT, SUMMARY, format_score, table_header, table_row, tally, write_reports, write_summary)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook.lessons import UsageError, all_lessons, find_lesson  # noqa: E402

EQUIVALENT_DIR = os.path.join(ROOT, "grader", "mutation", "equivalent")
# The detail of a survivor no case infects (coverage.py): it runs no case, and cannot fail one.
NOT_INFECTED = ("no case infects it: in the coverage run of the reference its edit never changed a value "
                "(nor was its place reached, where a value cannot be compared), so every case runs as for the reference")


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


_WHERE = []


def _where():
    """The machine a verdict was reached on, for the report: its CPUs and the C++ compiler that builds the
    emulator's kernels (the build's own, which need not be the system's `c++`)."""
    if not _WHERE:
        cxx = "c++"
        try:
            with open(os.path.join(BUILD_DIR, "emulator_config.json"), encoding="utf-8") as f:
                cxx = json.load(f).get("cxx") or cxx
        except (OSError, ValueError):
            pass
        try:
            version = subprocess.run([cxx, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True).stdout.splitlines()[0]
        except (OSError, IndexError):
            version = "c++"
        _WHERE.append(f"{os.cpu_count()} CPUs, {version}")
    return _WHERE[0]


def _git_commit():
    """The commit graded: WORKBOOK_COMMIT where the checkout's own history is not the one graded (a copy
    of the tree on another machine), else the checkout's HEAD."""
    if os.environ.get("WORKBOOK_COMMIT"):
        return os.environ["WORKBOOK_COMMIT"][:12]
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


# A lesson whose reference picks its plan by the memory's speed (Lesson.other_memories: lessons 4 and 5) has
# its survivors graded again with WBEMU_MEMORY=h200, in OUT/memory-h200, and a mutant killed on either memory
# counts as killed: the emulator's default memory (an H100's) never reaches the plan for faster memory.
SECOND_MEMORY = "h200"


def second_memory_out(out):
    return os.path.join(out, f"memory-{SECOND_MEMORY}")


def picks_plan_by_memory(lesson):
    return SECOND_MEMORY in lesson.other_memories


def on_second_memory(entry):
    """A verdict reached on the second memory, as the lesson's report shows it."""
    return dict(entry, detail=f"on an {SECOND_MEMORY.upper()}'s memory (WBEMU_MEMORY={SECOND_MEMORY}): "
                              f"{entry.get('detail', '')}", via=f"{entry.get('via', '')}, {SECOND_MEMORY} memory")


def run_lesson(lesson, out, mode="emulator", jobs=1, limit=None, only=None, seed=1, timeout_s=1200,
               fresh=False, check_equivalent=False, keep_libs=False, log=print, sample=None, schemata=True,
               stop_after=None, use_coverage=True, memory=None):
    """Grades the selected mutants of one lesson and writes OUT's reports; returns the results dict.
    `schemata`: on the emulator, compile the mutants together (schema.py) instead of one by one.
    `stop_after`: seconds after which no further mutant is started; the report then covers the graded
    ones (partial) and says how many were left. `use_coverage`: run a schema's mutants only on the cases
    that infect them (coverage.py). `memory`: grade on that emulated memory (WBEMU_MEMORY) instead of the
    default; without it, a lesson whose plan follows the memory has its survivors graded again on
    SECOND_MEMORY."""
    if memory:
        saved = os.environ.get("WBEMU_MEMORY")
        os.environ["WBEMU_MEMORY"] = memory
        try:
            return _run_lesson(lesson, out, mode, jobs, limit, only, seed, timeout_s, fresh, check_equivalent,
                               keep_libs, log, sample, schemata, stop_after, use_coverage, memory)
        finally:
            if saved is None:
                os.environ.pop("WBEMU_MEMORY", None)
            else:
                os.environ["WBEMU_MEMORY"] = saved
    if os.environ.get("WBEMU_MEMORY"):
        raise UsageError(f"WBEMU_MEMORY={os.environ['WBEMU_MEMORY']} is set: scripts/mutate grades on the default "
                         f"memory and, for a lesson whose plan follows the memory, again on {SECOND_MEMORY}; unset it")
    return _run_lesson(lesson, out, mode, jobs, limit, only, seed, timeout_s, fresh, check_equivalent, keep_libs,
                       log, sample, schemata, stop_after, use_coverage, None)


def _run_lesson(lesson, out, mode, jobs, limit, only, seed, timeout_s, fresh, check_equivalent, keep_libs, log,
                sample, schemata, stop_after, use_coverage, memory):
    text, mutants = lesson_mutants(lesson)
    equivalent = load_equivalent(lesson, mutants)
    chosen = select(mutants, only, limit, sample, f"{lesson.slug}-{seed}")
    # The grader's command lines (workbook.emulated) read the watchdog from this process's environment.
    os.environ.setdefault("WORKBOOK_WATCHDOG_SECONDS", WATCHDOG_SECONDS)
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
        key = cache_key(lesson, mode, seed, content, memory)
        cached = _read_cache(out, key)
        if cached and not fresh and _reusable(cached, fingerprint):
            results[m.name] = dict(cached, cached=True)
            continue
        todo.append((m, content, key))
    on = graded_on(lesson, mode) + (f", {memory.upper()} memory" if memory else "")
    log(f"{lesson.name}: {len(mutants)} mutants, {len(chosen)} selected, {len(chosen) - len(todo)} known "
        f"(cache or equivalent), {len(todo)} to grade on {on}")
    started = time.time()
    deadline = started + stop_after if stop_after else None
    built, in_schema, infected = [], {}, {}
    use_schemata = schemata and mode == "emulator" and lesson.needs_gpu and len(todo) > 1
    prepared_s = 0.0
    done = [0]
    stopping = threading.Event()

    def work_one(item):
        if stopping.is_set() or (deadline and time.time() > deadline):
            return
        m, content, key = item
        path = os.path.join(out, "mutants", m.name + suffix)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
        if m.name in in_schema:
            s, number = in_schema[m.name]
            cases = infected[s.path].cases_for(number) if infected.get(s.path) else None
            if cases == []:
                status, detail, seconds = SURVIVED, NOT_INFECTED, 0.0
                via = "coverage"
            else:
                status, detail, seconds = grade_in_schema(lesson, s.lib, s.shown, number, path, seed, timeout_s,
                                                          cases)
                via = "schema" if cases is None else f"schema, {len(cases)} case(s)"
        else:
            status, detail, seconds = grade_one(lesson, path, content, work, mode, seed, timeout_s, keep_libs)
            via = "alone"
        if stopping.is_set():
            return  # stopped by Ctrl-C: not a verdict
        fp = grader_fingerprint(mode, lesson)
        entry = {"status": status, "detail": detail, "seconds": round(seconds, 1), "grader": fp, "name": m.name,
                 "via": via, "when": datetime.datetime.now().isoformat(timespec="seconds"), "where": _where()}
        if status != ERROR:
            _write_cache(out, key, entry)
        with lock:
            results[m.name] = dict(entry, cached=False)
            done[0] += 1
            log(f"  [{done[0]}/{len(todo)}] {m.name:24} {status:12} {seconds:6.1f} s  {via:6} {detail[:80]}")

    if todo:
        queue = WorkQueue(jobs, work_one)
        try:
            if use_schemata:
                pairs = schema_compile.numbered(mutants, [m for m, _, _ in todo])
                placed, unplaced = schema.switches(text, pairs)
                alone = {m.name for _, m in unplaced}
                if alone:
                    log(f"  {len(alone)} mutant(s) edit a constant expression or a place no switch can hold: "
                        "compiled one by one, starting while the schema is built")
                # The mutants no schema can hold are compiled alone while the schema is prepared; once it is,
                # its mutants (a fraction of a second each when killed) go ahead of those still waiting.
                queue.add_last([item for item in todo if item[0].name in alone])
                built, singles = schema_compile.prepare(lesson, text, placed, pairs, out, seed, timeout_s, log)
                for sc in built if use_coverage else []:
                    t0 = time.time()
                    folder = os.path.join(out, "coverage", os.path.basename(sc.path))
                    infected[sc.path] = coverage.infection(lesson, sc, folder, seed, timeout_s, jobs, log)
                    if infected[sc.path]:
                        n = sum(1 for k in sc.numbers.values() if infected[sc.path].cases_for(k) == [])
                        log(f"  coverage of {os.path.basename(sc.path)}: {len(infected[sc.path].by_case)} case(s) "
                            f"run one by one in {time.time() - t0:.0f} s; {n} of its mutants infected by none")
                prepared_s = time.time() - started
                single_names = {m.name for m in singles}
                for sc in built:
                    for name, number in sc.numbers.items():
                        if name not in single_names:
                            in_schema[name] = (sc, number)
                queue.add_first([item for item in todo if item[0].name in in_schema])
                queue.add_last([item for item in todo if item[0].name in single_names])
            else:
                queue.add_last(todo)
            queue.finish()
        except KeyboardInterrupt:
            stopping.set()
            stop_all()
            queue.cancel()
            raise
    if not keep_libs:
        for s in built:
            remove_grader_copies(lesson, mode, s.content, started)
    left = [m for m in chosen if m.name not in results]
    if left:
        log(f"{lesson.name}: stopped after {stop_after:g} s (--stop-after): {len(left)} mutant(s) not graded")
        chosen = [m for m in chosen if m.name in results]
    run = {"graded": len(todo) - len(left), "not_graded": len(left), "stop_after": stop_after,
           "wall_seconds": round(time.time() - started, 1), "jobs": jobs, "cpus": os.cpu_count(),
           "schemata": len(built), "in_schemata": len(in_schema), "schema_seconds": round(prepared_s, 1)}

    if memory is None and mode == "emulator" and picks_plan_by_memory(lesson) and not left:
        again = [m.name for m in chosen if results[m.name]["status"] == SURVIVED and
                 (m.name not in equivalent or check_equivalent)]
        if again:
            log(f"{lesson.name}: its plan follows the memory's speed; {len(again)} survivor(s) graded again with "
                f"WBEMU_MEMORY={SECOND_MEMORY}")
            second = run_lesson(lesson, second_memory_out(out), mode, jobs, None, ",".join(again), seed, timeout_s,
                                fresh, check_equivalent, keep_libs, log, None, schemata, None, use_coverage,
                                SECOND_MEMORY)
            for row in second["mutants"]:
                if row["status"] in (KILLED, TIMEOUT):
                    results[row["name"]] = on_second_memory(dict(row, cached=row.get("cached", False)))
            run["second_memory"] = {"memory": SECOND_MEMORY, "graded": len(again),
                                    "killed": sum(r["status"] in (KILLED, TIMEOUT) for r in second["mutants"])}
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
    report["run"] = run
    report["not_graded"] = [m.name for m in left]
    write_reports(out, report, text, {m.name: m for m in mutants})
    return report


def report_from_cache(lesson, out, mode="emulator", seed=1, only=None, limit=None, sample=None, log=print):
    """Writes OUT's reports from the verdicts cached in OUT/cache for the current mutant list and
    selection, grading nothing: a run stopped part way (a grader rebuilt under it, Ctrl-C) leaves every
    verdict it reached there. A selected mutant with no cached verdict is listed as not graded and makes
    the report partial. A cached survivor is kept even where another grader build graded it (a rerun
    would grade it again); the log and results.json count those."""
    text, mutants = lesson_mutants(lesson)
    equivalent = load_equivalent(lesson, mutants)
    chosen = select(mutants, only, limit, sample, f"{lesson.slug}-{seed}")
    if not os.path.isdir(os.path.join(out, "cache")):
        raise UsageError(f"--from-cache: no cache in {out} (grade the lesson there first, or name its folder "
                         "with --out)")
    fingerprint = grader_fingerprint(mode, lesson)
    results, missing, other_grader = {}, [], 0
    for m in chosen:
        if m.name in equivalent:
            results[m.name] = {"status": EQUIVALENT, "detail": equivalent[m.name], "seconds": 0.0, "cached": False}
            continue
        cached = _read_cache(out, cache_key(lesson, mode, seed, m.apply(text)))
        if not cached or cached.get("status") not in (KILLED, TIMEOUT, SURVIVED, NOT_COMPILED):
            missing.append(m)
            continue
        other_grader += not _reusable(cached, fingerprint)
        results[m.name] = dict(cached, cached=True)
        if cached["status"] == SURVIVED and mode == "emulator" and picks_plan_by_memory(lesson):
            again = _read_cache(second_memory_out(out), cache_key(lesson, mode, seed, m.apply(text), SECOND_MEMORY))
            if again and again.get("status") in (KILLED, TIMEOUT):
                results[m.name] = on_second_memory(dict(again, cached=True))
    graded = [m for m in chosen if m.name in results]
    log(f"{lesson.name}: {len(mutants)} mutants, {len(chosen)} selected: {len(graded)} with a verdict in the "
        f"cache or declared equivalent, {len(missing)} not graded; nothing graded now")
    if other_grader:
        log(f"  {other_grader} cached survivor(s) were graded by another grader build than the one built now")
    run = {"from_cache": True, "graded": 0, "not_graded": len(missing), "survivors_other_grader": other_grader,
           "jobs": 0, "cpus": os.cpu_count()}
    report = _results_dict(lesson, mode, seed, text, mutants, graded, results, limit, only, sample)
    report["run"] = run
    report["not_graded"] = [m.name for m in missing]
    write_reports(out, report, text, {m.name: m for m in mutants})
    return report


class WorkQueue:
    """`jobs` threads running `work(item)` on the items given, in the queue's order: `add_first` puts
    items ahead of those still waiting, `add_last` behind them."""

    def __init__(self, jobs, work):
        self._items = collections.deque()
        self._cond = threading.Condition()
        self._closed = False
        self._work = work
        self._errors = []
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(max(1, jobs))]
        for t in self._threads:
            t.start()

    def add_first(self, items):
        with self._cond:
            self._items.extendleft(reversed(items))
            self._cond.notify_all()

    def add_last(self, items):
        with self._cond:
            self._items.extend(items)
            self._cond.notify_all()

    def _run(self):
        while True:
            with self._cond:
                while not self._items and not self._closed:
                    self._cond.wait()
                if not self._items:
                    return
                item = self._items.popleft()
            try:
                self._work(item)
            except Exception as e:  # noqa: BLE001  (reported once every thread is done)
                self._errors.append(e)

    def finish(self):
        """No more items: waits until every one is done (Ctrl-C still reaches the caller)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for t in self._threads:
            while t.is_alive():
                t.join(0.5)
        if self._errors:
            raise self._errors[0]

    def cancel(self):
        with self._cond:
            self._items.clear()
            self._closed = True
            self._cond.notify_all()
        for t in self._threads:
            t.join()


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
                     "via": r.get("via", ""), "where": r.get("where", ""), "when": r.get("when", ""),
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


def lessons_named(name):
    """`all` or one lesson."""
    return all_lessons() if name == "all" else [find_lesson(name)]
