"""Mock interviews, in stages, on a clock that lives in the workspace:

  ./grade interview lessonN [--minutes M]   start: a bare stub, the interviewer's prompt, the clock
  ./grade interview random [--minutes M]    start on a lesson not yet passed in interview mode
  ./grade interview check                   the interviewer's visible cases, as often as you like
  ./grade interview submit [--answers F]    your final answer: every case on fresh inputs, then the gate
                                            (GPU lessons); a pass opens the next stage, or the questions
                                            after the last
  ./grade interview questions [--answers F] the follow-up questions; this ends the coding part, so while a
                                            stage is open and time is left it asks first (--end-coding:
                                            without asking)
  ./grade interview status | report | history | abandon

The workspace is .workbook/interview/<time>-lessonN/ (git-ignored): your files, every submitted version,
the grader's reports and report.md. An answers file holds one block per question, separated by lines of
`---`, each block optionally ending with `score: 0|1|2`.
"""
import os
import random
import secrets
import shutil
import sys
import time

from . import exitcodes
from . import interview_content as content
from . import interview_grading as grading
from . import interview_report as reporting
from . import interview_state as st
from .interview_questions import ask, first_answer_for, read_answers_file
from .interview_workspace import bare_stub, extension, prompt, stage_file
from .lessons import UsageError, all_lessons, find_lesson

ANSWERS_FORMAT = ("one block per question, separated by lines of ---, each block optionally ending "
                  "with a line 'score: 0', 'score: 1' or 'score: 2'")


def _needs_gpu(name):
    return find_lesson(name).needs_gpu


def _save(state):
    st.save(state)
    return reporting.write(state, find_lesson(state["lesson"]).title, _needs_gpu)


def _need_running():
    state = st.running()
    if not state:
        raise UsageError("no interview is running: start one with ./grade interview lessonN [--minutes M] "
                         "(or ./grade interview random)")
    return state


def _need_coding(state):
    if state["phase"] != "coding":
        raise UsageError("the coding part of this interview is over; answer the follow-up questions with "
                         "./grade interview questions (or --answers FILE)")


def _stage(state):
    return state["stages"][-1]


def _new_workspace(lesson):
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(st.now()))
    base = os.path.join(st.INTERVIEW_DIR, f"{stamp}-{lesson.name}")
    workspace, n = base, 1
    while os.path.exists(workspace):
        n += 1
        workspace = f"{base}-{n}"
    os.makedirs(os.path.join(workspace, "attempts"))
    return workspace


def _passed_lessons():
    entries, _ = st.history()
    return {e["lesson"] for e in entries if e.get("first_stage_passed") or e.get("verdict") == "pass"}


def _random_lesson():
    lessons = all_lessons()
    passed = _passed_lessons()
    todo = [l for l in lessons if l.name not in passed]
    if not todo:
        print("You have passed every lesson in interview mode; here is one of them again, at random.\n")
        todo = lessons
    return random.SystemRandom().choice(todo)


def start(what, minutes):
    current = st.running()
    if current:
        raise UsageError(f"an interview is already running ({current['lesson']}, file "
                         f"{st.show(_stage(current)['source'])}). Go on with it (./grade interview status), or "
                         "drop it with ./grade interview abandon (its files stay)")
    if minutes < 1:
        raise UsageError("--minutes must be at least 1")
    lesson = _random_lesson() if what == "random" else find_lesson(what)
    plan = content.plan(lesson)
    opening = prompt(lesson, minutes)
    workspace = _new_workspace(lesson)
    source = os.path.join(workspace, "solution" + extension(lesson))
    with open(source, "w", encoding="utf-8") as f:
        f.write(bare_stub(lesson, minutes))
    check_seed = secrets.randbits(63)
    state = {"version": st.VERSION, "lesson": lesson.name, "minutes": minutes, "started": st.now(),
             "workspace": workspace, "prompt": opening, "check_seed": check_seed,
             "stages": [{"number": 1, "lesson": lesson.name, "title": lesson.title, "source": source,
                         "prompt": opening, "started_at": 0, "passed_at": None}],
             "planned": [s.lesson for s in plan.stages], "attempts": [], "phase": "coding", "qa": []}
    _save(state)
    st.set_running(workspace)
    print(opening)
    print(f"\nYour file: {st.show(source)}\n"
          "Try it (as often as you like): ./grade interview check\n"
          "Final answer:                  ./grade interview submit\n"
          "Time left:                     ./grade interview status")
    print(st.clock_line(state))
    return exitcodes.PASS


