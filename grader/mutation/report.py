"""The mutation reports: counts and the score, a lesson's table row, its survivors, and the page
docs/results/mutation.md that merges every lesson's results."""
import difflib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook.build import BUILD_DIR  # noqa: E402
from workbook.lessons import UsageError, all_lessons  # noqa: E402

from .grading import EQUIVALENT, ERROR, KILLED, NOT_COMPILED, SURVIVED, TIMEOUT  # noqa: E402

DEFAULT_OUT_ROOT = os.path.join(BUILD_DIR, "mutation")
SUMMARY = os.path.join(ROOT, "docs", "results", "mutation.md")


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
    not_graded = report.get("not_graded") or []
    if not_graded:
        lines += [f"Partial: {len(not_graded)} of the {report['selected'] + len(not_graded)} selected mutants have "
                  "no verdict yet (listed at the end); the counts cover the others.", ""]
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
    if not_graded:
        lines += ["", "## Not graded (no verdict yet)", ""]
        lines += [f"- `{name}`" for name in not_graded]
    with open(os.path.join(out, "survivors.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


# --------------------------------------------------------------------------------------------
# All lessons: docs/results/mutation.md

BEFORE = os.path.join(ROOT, "grader", "mutation", "first_run.json")
# Written by hand: what the numbers cannot say (why a lesson is not graded yet, what a survivor
# needs); write_summary copies it into the page under "Notes".
NOTES = os.path.join(ROOT, "grader", "mutation", "page_notes.md")


def save_first_run(out_root=DEFAULT_OUT_ROOT, path=BEFORE):
    """Keeps each lesson's counts as they stand now (the first full grading, before new cases and
    equivalent mutants) in `path`, so the page can show them beside the latest; returns them."""
    first = {}
    for lesson in all_lessons():
        try:
            with open(os.path.join(out_root, lesson.name, "results.json"), encoding="utf-8") as f:
                r = json.load(f)
        except (OSError, ValueError):
            continue
        first[r["lesson"]] = {"mutants": r["mutants_total"], "selected": r["selected"], "counts": r["counts"],
                              "commit": r.get("commit"), "when": r.get("when")}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(first, f, indent=1, sort_keys=True)
        f.write("\n")
    return first


def _first_run(path=BEFORE):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def write_summary(out_root=DEFAULT_OUT_ROOT, path=SUMMARY, first_run=BEFORE, notes_path=NOTES):
    """Merges OUT_ROOT/lesson*/results.json into one Markdown page (with the counts kept in `first_run`
    beside them, where that file exists, a row for every lesson not graded yet, and the hand-written
    notes at `notes_path`); returns the reports merged."""
    reports = []
    ungraded = []
    for lesson in all_lessons():
        try:
            with open(os.path.join(out_root, lesson.name, "results.json"), encoding="utf-8") as f:
                reports.append(json.load(f))
        except (OSError, ValueError):
            ungraded.append(lesson)
            continue
    if not reports:
        raise UsageError(f"no results under {out_root}: run scripts/mutate lessonN first")
    first = _first_run(first_run)
    lines = [
        "# Mutation testing of the reference solutions",
        "",
        "Each mutant is the lesson's reference solution with one small edit (a dropped term of a check, a",
        "flipped comparison, a bound one off, a dropped barrier, ...), graded like any submission. A mutant",
        "the grader passes is a **survivor**: a wrong kernel nothing checks for, unless it is **equivalent**",
        "(it cannot be told from the reference; the reason is in `grader/mutation/equivalent/`).",
        "score = killed / (compiled − equivalent); a hang counts as killed, a mutant that does not compile",
        "is left out. `scripts/mutate lessonN` grades one lesson, `scripts/mutate --summary` writes this page;",
        "`grader/mutation/README.md` lists the operators and says how a mutant is graded.",
        "",
    ]
    header = table_header()
    if first:
        top, rule = header.split("\n")
        header = top + " first full run |\n" + rule + "---:|"
    lines.append(header)
    for r in reports:
        row = table_row(r)
        if first:
            row += f" {_first_score(first.get(r['lesson']))} |"
        lines.append(row)
    for lesson in ungraded:
        row = f"| {lesson.name} | {_mutant_count(lesson)} | — | — | — | — | not graded |"
        if first:
            row += f" {_first_score(first.get(lesson.name))} |"
        lines.append(row)
    lines.append("")
    if first:
        lines += [
            "*first full run*: every mutant graded once with the cases and equivalent-mutant files as they",
            "were before this table's survivors were worked through (`grader/mutation/first_run.json`,",
            "killed / (compiled − equivalent then)).",
            "",
        ]
    notes = []
    for r in reports:
        where = r.get("graded_on") or ("the GPU" if r["mode"] == "gpu" else "the CPU emulator")
        state = f"at {r['commit']}" + (" (reference modified)" if r.get("source_modified") else "")
        part = "; every mutant" if not r["partial"] else ""
        if r["partial"]:
            part = f"; partial: {r['selected']} of {r['mutants_total']} mutants"
            part += f" (--limit {r['limit']})" if r.get("limit") else ""
            part += (f" (--sample {r['sample']}: a sample spread over the operators, the same for the same source)"
                     if r.get("sample") else "")
            part += f" (--only {r['only']})" if r.get("only") else ""
            run = r.get("run") or {}
            stopped = run.get("not_graded")
            how = "written from the cache" if run.get("from_cache") else "--stop-after"
            part += f" ({how}: {stopped} not graded yet)" if stopped else ""
        pace = f", {r['seconds_per_mutant']:g} s a graded mutant" if r.get("seconds_per_mutant") else ""
        second = (r.get("run") or {}).get("second_memory")
        if second:
            part += (f"; survivors graded again on an {second['memory'].upper()}'s memory "
                     f"(WBEMU_MEMORY={second['memory']}): {second['graded']}, {second['killed']} killed there")
        notes.append(f"- {r['lesson']}: graded on {where} {state}, seed {r['seed']}, {r['when']}{pace}{part}; "
                     f"{_origins(r)}.")
    lines += notes
    if ungraded:
        lines.append("- not graded in full yet: " + ", ".join(lesson.name for lesson in ungraded) +
                     " (no results under the results folder; the notes say why).")
    if os.path.exists(notes_path):
        with open(notes_path, encoding="utf-8") as f:
            lines += ["", "## Notes", "", f.read().strip()]
    lines += ["", "## Survivors", ""]
    any_survivor = False
    for r in reports:
        survivors = [m for m in r["mutants"] if m["status"] == SURVIVED]
        if not survivors:
            continue
        any_survivor = True
        lines += [f"### {r['lesson']} (`{r['source']}`)", ""]
        lines += [f"- `{m['name']}`: {m['description']}" + (f" ({m['why']})" if m.get("why") else "")
                  for m in survivors]
        lines.append("")
    if not any_survivor:
        lines += ["None.", ""]
    equivalents = [(r, m) for r in reports for m in r["mutants"] if m["status"] == EQUIVALENT]
    if equivalents:
        lines += ["## Equivalent (declared)", ""]
        for r in reports:
            mine = [m for rr, m in equivalents if rr is r]
            if not mine:
                continue
            lines += [f"### {r['lesson']}", ""]
            lines += [f"- `{m['name']}` ({m['description']}): {m['detail']}" for m in mine]
            lines.append("")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    return reports


def _mutant_count(lesson):
    """How many mutants the lesson's reference has now (none graded)."""
    from . import operators  # here, not at the top: operators is not needed to merge results
    with open(lesson.solution, encoding="utf-8") as f:
        return len(operators.enumerate_mutants(f.read()))


def _first_score(entry):
    if not entry:
        return "—"
    c = entry["counts"]
    graded = "" if entry.get("selected", entry["mutants"]) == entry["mutants"] else f" ({entry['selected']} graded)"
    return f"{format_score(c['score'])}{graded}"


def _origins(report):
    """Where the verdicts came from: the machines (from each verdict's record) and how many each."""
    counts = {}
    for m in report["mutants"]:
        if m["status"] == EQUIVALENT:
            continue
        where = m.get("where") or "not recorded"
        counts[where] = counts.get(where, 0) + 1
    parts = [f"{n} on {w}" for w, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return "verdicts reached " + ", ".join(parts) if parts else "no verdict"
