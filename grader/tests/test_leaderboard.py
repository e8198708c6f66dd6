"""The instructors' leaderboard: ranking, ties, GPU separation, exports, and a real run on lesson 1
with a correct, a wrong, a broken and a hanging submission."""
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
from workbook.lessons import find_lesson  # noqa: E402


def result(name, gbps, status="correct", gpu="GPU A", noise=0.01):
    bench = [{"student_gbps": gbps, "ratio": gbps / 2000.0, "copy_fraction": gbps / 3000.0, "noise": noise}] \
        if gbps else []
    r = {"name": name, "status": status, "gpu": gpu, "detail": "" if status == "correct" else "why", "bench": bench}
    r.update(leaderboard.summarise(bench))
    return r


class RankingTests(unittest.TestCase):
    def test_correct_ranked_by_bandwidth_failures_last(self):
        ranked = leaderboard.rank([result("slow", 1000), result("fast", 2500), result("broken", 0, "compile error"),
                                   result("mid", 1800)])["GPU A"]
        self.assertEqual([r["name"] for r in ranked], ["fast", "mid", "slow", "broken"])
        self.assertEqual([r["rank"] for r in ranked], [1, 2, 3, None])

    def test_results_inside_the_noise_band_tie(self):
        ranked = leaderboard.rank([result("a", 2000, noise=0.02), result("b", 1980, noise=0.02),
                                   result("c", 1500)])["GPU A"]
        self.assertEqual([leaderboard._rank_text(r) for r in ranked], ["=1", "=1", "3"])

    def test_each_gpu_model_is_ranked_on_its_own(self):
        ranked = leaderboard.rank([result("a", 2000, gpu="GPU A"), result("b", 3000, gpu="GPU B")])
        self.assertEqual(sorted(ranked), ["GPU A", "GPU B"])
        self.assertEqual(ranked["GPU B"][0]["rank"], 1)
        self.assertEqual(ranked["GPU A"][0]["rank"], 1)

    def test_failures_are_named(self):
        c = leaderboard.classify
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
        self.assertEqual(c(None, None, True), "timeout")
        self.assertEqual(c({"verdict": "fail-gate"}, 2, False), "correct, below the gate")

    def test_exports(self):
        lesson = find_lesson("lesson4")
        ranked = leaderboard.rank([result("ann", 2500), result("ben", 0, "wrong answer at prime_cols")])
        with tempfile.TemporaryDirectory() as tmp:
            paths = leaderboard.export(ranked, lesson, tmp)
            self.assertEqual(len(paths), 4)
            with open(os.path.join(tmp, "leaderboard.html"), encoding="utf-8") as f:
                page = f.read()
            self.assertIn("<svg", page)
            self.assertIn("ann", page)
            self.assertNotIn("<script", page)  # self-contained, static
            with open(os.path.join(tmp, "leaderboard.csv"), encoding="utf-8") as f:
                self.assertEqual(len(f.read().strip().splitlines()), 3)
            with open(os.path.join(tmp, "leaderboard.json"), encoding="utf-8") as f:
                self.assertEqual(json.load(f)["GPU A"][0]["name"], "ann")
            with open(os.path.join(tmp, "leaderboard.md"), encoding="utf-8") as f:
                self.assertIn("| 1 | ann | correct | 2500 |", f.read())


class LessonOneRunTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="workbook-lb-")
        self.env = dict(os.environ, WORKBOOK_STATE_DIR=os.path.join(self.tmp, "state"))
        subs = os.path.join(self.tmp, "subs")
        os.makedirs(os.path.join(subs, "carol"))
        solution = os.path.join(ROOT, "solutions", "01-cpu-reference", "rmsnorm_cpu.cpp")
        shutil.copy(solution, os.path.join(subs, "alice.cpp"))
        shutil.copy(os.path.join(ROOT, "exercises", "01-cpu-reference", "rmsnorm_cpu.cpp"),
                    os.path.join(subs, "bob.cpp"))
        with open(os.path.join(subs, "carol", "mine.cpp"), "w", encoding="utf-8") as f:
            f.write("namespace workbook::lesson1 { void rmsnorm( }\n")
        with open(solution, encoding="utf-8") as f:
            text = f.read()
        hang = text.replace("for (int64_t r = 0; r < rows; ++r) {",
                            "for (int64_t r = 0; r < rows; ++r) { static volatile int spin; "
                            "while (cols == 19) spin = spin + 1;", 1)
        with open(os.path.join(subs, "dave.cpp"), "w", encoding="utf-8") as f:
            f.write(hang)
        self.subs = subs

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def grade(self, *args):
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "grade"), "leaderboard", *args], env=self.env,
                              capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    def test_every_outcome_is_named_and_nobody_stops_the_others(self):
        out_dir = os.path.join(self.tmp, "out")
        code, out = self.grade("lesson1", self.subs, "--out", out_dir, "--timeout", "8")
        self.assertEqual(code, 0, out)
        with open(os.path.join(out_dir, "leaderboard.json"), encoding="utf-8") as f:
            rows = {r["name"]: r for rows in json.load(f).values() for r in rows}
        self.assertEqual(rows["alice"]["status"], "correct")
        self.assertEqual(rows["alice"]["rank"], 1)
        self.assertEqual(rows["bob"]["status"], "wrong answer at one_row")
        self.assertEqual(rows["carol"]["status"], "compile error")
        self.assertEqual(rows["dave"]["status"], "timeout")
        # A second run grades nothing again: every file's result is cached by its content.
        code, out = self.grade("lesson1", self.subs, "--timeout", "8")
        self.assertEqual(out.count("(cached)"), 4, out)

    def test_slurm_array_then_merge(self):
        script = os.path.join(self.tmp, "job.sh")
        results = os.path.join(self.tmp, "results")
        code, out = self.grade("lesson1", self.subs, "--slurm", script, "--result-dir", results)
        self.assertEqual(code, 0, out)
        with open(script, encoding="utf-8") as f:
            self.assertIn("#SBATCH --array=0-3", f.read())
        for task in ("0", "1"):  # what two array tasks would run
            code, out = self.grade("lesson1", self.subs, "--only", task, "--result-dir", results)
            self.assertEqual(code, 0, out)
        code, out = self.grade("merge", "lesson1", results)
        self.assertEqual(code, 0, out)
        self.assertIn("alice", out)
        self.assertIn("bob", out)


if __name__ == "__main__":
    unittest.main()