def _record(state, kind, result, snapshot=None):
    stage = _stage(state)
    attempt = dict(result, n=len(state["attempts"]) + 1, kind=kind, stage=stage["number"], lesson=stage["lesson"],
                   elapsed=round(st.elapsed(state), 1), over_time=st.left(state) < 0, snapshot=snapshot)
    state["attempts"].append(attempt)
    return attempt


def _attempt_dir(state, kind):
    n = len(state["attempts"]) + 1
    return os.path.join(state["workspace"], "attempts", f"{n:03d}-{kind}-stage{_stage(state)['number']}")


def _no_gpu_note(what):
    return (f"Your file built, but this machine could not run it (the grader says why above), so this {what} "
            "is not counted as a failed attempt. The interview and its clock go on.")


def check():
    state = _need_running()
    _need_coding(state)
    print(st.clock_line(state), flush=True)
    stage = _stage(state)
    lesson = find_lesson(stage["lesson"])
    out_dir = _attempt_dir(state, "check")
    os.makedirs(out_dir)
    result = grading.check(lesson, stage["source"], out_dir, state["check_seed"], content.plan(lesson).check_cases)
    attempt = _record(state, "check", result)
    _save(state)
    n = sum(1 for a in state["attempts"] if a["kind"] == "check")
    label = f"\ncheck {n} (stage {stage['number']}, {lesson.name})"
    emulated = " (graded on the CPU emulator: correctness only)" if attempt.get("emulated") else ""
    if not attempt["counted"]:
        print(f"{label}: not run.\n{_no_gpu_note('check')}")
    elif attempt["verdict"] == "fail-build":
        print(f"{label}: your file did not build; fix the first error above and check again.")
    elif attempt["verdict"] == "pass":
        then = (", then the bandwidth gate" if lesson.needs_gpu and not attempt.get("emulated") else
                " (the bandwidth gate needs a GPU)" if lesson.needs_gpu else "")  # a CPU lesson has no gate
        print(f"{label}: all {attempt['cases_total']} visible cases pass{emulated}. They are the same inputs every "
              f"check; submit runs every case on fresh inputs{then}: ./grade interview submit")
    else:
        failed = attempt["failed"]
        names = ", ".join(failed[:4]) + (f" and {len(failed) - 4} more" if len(failed) > 4 else "")
        print(f"{label}: {attempt['cases_passed']} of {attempt['cases_total']} visible cases pass{emulated}; "
              f"failing: {names or attempt['reason']}. A check never ends the interview: fix and check again.")
    print(st.clock_line(state))
    return attempt["code"]


def _fresh_seed(avoid):
    seed = secrets.randbits(63)
    while seed == avoid:
        seed = secrets.randbits(63)
    return seed


def _open_next_stage(state, passing):
    """After a passing submit: the next stage's file and prompt, or None when there is none."""
    number = _stage(state)["number"] + 1
    if number - 2 >= len(state["planned"]):
        return None
    lesson = find_lesson(state["planned"][number - 2])
    stage_plan = next(s for s in content.plan(find_lesson(state["lesson"])).stages if s.lesson == lesson.name)
    with open(passing["snapshot"], encoding="utf-8") as f:
        previous = f.read()
    source = os.path.join(state["workspace"], f"stage{number}-{lesson.name}" + extension(lesson))
    with open(source, "w", encoding="utf-8") as f:
        f.write(stage_file(number, lesson, previous))
    stage = {"number": number, "lesson": lesson.name, "title": lesson.title, "source": source,
             "prompt": stage_plan.prompt, "started_at": round(st.elapsed(state), 1), "passed_at": None}
    state["stages"].append(stage)
    return stage


def _end_coding(state, reason):
    state["phase"] = "questions"
    state["coding_ended"] = round(st.elapsed(state), 1)
    state["coding_end_reason"] = reason


