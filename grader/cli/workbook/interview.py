"""Timed mock interviews: ./grade interview lessonN [--minutes M], then status, submit, history.

The workspace lives in .workbook/interview/ (git-ignored), so the clock keeps running between
commands and terminals. A candidate gets a bare stub with only the lesson's contract, the
interviewer's prompt, and after submitting, the grade, the lesson's follow-up questions with
their model answers, and a report.
"""
import json
import os
import re
import sys
import time

from . import exitcodes
from .lessons import ROOT, UsageError, find_lesson
from .progress import STATE_DIR

INTERVIEW_DIR = os.path.join(STATE_DIR, "interview")
CURRENT = os.path.join(INTERVIEW_DIR, "current.json")
HISTORY = os.path.join(INTERVIEW_DIR, "history.jsonl")


def _section(lesson, heading):
    with open(lesson.readme, encoding="utf-8") as f:
        text = f.read()
    m = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    if not m:
        raise UsageError(f"{lesson.readme} has no '## {heading}' section")
    return m.group(1).strip()


def contract(lesson):
    """The entry point's declaration: the first code block of the lesson's 'What you build'."""
    m = re.search(r"```(?:cpp|c\+\+|cuda)?\n(.*?)```", _section(lesson, "What you build"), flags=re.S)
    if not m:
        raise UsageError(f"{lesson.readme}: 'What you build' has no code block with the contract")
    return m.group(1).rstrip()


def questions(lesson):
    """(question, model answer) pairs of the lesson's 'Interview questions' section."""
    body = _section(lesson, "Interview questions")
    parts = re.split(r"^\*\*\d+\.\s*", body, flags=re.M)[1:]
    pairs = []
    for part in parts:
        q, sep, a = part.partition("**")
        if sep:
            pairs.append((" ".join(q.split()), a.strip()))
    return pairs


def bare_stub(lesson, minutes):
    """The contract with empty bodies: it compiles and fails every case."""
    decl = contract(lesson)
    is_void = re.search(r"^\s*void\s+\w+\(", decl, flags=re.M) is not None
    body = " {\n    // Your implementation.\n" + ("}" if is_void else "    return cudaErrorNotYetImplemented;\n}")
    code = re.sub(r"\);\s*\n\}\s*$", ")" + body + "\n\n}  // namespace", decl.rstrip() + "\n", flags=re.S)
    includes = ["#include <cstdint>"]
    if lesson.needs_gpu:
        includes = ["#include <cuda_runtime.h>", "#include <cuda_fp16.h>", "#include <cuda_bf16.h>", *includes]
    else:
        includes.append("#include <cmath>")
    return (f"// Mock interview: {lesson.name}, {lesson.title}. You have {minutes} minutes.\n"
            f"// Edit this file, then: ./grade interview submit      (time left: ./grade interview status)\n"
            + "\n".join(includes) + "\n\n" + code + "\n")


def prompt(lesson, minutes):
    what = _section(lesson, "What you build")
    prose = [p for p in re.split(r"\n\s*\n", what)
             if not p.lstrip().startswith(("```", "make ", "./grade", "    ")) and "exercises/" not in p
             and not p.rstrip().endswith(":")]
    first = " ".join(prose[0].split()) if prose else ""
    gpu = ("Correctness comes first; then your kernel is timed against the reference solution in the "
           "same process, and it must reach the lesson's share of the reference's bandwidth."
           if lesson.needs_gpu else "It is graded on the CPU for correctness.")
    return (f"Interviewer: implement this entry point. {first}\n\n{contract(lesson)}\n\n"
            f"Any valid input must work: think about sizes, tails, alignment and edge cases before you write code. "
            f"{gpu} You have {minutes} minutes; the clock is running.")


