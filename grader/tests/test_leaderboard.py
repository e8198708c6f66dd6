"""The instructors' leaderboard: ranking, ties, GPU separation, exports, the signed result store, and
real runs on lesson 1: a hostile class of eighteen submissions graded twice (hostile_class.py), a
tampered cache, a board without a sandbox, and a Slurm array's records merged."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook import leaderboard  # noqa: E402
from workbook.board import exports, gpu_guard, ranking  # noqa: E402
from workbook.board.grading import classify  # noqa: E402
from workbook.board.result_store import ResultStore  # noqa: E402
import hostile_class  # noqa: E402
from workbook.lessons import find_lesson  # noqa: E402


def result(name, gbps, status="correct", gpu="GPU A", noise=0.01):
    bench = [{"student_gbps": gbps, "ratio": gbps / 2000.0, "copy_fraction": gbps / 3000.0, "noise": noise}] \
        if gbps else []
    r = {"name": name, "status": status, "gpu": gpu, "detail": "" if status == "correct" else "why", "bench": bench}
    r.update(ranking.summarise(bench))
    return r


class RankingTests(unittest.TestCase):
    def test_correct_ranked_by_bandwidth_failures_last(self):
        ranked = ranking.rank([result("slow", 1000), result("fast", 2500), result("broken", 0, "compile error"),
                                   result("mid", 1800)])["GPU A"]
        self.assertEqual([r["name"] for r in ranked], ["fast", "mid", "slow", "broken"])
        self.assertEqual([r["rank"] for r in ranked], [1, 2, 3, None])

    def test_results_inside_the_noise_band_tie(self):
        ranked = ranking.rank([result("a", 2000, noise=0.02), result("b", 1980, noise=0.02),
                                   result("c", 1500)])["GPU A"]
        self.assertEqual([ranking.rank_text(r) for r in ranked], ["=1", "=1", "3"])

    def test_each_gpu_model_is_ranked_on_its_own(self):
        ranked = ranking.rank([result("a", 2000, gpu="GPU A"), result("b", 3000, gpu="GPU B")])
        self.assertEqual(sorted(ranked), ["GPU A", "GPU B"])
        self.assertEqual(ranked["GPU B"][0]["rank"], 1)
        self.assertEqual(ranked["GPU A"][0]["rank"], 1)

    def test_failures_are_named(self):
        c = classify
        self.assertEqual(c({"verdict": "fail-correctness", "reason": "prime_cols: y[row 1, col 2]: expected"}, 1,
                           False), "wrong answer at prime_cols")
        self.assertEqual(c({"verdict": "fail-correctness",
                            "reason": "one_row: the kernel crashed with cudaErrorIllegalAddress"}, 1, False),
                         "illegal address")
        self.assertEqual(c({"verdict": "fail-correctness",
                            "reason": "cols_1: the kernel did not finish within 30 s"}, 1, False), "hang")
        self.assertEqual(c({"verdict": "fail-correctness",
                            "reason": "x: wrote outside the output: 4 byte(s) changed"}, 1, False),
                         "write outside the output")
        self.assertEqual(c(None, None, True), "time limit")
        self.assertEqual(c({"verdict": "fail-gate"}, 2, False), "correct, below the gate")
        self.assertEqual(c({"verdict": "fail-correctness", "still_stub": True, "reason": "rows_zero: still the stub"},
                           1, False), "still the stub")
        stream = {"verdict": "fail-correctness", "reason": "one_row: nothing was launched on the grader's stream",
                  "cases": [{"name": "rows_zero", "passed": True}, {"name": "one_row", "passed": False,
                                                                     "cause": "stream"}]}
        self.assertEqual(c(stream, 1, False), "wrong stream at one_row")
        stream["cases"][1]["cause"] = "launch"
        self.assertEqual(c(stream, 1, False), "launch error at one_row")

    def test_exports(self):
        lesson = find_lesson("lesson4")
        ranked = ranking.rank([result("ann", 2500), result("ben", 0, "wrong answer at prime_cols")])
        with tempfile.TemporaryDirectory() as tmp:
            meta = {"sandbox": "bubblewrap sandbox", "isolated": True}
            paths = exports.export(ranked, lesson, meta, tmp)
            self.assertEqual(len(paths), 4)
            with open(os.path.join(tmp, "leaderboard.html"), encoding="utf-8") as f:
                page = f.read()
            self.assertIn("<svg", page)
            self.assertIn("ann", page)
            self.assertIn("Graded in a bubblewrap sandbox", page)
            self.assertNotIn("<script", page)  # self-contained, static
            with open(os.path.join(tmp, "leaderboard.csv"), encoding="utf-8") as f:
                self.assertEqual(len(f.read().strip().splitlines()), 4)  # the sandbox line, header, 2 rows
            with open(os.path.join(tmp, "leaderboard.json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f)["boards"]["GPU A"][0]["name"], "ann")
            with open(os.path.join(tmp, "leaderboard.md"), encoding="utf-8") as f:
                self.assertIn("| 1 | ann | correct | 2500 |", f.read())


    def test_the_detail_is_never_cut_inside_a_word(self):
        """The HTML page and the files keep the whole detail (the page wraps it between words); the
        terminal table shortens it at a word boundary, with an ellipsis."""
        lesson = find_lesson("lesson4")
        long = ("wrong answer at prime_cols: y[row 3, col 7] expected 0.51234567, got 0.51299999, off by more than "
                "the tolerance 0.00000012; 4091 of the elements are wrong, 0 of them never written (repetition 1 of 2)")
        failing = result("ben", 0, "wrong answer at prime_cols")
        failing["detail"] = long
        ranked = ranking.rank([result("ann", 2500), failing])
        meta = {"sandbox": "bubblewrap sandbox", "isolated": True}
        page = exports.to_html(ranked, lesson, meta)
        self.assertIn(f"<td class='detail'>{long}</td>", page)
        self.assertRegex(page, r"td\.detail\{[^}]*white-space:normal")
        self.assertIn(long, exports.to_markdown(ranked, lesson, meta))
        self.assertIn(long, exports.to_csv(ranked, meta, lesson))
        text = exports.to_text(ranked, lesson, meta)
        shown = [l for l in text.splitlines() if "ben" in l][0]
        cut = shown[shown.index("wrong answer at prime_cols: y["):]
        self.assertTrue(cut.endswith("…"), cut)
        self.assertTrue(long.startswith(cut[:-1]), cut)
        self.assertEqual(long[len(cut) - 1], " ", f"cut inside a word: {cut!r}")
        self.assertLessEqual(len(cut), exports.TEXT_DETAIL_LIMIT)

    def test_a_cpu_lessons_empty_bandwidth_columns_are_explained(self):
        """Lesson 1 is graded on the CPU: nothing is timed, and every export says so where GB/s is empty."""
        lesson = find_lesson("lesson1")
        ranked = ranking.rank([result("ann", 0, gpu="no GPU"), result("ben", 0, "wrong answer at one_row",
                                                                      gpu="no GPU")])
        meta = {"sandbox": "bubblewrap sandbox", "isolated": True}
        note = "lesson1 is a CPU lesson: it is graded for correctness only, nothing is timed"
        with tempfile.TemporaryDirectory() as tmp:
            for path in exports.export(ranked, lesson, meta, tmp):
                with open(path, encoding="utf-8") as f:
                    self.assertIn(note, f.read(), path)
        self.assertIn(note, exports.to_text(ranked, lesson, meta))
        self.assertNotIn("CPU lesson", exports.to_text(ranking.rank([result("ann", 2500)]), find_lesson("lesson4"),
                                                       meta))

    def test_a_result_timed_next_to_another_gpu_process_is_not_ranked(self):
        shared = result("zed", 2600)
        shared.update({"clean": False, "foreign_gpu": ["pid 77 (python3, 1024 MiB)"]})
        ranked = ranking.rank([result("ann", 2500), shared])["GPU A"]
        self.assertEqual([(r["name"], r["rank"]) for r in ranked], [("ann", 1), ("zed", None)])
        self.assertIn("pid 77", exports.row(ranked[1])[-1])

    def test_the_heading_shows_the_clocks_read_while_timing(self):
        """The clocks the grader read during the timed samples, not the idle clock read before the run."""
        lesson = find_lesson("lesson4")
        meta = {"sandbox": "bubblewrap sandbox", "isolated": True}
        timed = [result("ann", 2500), result("ben", 2400)]
        timed[0].update(idle_sm_clock="345 MHz", clocks={"samples": 40, "sm_mhz": 1980, "sm_min_mhz": 1755,
                                                         "sm_max_mhz": 1980, "mem_mhz": 2619})
        timed[1].update(clocks={"samples": 30, "sm_mhz": 1965, "sm_min_mhz": 1965, "sm_max_mhz": 1980,
                                "mem_mhz": 2619})
        text = exports.to_text(ranking.rank(timed), lesson, meta)
        self.assertIn("while timing: SM clock 1972 MHz (1755–1980), memory clock 2619 MHz", text)
        self.assertNotIn("345", text)
        self.assertIn("clocks not measured while timing",
                      exports.to_text(ranking.rank([result("ann", 2500)]), lesson, meta))

    def test_the_run_summary_counts_each_slot(self):
        rows = [dict(result("ann", 2500), device="0", grading_s=30.0), dict(result("ben", 2400), device="1",
                                                                             grading_s=20.5),
                dict(result("cleo", 2500), device="0", grading_s=12.0),
                dict(result("dan", 0, "still the stub"), cached=True, device="1", grading_s=5.0)]
        summary = leaderboard.run_summary(rows, [0, 1], 44.4)
        self.assertEqual(summary["busy"], {"0": {"seconds": 42.0, "gradings": 2}, "1": {"seconds": 20.5, "gradings": 1}})
        self.assertEqual(summary["cached"], 1)
        self.assertEqual(summary["text"], "4 submission(s) in 44.4 s on 2 slot(s): GPU 0 busy 42 s (2 gradings), "
                                          "GPU 1 busy 20 s (1 grading); 1 from the cache")

    def test_a_gpu_lesson_without_gpus_names_the_default_gpu_not_the_cpu(self):
        rows = [dict(result("ann", 2500), device="default", grading_s=30.0)]
        self.assertEqual(leaderboard.run_summary(rows, [None], 31.0)["text"],
                         "1 submission(s) in 31.0 s on 1 slot(s): the default GPU busy 30 s (1 grading)")

    def test_every_export_says_when_there_was_no_sandbox(self):
        lesson = find_lesson("lesson1")
        meta = {"sandbox": "NO SANDBOX: bubblewrap is not installed", "isolated": False}
        ranked = ranking.rank([result("ann", 0)])
        self.assertTrue(exports.to_text(ranked, lesson, meta).startswith("WARNING: NO SANDBOX"))
        with tempfile.TemporaryDirectory() as tmp:
            for path in exports.export(ranked, lesson, meta, tmp):
                with open(path, encoding="utf-8") as f:
                    self.assertIn("NO SANDBOX: bubblewrap is not installed", f.read(), path)


class GpuGuardTests(unittest.TestCase):
    @staticmethod
    def _listing(answers):
        calls = []

        def query(device):
            calls.append(device)
            return answers[min(len(calls), len(answers)) - 1]
        return query, calls

    def test_a_process_that_leaves_while_its_context_is_torn_down_is_not_foreign(self):
        query, calls = self._listing([(["pid 7 ([Not Found], 554 MiB)"], None)] * 3 + [([], None)])
        found, note = gpu_guard.settled_foreign_processes(0, wait=5, poll=0.01, query=query)
        self.assertEqual((found, note), ([], None))
        self.assertEqual(len(calls), 4)

    def test_a_process_that_stays_is_foreign(self):
        query, calls = self._listing([(["pid 9 (python3, 2048 MiB)"], None)])
        found, _ = gpu_guard.settled_foreign_processes(0, wait=0.05, poll=0.01, query=query)
        self.assertEqual(found, ["pid 9 (python3, 2048 MiB)"])
        self.assertGreater(len(calls), 1)

    def test_an_unanswered_question_is_not_retried(self):
        query, calls = self._listing([([], "nvidia-smi could not list the GPU's processes: x")])
        self.assertEqual(gpu_guard.settled_foreign_processes(0, wait=5, poll=0.01, query=query)[1],
                         "nvidia-smi could not list the GPU's processes: x")
        self.assertEqual(len(calls), 1)


class ResultStoreTests(unittest.TestCase):
    def test_only_records_this_board_signed_are_read(self):
        with tempfile.TemporaryDirectory() as tmp:
            store = ResultStore(os.path.join(tmp, "board"))
            path = os.path.join(tmp, "r.json")
            store.write(path, {"name": "ann", "status": "correct"})
            self.assertEqual(store.read(path)["status"], "correct")
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            data["record"]["status"] = "correct, and first"
            with open(path, "w", encoding="utf-8") as f:
                json.dump(data, f)
            self.assertIsNone(store.read(path))
            self.assertIn("not written by this board", store.refused[-1][1])
            with open(path, "w", encoding="utf-8") as f:
                f.write("HACKED")
            self.assertIsNone(store.read(path))
            other = ResultStore(os.path.join(tmp, "another-board"))  # a different key
            store.write(path, {"name": "ann"})
            self.assertIsNone(other.read(path))
            self.assertEqual(os.stat(os.path.join(tmp, "board", "board.key")).st_mode & 0o777, 0o600)


def _class_folder(tmp, names=("ann", "dan", "eve")):
    """A small class (from hostile_class) of an honest, a stub and a wrong submission."""
    subs = os.path.join(tmp, "subs")
    everyone = os.path.join(tmp, "everyone")
    hostile_class.write_class(find_lesson("lesson1"), everyone, 9)
    os.makedirs(subs)
    for n in names:
        shutil.copy(os.path.join(everyone, n + ".cpp"), os.path.join(subs, n + ".cpp"))
    return subs


class LessonOneRunTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="workbook-lb-")
        self.env = dict(os.environ, WORKBOOK_STATE_DIR=os.path.join(self.tmp, "state"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def grade(self, *args):
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "grade"), "leaderboard", *args], env=self.env,
                              capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    def test_a_hostile_class_is_graded_right_twice(self):
        """Eighteen submissions, honest, wrong and hostile; every row right, from the cache too."""
        code = hostile_class.run(["--lesson", "lesson1", "--work", os.path.join(self.tmp, "class")])
        self.assertEqual(code, 0, "see the table of checks above")

    def test_a_cache_entry_the_board_did_not_sign_is_graded_again(self):
        subs = _class_folder(self.tmp)
        code, out = self.grade("lesson1", subs)
        self.assertEqual(code, 0, out)
        cache = os.path.join(self.tmp, "state", "leaderboard", "cache")
        for entry in os.listdir(cache):
            with open(os.path.join(cache, entry), encoding="utf-8") as f:
                data = json.load(f)
            data["record"]["status"] = "correct, and first"
            with open(os.path.join(cache, entry), "w", encoding="utf-8") as f:
                json.dump(data, f)
        code, out = self.grade("lesson1", subs)
        self.assertEqual(code, 0, out)
        self.assertEqual(out.count("was not written by this board"), 3, out)
        self.assertNotIn("(cached)", out)
        self.assertRegex(out, r"dan: still the stub")

    def test_without_a_sandbox_the_board_says_so_and_still_limits(self):
        subs = _class_folder(self.tmp, ("ann", "gus"))
        code, out = self.grade("lesson1", subs, "--no-sandbox", "--timeout", "5", "--out", os.path.join(self.tmp, "o"))
        self.assertEqual(code, 0, out)
        self.assertTrue(out.startswith("WARNING: NO SANDBOX: turned off with --no-sandbox"), out)
        self.assertRegex(out, r"gus\s+time limit")
        with open(os.path.join(self.tmp, "o", "leaderboard.md"), encoding="utf-8") as f:
            self.assertIn("NO SANDBOX", f.read())

    def test_a_process_left_running_is_ended_with_the_verdict_and_named(self):
        """lea starts a sleeper that would outlive its grading (new session, double fork, renamed). The
        row names it and is not ranked; nothing waited for it: the time limit, far beyond the grading,
        is not what ended it; and nothing of it is left. With the sandbox and without it."""
        subs = _class_folder(self.tmp, ("ann", "lea"))
        for extra in ([], ["--no-sandbox"]):
            out_dir = os.path.join(self.tmp, "out" + "".join(extra))
            code, out = self.grade("lesson1", subs, "--timeout", "300", "--no-cache", "--out", out_dir, *extra)
            self.assertEqual(code, 0, out)
            with open(os.path.join(out_dir, "leaderboard.json"), encoding="utf-8") as f:
                rows = {r["name"]: r for group in json.load(f)["boards"].values() for r in group}
            lea = rows["lea"]
            self.assertEqual(lea["status"], "left a process running", (extra, lea))
            self.assertRegex(lea["detail"], r"pid \d+ \(wb-leftover\)")
            self.assertIn("The grading's verdict: correct", lea["detail"])
            self.assertTrue(any(b["left_running"] for b in lea["beside"]), lea["beside"])
            self.assertIsNone(lea["rank"])
            self.assertEqual((rows["ann"]["status"], rows["ann"]["rank"], rows["ann"].get("beside")),
                             ("correct", 1, None))
            self.assertEqual(hostile_class._ticketed(), [], extra)

    def test_two_device_slots_grade_side_by_side(self):
        """--gpus gives one grading per slot; here (no GPU, lesson 1) the slots' scheduling is what is tested."""
        subs = _class_folder(self.tmp, ("ann", "ben", "dan", "eve"))
        code, out = self.grade("lesson1", subs, "--gpus", "0,1")
        self.assertEqual(code, 0, out)
        self.assertIn("on 2 device slot(s)", out)
        for name, status in (("ann", "correct"), ("ben", "correct"), ("dan", "still the stub"),
                             ("eve", "wrong answer at")):
            self.assertRegex(out, rf"{name}\s+{status}")

    def test_slurm_array_then_merge(self):
        subs = _class_folder(self.tmp)
        script = os.path.join(self.tmp, "job.sh")
        results = os.path.join(self.tmp, "results")
        code, out = self.grade("lesson1", subs, "--slurm", script, "--result-dir", results)
        self.assertEqual(code, 0, out)
        with open(script, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("#SBATCH --array=0-2", text)
        self.assertNotIn("--gres=gpu", text)  # lesson 1 needs no GPU
        for task in ("0", "1", "2"):  # what the array's tasks run
            code, out = self.grade("lesson1", subs, "--only", task, "--result-dir", results)
            self.assertEqual(code, 0, out)
        with open(os.path.join(results, "forged.json"), "w", encoding="utf-8") as f:
            json.dump({"record": {"name": "mallory", "status": "correct", "gpu": "no GPU"}, "signature": "0" * 64}, f)
        code, out = self.grade("merge", "lesson1", results)
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"1\s+ann\s+correct")
        self.assertRegex(out, r"dan\s+still the stub")
        self.assertIn("refused", out)
        self.assertNotRegex(out, r"\d\s+mallory")


if __name__ == "__main__":
    unittest.main()