def submit(answers_path=None):
    state = _need_running()
    _need_coding(state)
    if answers_path:
        read_answers_file(answers_path)  # a bad answers file is an error before anything is graded
    stage = _stage(state)
    lesson = find_lesson(stage["lesson"])
    print(st.clock_line(state), flush=True)
    over = st.left(state) < 0
    if over:
        print("Time is up: this submit is recorded as over time.")
    out_dir = _attempt_dir(state, "submit")
    os.makedirs(out_dir)
    snapshot = os.path.join(out_dir, os.path.basename(stage["source"]))
    shutil.copyfile(stage["source"], snapshot)
    result = grading.submit(lesson, snapshot, stage["source"], os.path.join(out_dir, "result.json"),
                            _fresh_seed(state["check_seed"]))
    attempt = _record(state, "submit", result, snapshot)
    n = sum(1 for a in state["attempts"] if a["kind"] == "submit" and a["stage"] == stage["number"])
    label = f"\nsubmit {n} of stage {stage['number']} ({lesson.name}), at {st.fmt(attempt['elapsed'])}"
    if not attempt["counted"]:
        _save(state)
        print(f"{label}: not graded.\n{_no_gpu_note('submit')}")
        print(st.clock_line(state))
        return attempt["code"]
    if attempt["verdict"] != "pass":
        _save(state)
        what = "did not build" if attempt["verdict"] == "fail-build" else f"{attempt['verdict']}: {attempt['reason']}"
        print(f"{label}: {what}\nThe interview goes on: fix it, check, and submit again"
              + (" (over time now, so every further attempt is marked)." if over else "."))
        print(st.clock_line(state))
        return attempt["code"]
    stage["passed_at"] = attempt["elapsed"]
    if stage["number"] == 1:
        state["numbers"] = content.numbers(attempt["bench"], attempt.get("copy_gbps"))
    note = " (graded on the CPU emulator: correctness only, no timing)" if attempt.get("emulated") else ""
    print(f"{label}: PASS{note}.")
    nxt = None if over else _open_next_stage(state, attempt)
    if nxt:
        _save(state)
        print(f"\nInterviewer (stage {nxt['number']}, {nxt['lesson']}): {nxt['prompt']}\n\n"
              f"Your file: {st.show(nxt['source'])} (your passing code is kept at its top, the new entry point "
              "is at the end).\nSame clock; check and submit as before.")
        print(st.clock_line(state))
        return exitcodes.PASS
    _end_coding(state, "time is up" if over else "every stage passed")
    _save(state)
    print("\nThe coding part is over (" + state["coding_end_reason"] + "). Now the follow-up questions.")
    if answers_path or sys.stdin.isatty():
        questions(answers_path)
    else:
        print(f"Answer them in a terminal with ./grade interview questions, or with --answers FILE ({ANSWERS_FORMAT}).")
        print(st.clock_line(state))
    return exitcodes.PASS


def _round_questions(state):
    """The lesson's questions; those on the candidate's numbers filled in, or left out without numbers."""
    found = content.questions(find_lesson(state["lesson"]))
    values = state.get("numbers")
    if values:
        return [content.Question(content.fill(q.text, values), content.fill(q.model, values), q.needs_numbers)
                for q in found], 0
    kept = [q for q in found if not q.needs_numbers]
    return kept, len(found) - len(kept)


def _confirm_end_of_coding(state, end_coding):
    """True when the coding part may end now: time is up, --end-coding was given, or the candidate says
    so at the terminal. Without a terminal and without --end-coding, a UsageError says what to add."""
    if st.left(state) < 0 or end_coding:
        return True
    stage = _stage(state)
    what = (f"stage {stage['number']} ({stage['lesson']}) is not passed yet and {st.fmt(st.left(state))} of "
            f"{state['minutes']}:00 are left")
    if not sys.stdin.isatty():
        raise UsageError(f"the coding part is not over: {what}. The questions end it for good, with no more "
                         "checks or submits; to end it now, add --end-coding (./grade interview questions "
                         "--end-coding [--answers FILE])")
    print(st.clock_line(state))
    print(f"The coding part is not over: {what}.\nThe questions end it for good: no more checks or submits.")
    print("End the coding part and go to the questions? [y/N] ", end="", flush=True)
    reply = sys.stdin.readline().strip().lower()
    if reply in ("y", "yes"):
        return True
    print("The coding part goes on: ./grade interview check, ./grade interview submit.")
    print(st.clock_line(state))
    return False


