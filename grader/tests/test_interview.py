"""The mock interview as a candidate runs it, on a clock the tests set (WORKBOOK_NOW).

Lesson 1 is graded for real on the CPU. Where a GPU lesson is needed (bandwidth, stages after a GPU
lesson, no GPU, the emulator), fake_grader.py replays reports in place of the grader; the candidate's
file is still compiled for real.
"""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GRADE = os.path.join(ROOT, "grade")
FAKE = os.path.join(HERE, "fake_grader.py")
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook import interview_content, interview_questions, interview_report, interview_workspace  # noqa: E402
from workbook.lessons import all_lessons, find_lesson, UsageError  # noqa: E402


def solution(slug):
    folder = os.path.join(ROOT, "solutions", slug)
    return os.path.join(folder, sorted(f for f in os.listdir(folder) if f.endswith((".cu", ".cpp")))[0])


SOLUTION1 = solution("01-cpu-reference")
T0 = 1_800_000_000.0  # the injected clock's start


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def eps_outside_sqrt():
    """Lesson 1's reference with eps moved out of the square root: visible cases pass, submit fails."""
    with open(SOLUTION1, encoding="utf-8") as f:
        text = f.read()
    bad = text.replace("1.0f / std::sqrt(sum / static_cast<float>(cols) + eps)",
                       "1.0f / (std::sqrt(sum / static_cast<float>(cols)) + eps)")
    assert bad != text
    return bad


def bench_row(shape, dtype, student, reference, copy=3000.0, nbytes=512 * 2**20):
    return {"shape": shape, "dtype": dtype, "bytes": nbytes, "student_gbps": student, "reference_gbps": reference,
            "ratio": student / reference, "copy_fraction": student / copy, "size_copy_gbps": copy * 0.95,
            "size_copy_fraction": student / (copy * 0.95), "noise": 0.01, "verdict": "pass"}


def report(verdict, lesson=4, cases=None, bench=None, reason="", **extra):
    cases = cases if cases is not None else [{"name": "one_row_f16", "passed": verdict == "pass", "detail": "x"}]
    return dict({"lesson": f"lesson{lesson}", "source": "s", "verdict": verdict, "reason": reason, "cases": cases,
                 "bench": bench or [], "gpu": "Fake GPU", "copy_gbps": 3000.0, "gate_fraction": 0.8}, **extra)


class InterviewCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="workbook-interview-")
        self.state_dir = os.path.join(self.tmp, "state")
        self.env = dict(os.environ, WORKBOOK_STATE_DIR=self.state_dir, WORKBOOK_NOW=str(T0))
        self.env.pop("WORKBOOK_GRADER", None)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def grade(self, *args, at=0.0, stdin=None):
        """Runs ./grade with the clock at T0 + `at` seconds."""
        env = dict(self.env, WORKBOOK_NOW=str(T0 + at))
        proc = subprocess.run([sys.executable, GRADE, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=600, stdin=stdin if stdin is not None else subprocess.DEVNULL)
        return proc.returncode, proc.stdout + proc.stderr

    def interview_dir(self):
        return os.path.join(self.state_dir, "interview")

    def state(self):
        with open(os.path.join(self.interview_dir(), "current.json"), encoding="utf-8") as f:
            workspace = json.load(f)["workspace"]
        with open(os.path.join(workspace, "interview.json"), encoding="utf-8") as f:
            return json.load(f)

    def write(self, path, text):
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def answers(self, n, score=2):
        return self.write(os.path.join(self.tmp, "answers.txt"),
                          "\n---\n".join(f"My answer {i + 1}.\nscore: {score}" for i in range(n)) + "\n")

    def fake_grader(self, check=None, submits=()):
        script = os.path.join(self.tmp, "fake.json")
        self.write(script, json.dumps({"check": check or report("pass"), "submits": list(submits)}))
        self.env.update(WORKBOOK_GRADER=FAKE, FAKE_GRADER_SCRIPT=script)
        return script

    def grader_calls(self, script):
        with open(script + ".log", encoding="utf-8") as f:
            return [json.loads(line) for line in f]


class StartAndCheckTests(InterviewCase):
    def test_start_gives_a_bare_stub_the_prompt_and_the_clock(self):
        code, out = self.grade("interview", "lesson1", "--minutes", "30")
        self.assertEqual(code, 0, out)
        self.assertIn("Interviewer:", out)
        self.assertIn("void rmsnorm(const float* x", out)
        self.assertIn("./grade interview check", out)
        s = self.state()
        with open(s["stages"][0]["source"], encoding="utf-8") as f:
            stub = f.read()
        self.assertIn("namespace workbook::lesson1", stub)
        self.assertNotIn("TODO", stub)  # the contract only, no walk-through
        code, out = self.grade("interview", "status", at=125)
        self.assertEqual(code, 0, out)
        self.assertIn("2:05 of 30:00; 27:55 left", out)
        code, out = self.grade("interview", "status", at=27 * 60)
        self.assertIn("only 3:00 left", out)

    def test_a_second_interview_while_one_runs_is_refused_and_names_the_first(self):
        self.grade("interview", "lesson1")
        source = self.state()["stages"][0]["source"]
        code, out = self.grade("interview", "lesson2")
        self.assertEqual(code, 64, out)
        self.assertIn("already running (lesson1", out)
        self.assertIn(os.path.basename(source), out)
        self.assertEqual(self.state()["lesson"], "lesson1")

    def test_check_runs_the_visible_cases_on_the_same_inputs_and_never_ends_the_interview(self):
        self.grade("interview", "lesson1")
        code, out = self.grade("interview", "check", at=60)
        self.assertEqual(code, 1, out)  # the bare stub fails
        self.assertIn("0 of 4 visible cases pass", out)
        self.assertIn("prime_cols", out)
        self.assertIn("correctness: 4 case(s)", out)  # one grader run over exactly the visible cases
        self.assertNotIn("odd_cols", out)  # a submit-only case
        shutil.copy(SOLUTION1, self.state()["stages"][0]["source"])
        code, out = self.grade("interview", "check", at=120)
        self.assertEqual(code, 0, out)
        self.assertIn("all 4 visible cases pass", out)
        attempts = self.state()["attempts"]
        self.assertEqual([a["kind"] for a in attempts], ["check", "check"])
        self.assertEqual(attempts[0]["seed"], attempts[1]["seed"])
        self.assertEqual(self.state()["phase"], "coding")
        with open(os.path.join(self.state()["workspace"], "report.md"), encoding="utf-8") as f:
            self.assertIn("| 2 | 2:00 | 1 (lesson1) | check | pass |", f.read())

    def test_a_cpu_lesson_never_speaks_of_a_gate(self):
        """Lesson 1 has no bandwidth gate: neither the check's verdict nor the report promises one."""
        self.grade("interview", "lesson1")
        shutil.copy(SOLUTION1, self.state()["stages"][0]["source"])
        code, out = self.grade("interview", "check", at=60)
        self.assertEqual(code, 0, out)
        self.assertIn("submit runs every case on fresh inputs: ./grade interview submit", out)
        self.assertNotIn("gate", out)
        with open(os.path.join(self.state()["workspace"], "report.md"), encoding="utf-8") as f:
            self.assertNotIn("gate", f.read())

    def test_random_picks_a_lesson_not_yet_passed_in_interview_mode(self):
        os.makedirs(self.interview_dir())
        names = [l.name for l in all_lessons()]
        with open(os.path.join(self.interview_dir(), "history.jsonl"), "w", encoding="utf-8") as f:
            for name in names[:-1]:
                f.write(json.dumps({"lesson": name, "first_stage_passed": True}) + "\n")
            f.write("not json\n")
        code, out = self.grade("interview", "random")
        self.assertEqual(code, 0, out)
        self.assertEqual(self.state()["lesson"], names[-1])


class SubmitTests(InterviewCase):
    def test_failing_then_passing_submits_then_the_next_stage(self):
        self.grade("interview", "lesson1", "--minutes", "30")
        source = self.state()["stages"][0]["source"]
        self.write(source, eps_outside_sqrt())
        code, out = self.grade("interview", "submit", at=300)
        self.assertEqual(code, 1, out)
        self.assertIn("FAIL  eps_inside_sqrt", out)
        self.assertIn("The interview goes on", out)
        code, out = self.grade("interview", "status", at=301)
        self.assertIn("1 submit(s); last: submit fail-correctness", out)
        shutil.copy(SOLUTION1, source)
        code, out = self.grade("interview", "submit", at=600)
        self.assertEqual(code, 0, out)
        self.assertIn("PASS", out)
        self.assertIn("Interviewer (stage 2, lesson2)", out)
        s = self.state()
        submits = [a for a in s["attempts"] if a["kind"] == "submit"]
        self.assertEqual([(a["verdict"], a["elapsed"]) for a in submits], [("fail-correctness", 300), ("pass", 600)])
        self.assertNotEqual(submits[0]["seed"], submits[1]["seed"])
        for a in submits:  # every submitted version is kept
            self.assertTrue(os.path.isfile(a["snapshot"]), a)
        with open(submits[0]["snapshot"], encoding="utf-8") as f:
            self.assertIn("std::sqrt(sum / static_cast<float>(cols)) + eps", f.read())
        stage2 = s["stages"][1]
        self.assertEqual((stage2["lesson"], stage2["started_at"]), ("lesson2", 600))
        with open(stage2["source"], encoding="utf-8") as f:
            text = f.read()
        self.assertIn("namespace workbook::lesson1", text)  # the passing code is carried over
        self.assertIn("namespace workbook::lesson2", text)
        self.assertIn("return cudaErrorNotYetImplemented;", text)
        with open(os.path.join(s["workspace"], "report.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("| 1 | 5:00 | 1 (lesson1) | submit | fail-correctness |", text)
        self.assertIn("| 2 | 10:00 | 1 (lesson1) | submit | pass |", text)
        self.assertIn("passed at 10:00 on submit 2 after 1 failing", text)

    def test_a_compile_error_is_a_counted_attempt_that_names_the_candidates_file(self):
        self.grade("interview", "lesson1")
        source = self.state()["stages"][0]["source"]
        self.write(source, "namespace workbook::lesson1 { void rmsnorm( }\n")
        code, out = self.grade("interview", "submit", at=60)
        self.assertEqual(code, 3, out)
        self.assertIn(os.path.basename(source), out)
        self.assertNotIn("attempts/", out.split("did not build")[0].split("building")[-1])
        a = self.state()["attempts"][0]
        self.assertEqual((a["verdict"], a["counted"]), ("fail-build", True))

    def test_over_time_is_shown_and_marked_and_a_pass_goes_to_the_questions(self):
        self.grade("interview", "lesson1", "--minutes", "10")
        shutil.copy(SOLUTION1, self.state()["stages"][0]["source"])
        code, out = self.grade("interview", "status", at=11 * 60)
        self.assertIn("OVER TIME by 1:00", out)
        self.assertIn("Time is up", out)
        code, out = self.grade("interview", "check", at=11 * 60 + 5)
        self.assertIn("OVER TIME", out)
        code, out = self.grade("interview", "submit", at=12 * 60)
        self.assertEqual(code, 0, out)
        self.assertIn("recorded as over time", out)
        self.assertIn("The coding part is over (time is up)", out)
        self.assertNotIn("stage 2", out)  # no new stage after time is up
        s = self.state()
        self.assertTrue(s["attempts"][-1]["over_time"])
        self.assertEqual(s["phase"], "questions")
        code, out = self.grade("interview", "submit", at=12 * 60 + 10)
        self.assertEqual(code, 64, out)
        self.assertIn("coding part of this interview is over", out)
        code, out = self.grade("interview", "questions", "--answers", self.answers(5, score=1), at=13 * 60)
        self.assertEqual(code, 0, out)
        code, out = self.grade("interview", "report")
        self.assertIn("| 2 | 12:00 (over time) | 1 (lesson1) | submit | pass |", out)
        self.assertIn("over time by 2:00", out)
        self.assertIn("5 answered; your scores: 5 of 10 points", out)
        code, out = self.grade("interview", "history")
        self.assertIn("12:00/10m!", out)


class StagesAndNumbersTests(InterviewCase):
    """Lesson 4's stages with the fake grader: bandwidth in the report and in the questions."""

    def test_stages_bandwidth_and_questions_on_the_candidates_numbers(self):
        bench = [bench_row("32768x4096", "bf16", 2700.0, 2800.0), bench_row("32768x256", "f16", 2000.0, 2500.0)]
        visible = interview_content.plan(all_lessons()[3]).check_cases
        check = report("pass", 4, cases=[{"name": f"{c}_f16", "passed": True, "detail": ""} for c in visible])
        script = self.fake_grader(check=check, submits=[
            report("pass", 4, bench=bench),
            report("fail-correctness", 5, reason="in_place_f16: y[row 3, col 7] was never written"),
            report("pass", 5, bench=[bench_row("32768x4096", "bf16", 2600.0, 2700.0)]),
        ])
        self.grade("interview", "lesson4", "--minutes", "45")
        code, out = self.grade("interview", "check", at=60)
        self.assertEqual(code, 0, out)
        checks = [c for c in self.grader_calls(script) if "--no-bench" in c]
        self.assertEqual(len(checks), 1)  # one run over the visible cases of lessons/04-vectorized/interview.md
        self.assertEqual(checks[0][checks[0].index("--cases") + 1].count(","), 4)
        code, out = self.grade("interview", "submit", at=20 * 60)
        self.assertEqual(code, 0, out)
        self.assertIn("Interviewer (stage 2, lesson5)", out)
        self.assertIn("fused_add_rmsnorm", out)
        code, out = self.grade("interview", "submit", at=25 * 60)
        self.assertEqual(code, 1, out)
        self.assertIn("in_place_f16", out)
        code, out = self.grade("interview", "submit", at=30 * 60)
        self.assertEqual(code, 0, out)
        self.assertIn("Interviewer (stage 3, lesson8)", out)
        s = self.state()
        self.assertEqual([st["lesson"] for st in s["stages"]], ["lesson4", "lesson5", "lesson8"])
        with open(s["stages"][2]["source"], encoding="utf-8") as f:
            text = f.read()
        for ns in ("lesson4", "lesson5", "lesson8"):
            self.assertIn(f"namespace workbook::{ns}", text)
        n = len(interview_content.questions(all_lessons()[3]))
        code, out = self.grade("interview", "questions", "--answers", self.answers(n), at=40 * 60)
        self.assertEqual(code, 64, out)  # stage 3 is open and time is left: ending the coding part needs a yes
        self.assertIn("--end-coding", out)
        code, out = self.grade("interview", "questions", "--end-coding", "--answers", self.answers(n), at=40 * 60)
        self.assertEqual(code, 0, out)
        # The slowest row relative to the reference, filled into the questions on the candidate's numbers.
        self.assertIn("On 32768x256 f16 your kernel moved 512.0 MiB per call", out)
        self.assertIn("You reached 0.80 of the reference on 32768x256 f16", out)
        self.assertIn("about 268.4 µs per call", out)  # 512 MiB at 2000 GB/s
        code, out = self.grade("interview", "report")
        self.assertIn("2 of 3 stage(s) passed", out)
        self.assertIn("stopped by the candidate after 2 passed stage(s)", out)
        self.assertIn("| 32768x256 | f16 | 2000 | 2500 | 0.80 | 67% |", out)
        self.assertIn("0.88 of the reference (geometric mean over 2 shapes), lowest 0.80 at 32768x256 f16", out)
        self.assertIn(f"{n} answered; your scores: {2 * n} of {2 * n} points", out)
        code, out = self.grade("interview", "history")
        self.assertRegex(out, rf"lesson4 +40:00/45m finished +2/3 +0\.88 +{2 * n}/{2 * n}")

    def test_no_gpu_is_not_a_failed_attempt(self):
        self.fake_grader(check=report("no-gpu", 4, cases=[], reason="no usable CUDA GPU here"),
                         submits=[report("no-gpu", 4, cases=[], reason="no usable CUDA GPU here")])
        self.grade("interview", "lesson4")
        code, out = self.grade("interview", "check", at=60)
        self.assertEqual(code, 4, out)
        self.assertEqual(out.count("fake grader"), 1, out)  # the first run said it all
        code, out = self.grade("interview", "submit", at=120)
        self.assertEqual(code, 4, out)
        self.assertIn("not counted as a failed attempt", out)
        s = self.state()
        self.assertEqual([(a["verdict"], a["counted"]) for a in s["attempts"]], [("no-gpu", False), ("no-gpu", False)])
        self.assertEqual((s["phase"], len(s["stages"])), ("coding", 1))
        code, out = self.grade("interview", "report")
        self.assertIn("no-gpu, not counted", out)
        self.assertIn("stage 1 (lesson4) not passed (0 counted submit(s))", out)

    @unittest.skipIf(has_gpu(), "this machine has a GPU; the emulator stands in only where there is none")
    def test_lesson10_without_a_gpu_is_graded_on_the_emulator(self):
        """Every GPU lesson is emulated, lesson 10 (a workspace, clusters on long rows) included: without a
        GPU its submit is graded on the CPU emulator, and the bare stub counts as a failed attempt. A no-GPU
        verdict, not counted, now comes only from a build without the emulator or a machine that cannot
        grade; test_no_gpu_is_not_a_failed_attempt covers it with a stand-in grader."""
        self.grade("interview", "lesson10")
        code, out = self.grade("interview", "submit", at=60)
        self.assertEqual(code, 1, out)
        self.assertIn("for the CPU emulator", out)
        self.assertIn("fail-correctness", out)
        self.assertNotIn("needs a GPU", out.replace("the bandwidth gate needs a GPU", ""))
        attempt = self.state()["attempts"][0]
        self.assertTrue(attempt["counted"])
        self.assertTrue(attempt["emulated"])

    @unittest.skipIf(has_gpu(), "this machine has a GPU; the emulator stands in only where there is none")
    def test_lesson7_without_a_gpu_is_graded_on_the_emulator(self):
        """Lesson 7 (programmatic dependent launch) is emulated too: without a GPU the bare stub's submit is
        graded there and counts as a failed attempt."""
        self.grade("interview", "lesson7")
        code, out = self.grade("interview", "submit", at=60)
        self.assertEqual(code, 1, out)
        self.assertIn("for the CPU emulator", out)
        self.assertIn("still the stub", out)
        self.assertTrue(self.state()["attempts"][0]["counted"])

    @unittest.skipIf(has_gpu(), "this machine has a GPU; the emulator stands in only where there is none")
    def test_without_a_gpu_the_emulator_grades_a_submit(self):
        """Lesson 2 without a GPU: the bare stub fails on the emulator (counted), the solution passes,
        correctness only, and the next stage opens."""
        self.grade("interview", "lesson2")
        code, out = self.grade("interview", "submit", at=60)
        self.assertEqual(code, 1, out)
        self.assertIn("for the CPU emulator", out)
        shutil.copy(os.path.join(ROOT, "solutions", "02-one-warp", "rmsnorm_one_warp.cu"),
                    self.state()["stages"][0]["source"])
        code, out = self.grade("interview", "submit", at=120)
        self.assertEqual(code, 0, out)
        self.assertIn("CPU emulator: correctness only", out)
        self.assertEqual([(a["verdict"], a["counted"]) for a in self.state()["attempts"]],
                         [("fail-correctness", True), ("pass", True)])

    def test_an_emulated_pass_is_correctness_only(self):
        self.fake_grader(submits=[report("pass", 2, emulated=True)])
        self.grade("interview", "lesson2")
        code, out = self.grade("interview", "submit", at=600)
        self.assertEqual(code, 0, out)
        self.assertIn("CPU emulator: correctness only", out)
        n = len(interview_content.readme_questions(all_lessons()[1]))
        code, out = self.grade("interview", "questions", "--end-coding", "--answers", self.answers(n), at=700)
        self.assertIn("on your own measured numbers are left out", out)
        code, out = self.grade("interview", "report")
        self.assertIn("pass, emulated: correctness only", out)
        self.assertIn("not measured: graded on the CPU emulator", out)
        self.assertIn(f"{n} answered", out)


class QuestionTests(InterviewCase):
    def test_answers_file_scores_and_a_bad_score_is_named(self):
        bad = self.write(os.path.join(self.tmp, "bad.txt"), "one\nscore: 2\n---\ntwo\nscore: 5\n")
        self.grade("interview", "lesson1")
        code, out = self.grade("interview", "questions", "--answers", bad)
        self.assertEqual(code, 64, out)
        self.assertIn("answer 2: the score must be 0, 1 or 2, not '5'", out)
        self.assertEqual(self.state()["phase"], "coding")  # nothing changed
        code, out = self.grade("interview", "questions")  # no terminal, no file
        self.assertEqual(code, 64, out)
        self.assertIn("--answers FILE", out)

    def test_questions_are_asked_one_at_a_time_from_the_keyboard(self):
        qs = [interview_content.Question("Q one?", "Model one."), interview_content.Question("Q two?", "Model two.")]
        typed = io.StringIO("first line\nsecond line\n\n7\n2\nonly\n\n\n")
        done = []
        out = io.StringIO()
        stdout, sys.stdout = sys.stdout, out
        try:
            interview_questions.ask(qs, [], done.append, stream=typed)
        finally:
            sys.stdout = stdout
        self.assertEqual([(d["answer"], d["score"]) for d in done], [("first line\nsecond line", 2), ("only", None)])
        self.assertIn("'7' is not a score", out.getvalue())
        self.assertLess(out.getvalue().index("Model one."), out.getvalue().index("Q two?"))

    def test_the_score_card_says_answered_scored_and_points_plainly(self):
        q = interview_report.questions_text
        self.assertEqual(q(5, [2, 1, 2]), "5 answered; your scores: 5 of 6 points over the 3 you scored (2 not scored)")
        self.assertEqual(q(6, [2, 2, 1, 2, 2, 1]), "6 answered; your scores: 10 of 12 points")
        self.assertEqual(q(3, []), "3 answered; none scored")
        state = {"stages": [], "planned": [], "minutes": 45, "phase": "done", "coding_ended": 60,
                 "qa": [{"score": 2}, {"score": None}, {"score": 1}], "attempts": []}
        row = dict(interview_report.scorecard(state, lambda name: True))["questions"]
        self.assertEqual(row, "3 answered; your scores: 3 of 4 points over the 2 you scored (1 not scored)")
        self.assertNotIn("self-scored (", row)

    def test_an_interrupted_round_resumes_at_the_next_question(self):
        qs = [interview_content.Question(f"Q{i}?", f"M{i}.") for i in range(3)]
        answers = [("a0", 2), ("a1", 1), ("a2", 0)]
        done = [{"question": "Q0?", "answer": "a0", "score": 2}]
        sys.stdout, stdout = io.StringIO(), sys.stdout
        try:
            interview_questions.ask(qs, done, done.append, answers)
        finally:
            sys.stdout = stdout
        self.assertEqual([d["answer"] for d in done], ["a0", "a1", "a2"])


class OnATerminal:
    """./grade run on a pseudo-terminal (stdin, stdout and stderr), answering prompts as a person would:
    `steps` is a list of (text to wait for, what to type), where typing None sends Ctrl-C instead."""

    def __init__(self, args, env, steps, timeout=120):
        import pty
        import select
        import signal
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, GRADE, *args], cwd=ROOT, env=env, stdin=slave, stdout=slave,
                                stderr=slave, close_fds=True)
        os.close(slave)
        out, steps, deadline = b"", list(steps), __import__("time").monotonic() + timeout
        while __import__("time").monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    data = os.read(master, 4096)
                except OSError:
                    data = b""
                if not data:
                    break
                out += data
            while steps and steps[0][0].encode() in out:
                wait_for, typed = steps.pop(0)
                out = out.replace(wait_for.encode(), wait_for.encode() + b"<seen>", 1)
                if typed is None:
                    proc.send_signal(signal.SIGINT)
                else:
                    os.write(master, typed.encode())
        os.close(master)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.code = proc.returncode
        self.out = out.replace(b"<seen>", b"").decode("utf-8", "replace").replace("\r\n", "\n")
        self.steps_left = steps


class EndOfCodingTests(InterviewCase):
    """Going to the questions ends the coding part: while a stage is open and time is left, it asks first."""

    def on_terminal(self, steps, *args, at=0.0):
        return OnATerminal(["interview", "questions", *args], dict(self.env, WORKBOOK_NOW=str(T0 + at)), steps)

    def test_without_a_terminal_it_needs_end_coding(self):
        self.grade("interview", "lesson1", "--minutes", "30")
        code, out = self.grade("interview", "questions", "--answers", self.answers(5), at=300)
        self.assertEqual(code, 64, out)
        self.assertIn("the coding part is not over: stage 1 (lesson1) is not passed yet and 25:00 of 30:00 are left",
                      out)
        self.assertIn("--end-coding", out)
        s = self.state()
        self.assertEqual((s["phase"], s["qa"]), ("coding", []))
        code, out = self.grade("interview", "questions", "--end-coding", "--answers", self.answers(5), at=310)
        self.assertEqual(code, 0, out)
        self.assertIn("stopped by the candidate after 0 passed stage(s)", out)

    def test_on_a_terminal_it_asks_and_no_keeps_coding(self):
        self.grade("interview", "lesson1", "--minutes", "30")
        run = self.on_terminal([("[y/N]", "n\n")], at=300)
        self.assertEqual(run.code, 0, run.out)
        self.assertIn("The coding part is not over", run.out)
        self.assertIn("The coding part goes on", run.out)
        self.assertEqual(self.state()["phase"], "coding")
        code, out = self.grade("interview", "check", at=320)
        self.assertNotIn("coding part of this interview is over", out)

    def test_once_time_is_up_it_does_not_ask(self):
        self.grade("interview", "lesson1", "--minutes", "10")
        code, out = self.grade("interview", "questions", "--answers", self.answers(5), at=11 * 60)
        self.assertEqual(code, 0, out)
        self.assertIn("(time is up)", self.grade("interview", "report")[1])

    def test_an_answers_file_goes_on_from_the_first_question_not_answered(self):
        """Q1 answered at the keyboard, then Ctrl-C; an answers file of two blocks answers Q2 and Q3, and
        the questions after them stay open; a last file finishes the round."""
        self.grade("interview", "lesson1", "--minutes", "30")
        run = self.on_terminal([("[y/N]", "y\n"), ("finish with an empty line", "typed at the keyboard\n\n"),
                                ("Enter to leave it unscored", "1\n"), ("Q2 of", None)], at=60)
        self.assertEqual(run.steps_left, [], run.out)
        s = self.state()
        total = len(interview_content.questions(all_lessons()[0]))
        self.assertEqual([(x["answer"], x["score"]) for x in s["qa"]], [("typed at the keyboard", 1)])
        self.assertEqual(s["phase"], "questions")
        two = self.write(os.path.join(self.tmp, "two.txt"), "file answer A\nscore: 2\n---\nfile answer B\n")
        code, out = self.grade("interview", "questions", "--answers", two, at=120)
        self.assertEqual(code, 0, out)
        self.assertIn("1 of 5 answered already; 4 to go, from Q2".replace("5", str(total)), out)
        self.assertIn("the answers file's first answer is taken for Q2", out)
        self.assertIn("Q2 of", out)
        self.assertNotIn("Q1 of", out)
        self.assertIn(f"not answered yet (the answers file ran out): Q4 to Q{total}", out)
        s = self.state()
        self.assertEqual([(x["answer"], x["score"]) for x in s["qa"]],
                         [("typed at the keyboard", 1), ("file answer A", 2), ("file answer B", None)])
        self.assertEqual(s["phase"], "questions")  # not closed: questions are left
        rest = self.write(os.path.join(self.tmp, "rest.txt"),
                          "\n---\n".join(f"last {i}\nscore: 2" for i in range(total - 3)) + "\n")
        code, out = self.grade("interview", "questions", "--answers", rest, at=180)
        self.assertEqual(code, 0, out)
        self.assertIn("Score card", out)
        answers = [x["answer"] for x in json.load(open(os.path.join(s["workspace"], "interview.json")))["qa"]]
        self.assertEqual(answers[:4], ["typed at the keyboard", "file answer A", "file answer B", "last 0"])
        self.assertEqual(len(answers), total)
        self.assertIn(f"{total} answered; your scores: {1 + 2 + 2 * (total - 3)} of {2 * (total - 1)} points over "
                      f"the {total - 1} you scored (1 not scored)", out)


class RobustnessTests(InterviewCase):
    def test_abandon_keeps_the_files_and_records_it(self):
        self.grade("interview", "lesson1")
        source = self.state()["stages"][0]["source"]
        code, out = self.grade("interview", "abandon", at=90)
        self.assertEqual(code, 0, out)
        self.assertIn("its files stay", out)
        self.assertTrue(os.path.isfile(source))
        code, out = self.grade("interview", "status")
        self.assertIn("No interview is running", out)
        code, out = self.grade("interview", "history")
        self.assertIn("abandoned", out)
        code, out = self.grade("interview", "lesson1", at=100)
        self.assertEqual(code, 0, out)

    def assert_damaged_state_is_named(self, state_file, source, what):
        with open(source, encoding="utf-8") as f:
            code_before = f.read()
        for command in ("status", "check", "submit", "lesson2"):
            code, out = self.grade("interview", command)
            self.assertEqual(code, 4, out)
            self.assertIn(os.path.basename(state_file), out)
            self.assertIn(what, out)
            self.assertIn(f"Your code is untouched: {source}", out.replace(ROOT + "/", ""))
            self.assertNotIn("Traceback", out)
        with open(source, encoding="utf-8") as f:
            self.assertEqual(f.read(), code_before)
        code, out = self.grade("interview", "abandon")
        self.assertEqual(code, 0, out)
        code, out = self.grade("interview", "lesson1", at=10)
        self.assertEqual(code, 0, out)
        with open(source, encoding="utf-8") as f:
            self.assertEqual(f.read(), code_before)

    def test_a_damaged_state_file(self):
        self.grade("interview", "lesson1")
        s = self.state()
        path = os.path.join(s["workspace"], "interview.json")
        self.write(path, '{"lesson": "lesson1", "minu')
        self.assert_damaged_state_is_named(path, s["stages"][0]["source"], "is damaged")

    def test_a_missing_state_file(self):
        self.grade("interview", "lesson1")
        s = self.state()
        path = os.path.join(s["workspace"], "interview.json")
        os.remove(path)
        self.assert_damaged_state_is_named(path, s["stages"][0]["source"], "is missing")

    def test_a_damaged_pointer_names_every_workspace_file(self):
        self.grade("interview", "lesson1")
        s = self.state()
        self.write(os.path.join(self.interview_dir(), "current.json"), "][")
        self.assert_damaged_state_is_named("current.json", s["stages"][0]["source"], "is damaged")

    def test_without_an_interview(self):
        for command in ("check", "submit", "questions"):
            code, out = self.grade("interview", command)
            self.assertEqual(code, 64, out)
            self.assertIn("no interview is running", out)
        code, out = self.grade("interview", "report")
        self.assertIn("No interviews yet", out)


class LessonFilesTests(unittest.TestCase):
    """Every lesson's interview.md: real case names, existing stage lessons, enough questions."""

    def grader_case_names(self, lesson):
        """The lesson's case names as the built grader lists them (--list-cases: many names are generated
        from tables); None where the grader or the reference is not built."""
        import test_contract_rules as rules  # beside this file: finds the built grader and references

        binary = rules.grader_for(lesson.number)
        if not binary or not os.path.exists(rules.reference_library(lesson.number)):
            return None
        return set(rules.list_cases(binary, lesson.number))

    def test_every_lesson_has_an_interview(self):
        unbuilt = []
        for lesson in all_lessons():
            plan = interview_content.plan(lesson)
            names = self.grader_case_names(lesson)
            if names is None:
                unbuilt.append(lesson.name)
            for case in plan.check_cases if names is not None else []:
                self.assertTrue(any(case in n for n in names), f"{lesson.name}: no grader case matches '{case}'")
            for stage in plan.stages:
                self.assertNotEqual(stage.lesson, lesson.name)
                self.assertGreater(len(stage.prompt), 100, stage)
            questions = interview_content.questions(lesson)
            if lesson.number >= 2:
                self.assertGreaterEqual(len(questions), 5, lesson.name)
                self.assertTrue(any(q.needs_numbers for q in questions), lesson.name)
                self.assertTrue(any("{bytes_mib}" in q.text + q.model for q in questions), lesson.name)
            for q in questions:
                for name in interview_content.PLACEHOLDER.findall(q.text + q.model):
                    self.assertIn(name, interview_content.PLACEHOLDERS, f"{lesson.name}: {{{name}}} in {q.text}")
        self.assertTrue(any(interview_content.plan(l).stages for l in all_lessons() if l.number == 4))
        if unbuilt:
            self.skipTest(f"the interviews' case names were not checked for {', '.join(unbuilt)}: the grader "
                          "and the references are not built (WORKBOOK_BUILD_DIR)")

    def test_the_opening_paragraph_is_prose_not_half_a_code_block(self):
        """The prompt's first paragraph comes from 'What you build'; a blank line inside a code block
        there (lesson 9's contract has one) must not make the block's second half the opening."""
        from workbook.interview_workspace import prompt
        for lesson in all_lessons():
            for paragraph in prompt(lesson, 45).split("\n\n"):
                self.assertNotIn("```", paragraph, lesson.name)
            task = interview_workspace.task(lesson)
            self.assertNotRegex(task, r"\bnamespace\b|#include|\);\s*$", lesson.name)
            self.assertGreater(len(task.split("\n\n")[0]), len("Your task: ") + 20, lesson.name)

    def test_the_prompt_states_the_operator_its_formula_and_the_contract_first(self):
        """What an interviewer says first: the operator and its formula, then the task, then the contract,
        then the rules; the lesson's file names and build commands are not part of it."""
        from workbook.interview_workspace import prompt
        for lesson in all_lessons():
            text = prompt(lesson, 45)
            self.assertTrue(text.startswith("Interviewer: the operator is RMSNorm"), lesson.name)
            formula = text.index("y[r, c] = x[r, c] / sqrt(")
            task = text.index("Your task: ")
            contract = text.index(interview_content.contract(lesson))
            rules = text.index("Any valid input must work")
            self.assertLess(formula, task, lesson.name)
            self.assertLess(task, contract, lesson.name)
            self.assertLess(contract, rules, lesson.name)
            self.assertNotIn("exercises/", text, lesson.name)
            self.assertNotRegex(text, r"(?m)^\s*make lesson", lesson.name)
        # The lesson's own formulas come with it (lesson 5's fused add, lesson 10's backward pass).
        self.assertIn("residual_out = s rounded to T", prompt(find_lesson("lesson5"), 45))
        self.assertIn("dx      = rstd · (g − x̂ · m)", prompt(find_lesson("lesson10"), 45))

    def test_a_stage_naming_its_own_lesson_is_refused(self):
        lesson = all_lessons()[0]
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, lesson.slug)
            os.makedirs(folder)
            shutil.copy(lesson.readme, folder)
            with open(os.path.join(folder, "interview.md"), "w", encoding="utf-8") as f:
                f.write("## Cases run by check\n\n`one_row`\n\n## Stage: lesson1\n\nAgain, the same.\n")

            class Copied(type(lesson)):
                readme = os.path.join(folder, "README.md")

            with self.assertRaises(UsageError) as ctx:
                interview_content.plan(Copied(lesson.number, lesson.slug))
            self.assertIn("cannot be lesson1 itself", str(ctx.exception))


class DemoScriptTests(InterviewCase):
    def test_the_demo_runs_lesson1_as_far_as_this_machine_allows(self):
        out_dir = os.path.join(self.tmp, "out")
        os.makedirs(out_dir)
        env = dict(self.env, OUT=out_dir)
        env.pop("WORKBOOK_NOW")
        env.pop("WORKBOOK_STATE_DIR")
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "interview-demo"), "--lesson", "1",
                               "--state-dir", os.path.join(self.tmp, "demo-state")], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=900)
        out = proc.stdout + proc.stderr
        self.assertEqual(proc.returncode, 0, out)
        for step in ("check 1", "check 2", "submit 1 of stage 1", "submit 2 of stage 1", "Q1 of", "Score card"):
            self.assertIn(step, out)
        with open(os.path.join(out_dir, "interview-report.md"), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("# Mock interview: lesson1", text)
        self.assertIn("| 3 |", text)
        self.assertTrue(os.path.isfile(os.path.join(out_dir, "interview-history.txt")))


if __name__ == "__main__":
    unittest.main()