def _show(path):
    """A path as the candidate would type it: relative inside the workbook, absolute outside."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def _load_current():
    try:
        with open(CURRENT, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _clock(state, now=None):
    elapsed = (now or time.time()) - state["started"]
    return elapsed, state["minutes"] * 60 - elapsed


def _fmt(seconds):
    sign = "-" if seconds < 0 else ""
    seconds = abs(int(seconds))
    return f"{sign}{seconds // 60}:{seconds % 60:02d}"


def start(lesson_name, minutes):
    current = _load_current()
    if current:
        raise UsageError(f"an interview is already running ({current['lesson']}, workspace {current['workspace']}). "
                         "Submit it with ./grade interview submit, or drop it with ./grade interview abandon")
    lesson = find_lesson(lesson_name)
    if minutes < 1:
        raise UsageError("--minutes must be at least 1")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    workspace = os.path.join(INTERVIEW_DIR, f"{stamp}-{lesson.name}")
    os.makedirs(workspace, exist_ok=False)
    ext = ".cpp" if not lesson.needs_gpu else ".cu"
    source = os.path.join(workspace, "solution" + ext)
    with open(source, "w", encoding="utf-8") as f:
        f.write(bare_stub(lesson, minutes))
    state = {"lesson": lesson.name, "minutes": minutes, "started": time.time(), "workspace": workspace,
             "source": source}
    with open(os.path.join(workspace, "interview.json"), "w", encoding="utf-8") as f:
        json.dump(state, f, indent=2)
    with open(CURRENT, "w", encoding="utf-8") as f:
        json.dump(state, f, indent=2)
    print(prompt(lesson, minutes))
    print(f"\nYour file: {_show(source)}\n"
          f"Time left: ./grade interview status    Submit: ./grade interview submit")
    return exitcodes.PASS


def status():
    state = _load_current()
    if not state:
        print("No interview is running. Start one with ./grade interview lessonN [--minutes M].")
        return exitcodes.PASS
    elapsed, left = _clock(state)
    note = f"{_fmt(left)} left" if left >= 0 else f"over time by {_fmt(-left)}"
    print(f"{state['lesson']}: {_fmt(elapsed)} elapsed of {state['minutes']} minutes ({note}).\n"
          f"File: {_show(state['source'])}")
    return exitcodes.PASS


def abandon():
    state = _load_current()
    if not state:
        print("No interview is running.")
        return exitcodes.PASS
    os.remove(CURRENT)
    print(f"Stopped the {state['lesson']} interview; its workspace stays in {state['workspace']}.")
    return exitcodes.PASS


def _read_answers(path):
    with open(path, encoding="utf-8") as f:
        blocks = re.split(r"^---\s*$", f.read(), flags=re.M)
    return [b.strip() for b in blocks]


def _ask(question, answer_lines):
    print(f"\nQ: {question}")
    print("Your answer (end with an empty line):")
    lines = []
    for line in answer_lines:
        if not line.strip():
            break
        lines.append(line.rstrip("\n"))
    return "\n".join(lines)


def submit(answers_path=None, ask=True, grade_fn=None):
    state = _load_current()
    if not state:
        raise UsageError("no interview is running: start one with ./grade interview lessonN")
    lesson = find_lesson(state["lesson"])
    elapsed, left = _clock(state)
    over = left < 0
    print(f"Submitted after {_fmt(elapsed)} of {state['minutes']} minutes" +
          (f" (over time by {_fmt(-left)})." if over else "."))
    result_path = os.path.join(state["workspace"], "result.json")
    code = grade_fn(lesson, state["source"], result_path)
    result = {}
    try:
        with open(result_path, encoding="utf-8") as f:
            result = json.load(f)
    except (OSError, ValueError):
        result = {"verdict": exitcodes.VERDICTS.get(code, "error"), "reason": "no report"}

    qa = []
    pairs = questions(lesson)
    answers = _read_answers(answers_path) if answers_path else None
    interactive = ask and answers is None and sys.stdin.isatty()
    if ask and (answers is not None or interactive):
        print(f"\nFollow-up questions ({len(pairs)}). After each answer you see the model answer and score "
              "yourself: 0 missed, 1 partly, 2 fully.")
        for i, (q, model) in enumerate(pairs):
            if answers is not None:
                given = answers[i] if i < len(answers) else ""
                print(f"\nQ{i + 1}: {q}\nYour answer: {given or '(none)'}")
                score = None
            else:
                given = _ask(q, iter(sys.stdin.readline, ""))
                score = None
            print(f"Model answer:\n{model}")
            if interactive:
                raw = input("Your score (0, 1, 2; Enter to skip): ").strip()
                score = int(raw) if raw in ("0", "1", "2") else None
            qa.append({"question": q, "answer": given, "model": model, "score": score})
    else:
        print("\n(follow-up questions skipped; give --answers FILE, or run submit in a terminal to answer them)")

    scored = [x["score"] for x in qa if x["score"] is not None]
    report = os.path.join(state["workspace"], "report.md")
    with open(report, "w", encoding="utf-8") as f:
        f.write(f"# Mock interview: {lesson.name}, {lesson.title}\n\n")
        f.write(f"- started: {time.strftime('%Y-%m-%d %H:%M', time.localtime(state['started']))}\n")
        f.write(f"- time: {_fmt(elapsed)} of {state['minutes']} minutes" + (" (over time)\n" if over else "\n"))
        f.write(f"- verdict: {result.get('verdict')}" + (f" ({result.get('reason')})" if result.get("reason") else "")
                + "\n")
        for b in result.get("bench", []):
            f.write(f"- {b['shape']} {b['dtype']}: {b['student_gbps']:.0f} GB/s, {b['ratio']:.2f} of the reference\n")
        failed = [c for c in result.get("cases", []) if not c.get("passed")]
        if failed:
            f.write("\n## Failing cases\n\n" + "".join(f"- {c['name']}: {c['detail']}\n" for c in failed))
        if qa:
            f.write("\n## Follow-up questions\n")
            for i, x in enumerate(qa, 1):
                score = "not scored" if x["score"] is None else f"{x['score']}/2"
                f.write(f"\n### {i}. {x['question']}\n\n**Your answer** ({score}):\n\n{x['answer'] or '(none)'}\n\n"
                        f"**Model answer:**\n\n{x['model']}\n")
        f.write(f"\nYour file: {state['source']}\n")
    entry = {"date": time.strftime("%Y-%m-%d %H:%M", time.localtime(state["started"])), "lesson": lesson.name,
             "minutes": state["minutes"], "elapsed_s": round(elapsed), "over_time": over,
             "verdict": result.get("verdict"), "score": sum(scored), "max_score": 2 * len(scored),
             "report": report}
    with open(HISTORY, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
    os.remove(CURRENT)
    print(f"\nReport: {_show(report)}   History: ./grade interview history")
    return code


def history():
    try:
        with open(HISTORY, encoding="utf-8") as f:
            entries = [json.loads(line) for line in f if line.strip()]
    except OSError:
        entries = []
    if not entries:
        print("No interviews yet. Start one with ./grade interview lessonN [--minutes M].")
        return exitcodes.PASS
    print(f"{'date':<17} {'lesson':<8} {'time':>11} {'verdict':<17} score")
    for e in entries:
        t = f"{_fmt(e['elapsed_s'])}/{e['minutes']}m" + ("!" if e["over_time"] else "")
        score = f"{e['score']}/{e['max_score']}" if e["max_score"] else "-"
        print(f"{e['date']:<17} {e['lesson']:<8} {t:>11} {str(e['verdict']):<17} {score}")
    print("(! = over time)")
    return exitcodes.PASS
