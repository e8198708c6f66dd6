"""The interview's Markdown report (rewritten after every command) and its score card."""
import math
import os
import time

from .interview_state import fmt, show


def _cell(text, limit=160):
    text = " ".join(str(text or "").split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def stage_submits(state, number):
    return [a for a in state["attempts"] if a["kind"] == "submit" and a["stage"] == number]


def passing_submit(state, number):
    return next((a for a in stage_submits(state, number) if a["verdict"] == "pass"), None)


def speed(attempt):
    """(geometric mean of the ratio to the reference, lowest row, geometric mean share of copy) or None."""
    rows = [b for b in (attempt or {}).get("bench", []) if b.get("ratio")]
    if not rows:
        return None
    geo = lambda key: math.exp(sum(math.log(max(b.get(key) or 1e-9, 1e-9)) for b in rows) / len(rows))
    low = min(rows, key=lambda b: b["ratio"])
    return geo("ratio"), low, geo("copy_fraction")


def _speed_text(state, stage, lesson_needs_gpu):
    attempt = passing_submit(state, stage["number"])
    if not attempt:
        return "not timed: the stage did not pass"
    if attempt.get("emulated"):
        return "not measured: graded on the CPU emulator (correctness only)"
    s = speed(attempt)
    if not s:
        return "not timed (a CPU lesson)" if not lesson_needs_gpu(stage["lesson"]) else "not timed"
    geo, low, copy = s
    return (f"{geo:.2f} of the reference (geometric mean over {len(attempt['bench'])} shape{'s' if len(attempt['bench']) > 1 else ''}), lowest "
            f"{low['ratio']:.2f} at {low['shape']} {low['dtype']}; {100 * copy:.0f}% of the copy bandwidth")


def questions_text(answered, scores):
    """The questions' line of the score card, e.g. "5 answered; your scores: 7 of 8 points over the 4 you
    scored (1 not scored)", or "6 answered; your scores: 10 of 12 points". A question is worth 2 points."""
    text = f"{answered} answered"
    if not scores:
        return text + "; none scored"
    text += f"; your scores: {sum(scores)} of {2 * len(scores)} points"
    unscored = answered - len(scores)
    if unscored:
        text += f" over the {len(scores)} you scored ({unscored} not scored)"
    return text


def scorecard(state, lesson_needs_gpu):
    """[(what, verdict)] rows of the summary: correctness, speed, time, questions."""
    stages = state["stages"]
    total = 1 + len(state["planned"])
    passed = [s for s in stages if s.get("passed_at") is not None]
    parts = []
    for s in stages:
        subs = [a for a in stage_submits(state, s["number"]) if a.get("counted")]
        if s.get("passed_at") is not None:
            n = next(i for i, a in enumerate(subs, 1) if a["verdict"] == "pass")
            parts.append(f"stage {s['number']} ({s['lesson']}) passed at {fmt(s['passed_at'])} on submit {n}"
                         + (f" after {n - 1} failing" if n > 1 else " (first try)")
                         + (", correctness only (emulator)" if passing_submit(state, s["number"]).get("emulated")
                            else ""))
        else:
            parts.append(f"stage {s['number']} ({s['lesson']}) not passed ({len(subs)} counted submit(s))")
    rows = [("correctness", f"{len(passed)} of {total} stage(s) passed: " + "; ".join(parts))]
    rows.append(("speed", "; ".join(f"stage {s['number']}: {_speed_text(state, s, lesson_needs_gpu)}"
                                    for s in stages)))
    end = state.get("coding_ended")
    limit = state["minutes"] * 60
    if end is None:
        rows.append(("time", "coding still under way"))
    else:
        rows.append(("time", f"coding ended at {fmt(end)} of {state['minutes']}:00 "
                             f"({state.get('coding_end_reason', '')}); "
                     + (f"over time by {fmt(end - limit)}" if end > limit else f"{fmt(limit - end)} to spare")))
    qa = state.get("qa", [])
    scored = [x["score"] for x in qa if x.get("score") is not None]
    if qa:
        rows.append(("questions", questions_text(len(qa), scored)
                     + (f"; {state['numbers_skipped']} on your own numbers not asked: no timed passing submit"
                        if state.get("numbers_skipped") else "")))
    else:
        rows.append(("questions", "not asked yet" if state["phase"] in ("coding", "questions") else "not asked"))
    return rows


def _timeline(state):
    out = ["| # | at | stage | what | verdict | detail |", "|---|---|---|---|---|---|"]
    for a in state["attempts"]:
        at = fmt(a["elapsed"]) + (" (over time)" if a.get("over_time") else "")
        verdict = a["verdict"] + ("" if a.get("counted", True) else ", not counted")
        if a.get("emulated"):
            verdict += ", emulated: correctness only"
        which = "visible cases" if a["kind"] == "check" else "cases"
        detail = f"`{os.path.relpath(a['snapshot'], state['workspace'])}`: " if a.get("snapshot") else ""
        if a.get("cases_total"):
            detail += f"{a['cases_passed']} of {a['cases_total']} {which} pass"
        if a["verdict"] != "pass" and a.get("reason"):
            detail += ("; " if a.get("cases_total") else "") + a["reason"]
        out.append(f"| {a['n']} | {at} | {a['stage']} ({a['lesson']}) | {a['kind']} | {_cell(verdict, 60)} | "
                   f"{_cell(detail, 220)} |")
    return out


def _bench_table(attempt):
    rows = attempt.get("bench") or []
    if not rows:
        return []
    out = ["| shape | dtype | your GB/s | reference GB/s | of the reference | of the copy | of a copy this size |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for b in rows:
        out.append(f"| {b.get('shape')} | {b.get('dtype')} | {b.get('student_gbps', 0):.0f} | "
                   f"{b.get('reference_gbps', 0):.0f} | {b.get('ratio', 0):.2f} | "
                   f"{100 * b.get('copy_fraction', 0):.0f}% | {100 * b.get('size_copy_fraction', 0):.0f}% |")
    if attempt.get("copy_gbps"):
        out.append(f"\nDevice copy bandwidth {attempt['copy_gbps']:.0f} GB/s on {attempt.get('gpu') or 'the GPU'}.")
    return out


def render(state, lesson_title, lesson_needs_gpu):
    started = time.strftime("%Y-%m-%d %H:%M", time.localtime(state["started"]))
    status = {"coding": "in progress: coding", "questions": "in progress: questions", "done": "finished",
              "abandoned": "abandoned"}[state["phase"]]
    lines = [f"# Mock interview: {state['lesson']}, {lesson_title}", "",
             f"Started {started}, {state['minutes']} minutes; {status}.", "", "## Score card", "",
             "| | |", "|---|---|"]
    lines += [f"| {what} | {_cell(text, 1000)} |" for what, text in scorecard(state, lesson_needs_gpu)]
    lines += ["", "## The prompt", ""] + ["> " + l if l else ">" for l in state["prompt"].splitlines()]
    gpu = [lesson_needs_gpu(s["lesson"]) for s in state["stages"]]
    then = ", then the bandwidth gate" if all(gpu) else ", then, in a GPU stage, the bandwidth gate" if any(gpu) else ""
    lines += ["", "## Timeline", "", "Checks run the interviewer's visible cases on the same inputs every time; "
              f"submits run every case on fresh inputs{then}.", ""]
    lines += _timeline(state) if state["attempts"] else ["No check or submit yet."]
    lines += ["", "## Stages"]
    for s in state["stages"]:
        done = f"passed at {fmt(s['passed_at'])}" if s.get("passed_at") is not None else "not passed"
        lines += ["", f"### Stage {s['number']}: {s['lesson']}, {s['title']} ({done})", "",
                  f"Started at {fmt(s['started_at'])}. File: `{show(s['source'])}`."]
        if s["number"] > 1:
            lines += ["", "> " + s["prompt"]]
        attempt = passing_submit(state, s["number"])
        if attempt:
            table = _bench_table(attempt)
            if table:
                lines += ["", f"Bandwidth of the passing submit (#{attempt['n']}):", ""] + table
    reached = {s["lesson"] for s in state["stages"]}
    unreached = [l for l in state["planned"] if l not in reached]
    if unreached:
        lines += ["", "Stages not reached: " + ", ".join(unreached) + "."]
    if state.get("qa"):
        lines += ["", "## Questions"]
        for i, x in enumerate(state["qa"], 1):
            score = "not scored" if x.get("score") is None else f"{x['score']}/2"
            lines += ["", f"### {i}. {x['question']}", "", f"**Your answer** ({score}):", "",
                      x.get("answer") or "(none)", "", "**Model answer:**", "", x["model"]]
    return "\n".join(lines) + "\n"


def write(state, lesson_title, lesson_needs_gpu):
    path = os.path.join(state["workspace"], "report.md")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(render(state, lesson_title, lesson_needs_gpu))
    os.replace(tmp, path)
    return path
