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
            stopped = (r.get("run") or {}).get("not_graded")
            part += f" (--stop-after: {stopped} not graded yet)" if stopped else ""
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