def questions(answers_path=None, end_coding=False):
    state = _need_running()
    answers = read_answers_file(answers_path) if answers_path else None
    if answers is None and not sys.stdin.isatty():
        raise UsageError(f"the questions need answers: run ./grade interview questions in a terminal, or give "
                         f"--answers FILE ({ANSWERS_FORMAT})")
    if state["phase"] == "coding":
        if not _confirm_end_of_coding(state, end_coding):
            return exitcodes.PASS
        over = st.left(state) < 0
        passed = sum(1 for s in state["stages"] if s.get("passed_at") is not None)
        _end_coding(state, "time is up" if over else f"stopped by the candidate after {passed} passed stage(s)")
    qs, skipped = _round_questions(state)
    state["numbers_skipped"] = skipped
    _save(state)
    print(st.clock_line(state))
    done = len(state["qa"])
    left = len(qs) - done
    if skipped:
        print(f"({skipped} question(s) on your own measured numbers are left out: no timed passing submit)")
    if done:
        print(f"\nFollow-up questions: {done} of {len(qs)} answered already; {left} to go, from Q{done + 1}.")
    else:
        print(f"\nFollow-up questions ({len(qs)}): after each answer you see the model answer and score yourself.")
    if answers is not None:
        offset = first_answer_for(answers, state["qa"])
        usable = len(answers) - (done - offset)
        if done and left:
            print(f"(the answers file's answer {done - offset + 1} is taken for Q{done + 1}, the first question "
                  "not yet answered)" if offset == 0 else
                  f"(the answers file's first answer is taken for Q{done + 1}, the first question not yet answered)")
        if usable > left:
            print(f"(the answers file has {usable} answers for the {left} question(s) left; "
                  f"the last {usable - left} are ignored)")

    def record(entry):
        state["qa"].append(entry)
        _save(state)

    ask(qs, state["qa"], record, answers)
    if len(state["qa"]) < len(qs):
        rest = len(qs) - len(state["qa"])
        print(f"\n{rest} question(s) not answered yet (the answers file ran out): Q{len(state['qa']) + 1} to "
              f"Q{len(qs)}. Go on with ./grade interview questions (in a terminal, or --answers FILE with "
              "their answers).")
        print(st.clock_line(state))
        return exitcodes.PASS
    return _finish(state, "finished")


def _history_entry(state, status):
    stages = state["stages"]
    first = reporting.passing_submit(state, 1)
    speed = reporting.speed(first)
    scored = [x["score"] for x in state.get("qa", []) if x.get("score") is not None]
    last_first = reporting.stage_submits(state, 1)
    return {"date": time.strftime("%Y-%m-%d %H:%M", time.localtime(state["started"])), "lesson": state["lesson"],
            "minutes": state["minutes"], "elapsed_s": round(state.get("coding_ended") or st.elapsed(state)),
            "over_time": (state.get("coding_ended") or st.elapsed(state)) > state["minutes"] * 60, "status": status,
            "stages_passed": sum(1 for s in stages if s.get("passed_at") is not None),
            "stages_total": 1 + len(state["planned"]), "first_stage_passed": first is not None,
            "verdict": last_first[-1]["verdict"] if last_first else None,
            "speed": round(speed[0], 3) if speed else None, "score": sum(scored), "max_score": 2 * len(scored),
            "report": os.path.join(state["workspace"], "report.md")}


def _finish(state, status):
    state["phase"] = "done" if status == "finished" else "abandoned"
    path = _save(state)
    st.append_history(_history_entry(state, status))
    st.clear_running()
    print("\nScore card:")
    for what, text in reporting.scorecard(state, _needs_gpu):
        print(f"  {what:<12} {text}")
    print(f"\nReport: {st.show(path)}   All interviews: ./grade interview history")
    return exitcodes.PASS


def abandon():
    try:
        state = st.running()
    except st.StateError as e:
        aside = st.set_aside_damaged() if os.path.exists(st.CURRENT) else None
        print(f"Dropped an interview whose state could not be read: {e}")
        if aside:
            print(f"The damaged pointer is kept as {st.show(aside)}.")
        return exitcodes.PASS
    if not state:
        print("No interview is running.")
        return exitcodes.PASS
    if state.get("coding_ended") is None:
        state["coding_ended"] = round(st.elapsed(state), 1)
        state["coding_end_reason"] = "abandoned"
    print(f"Stopped the {state['lesson']} interview; its files stay in {st.show(state['workspace'])}.")
    return _finish(state, "abandoned")


def status():
    state = st.running()
    if not state:
        print("No interview is running. Start one with ./grade interview lessonN [--minutes M] "
              "(or ./grade interview random).")
        return exitcodes.PASS
    stage = _stage(state)
    total = 1 + len(state["planned"])
    checks = [a for a in state["attempts"] if a["kind"] == "check"]
    submits = [a for a in state["attempts"] if a["kind"] == "submit"]
    print(st.clock_line(state))
    print(f"Stage {stage['number']} of at most {total}: {stage['lesson']}, {stage['title']}\n"
          f"File: {st.show(stage['source'])}\n"
          f"So far: {len(checks)} check(s), {len(submits)} submit(s)"
          + (f"; last: {state['attempts'][-1]['kind']} {state['attempts'][-1]['verdict']}" if state["attempts"] else ""))
    if state["phase"] == "questions":
        print(f"Coding is over; {len(state['qa'])} question(s) answered. Go on: ./grade interview questions")
    elif st.left(state) < 0:
        print("Time is up. Submit what you have (it is marked over time), or go to the questions: "
              "./grade interview questions")
    else:
        print("Next: ./grade interview check (visible cases), ./grade interview submit (final answer)")
    return exitcodes.PASS


def report():
    state = st.running()
    if state:
        path = _save(state)
        print(st.clock_line(state))
        print(f"(the running interview's report so far: {st.show(path)})\n")
    else:
        entries, _ = st.history()
        if not entries:
            print("No interviews yet. Start one with ./grade interview lessonN [--minutes M].")
            return exitcodes.PASS
        path = entries[-1].get("report", "")
        if not path or not os.path.isfile(path):
            raise UsageError(f"the last interview's report {path or '(none recorded)'} is missing; "
                             "./grade interview history lists the others")
    with open(path, encoding="utf-8") as f:
        print(f.read(), end="")
    return exitcodes.PASS


def history():
    try:
        state = st.running()
    except st.StateError:
        state = None  # history does not need the running interview; its own commands name the problem
    if state:
        print(st.clock_line(state) + " (running; not in the history until it ends)")
    entries, damaged = st.history()
    if not entries:
        print("No interviews yet. Start one with ./grade interview lessonN [--minutes M].")
        return exitcodes.PASS
    print(f"{'date':<17} {'lesson':<8} {'time':>11} {'status':<10} {'stages':<7} {'speed':>6} {'questions':>9}  report")
    for e in entries:
        t = f"{st.fmt(e.get('elapsed_s', 0))}/{e.get('minutes', '?')}m" + ("!" if e.get("over_time") else "")
        stages = f"{e['stages_passed']}/{e['stages_total']}" if "stages_total" in e else str(e.get("verdict"))
        speed = f"{e['speed']:.2f}" if e.get("speed") else "-"
        score = f"{e['score']}/{e['max_score']}" if e.get("max_score") else "-"
        print(f"{e.get('date', '?'):<17} {e['lesson']:<8} {t:>11} {e.get('status', 'finished'):<10} {stages:<7} "
              f"{speed:>6} {score:>9}  {st.show(e['report']) if e.get('report') else ''}")
    print("(time: coding time of the limit, ! = over time; stages: passed of offered; speed: geometric mean of "
          "the first stage's bandwidth over the reference's; questions: self-scored points)")
    if damaged:
        print(f"({damaged} damaged line(s) of {st.show(st.HISTORY)} skipped)")
    return exitcodes.PASS
