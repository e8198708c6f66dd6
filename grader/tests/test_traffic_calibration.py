"""scripts/traffic-calibration: the calibration set (issue 34, part 3) and its emulated predictions,
made one at a time or --jobs at once. A stand-in grade command answers instantly, so nothing is compiled."""
import glob
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook.known_bad import KnownBad  # noqa: E402

SCRIPT = os.path.join(ROOT, "scripts", "traffic-calibration")

# Writes a made-up report to --json and logs its start and end. A variant (not a solution) waits
# until another grade is running at the same time, or FAKE_WAIT seconds, and logs whether it saw one.
FAKE_GRADE = textwrap.dedent("""\
    import json, os, sys, time
    args = sys.argv[1:]
    if "--build-only" in args:  # ./grade lessonN --source F --build-only: compiles, grades nothing
        with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(name=os.path.basename(args[args.index("--source") + 1]), event="build",
                                    emulate=False)) + "\\n")
        sys.exit(0)
    if "--profile" in args:  # ./grade lessonN --profile: the limit line is all the script reads
        with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as f:
            shape = args[args.index("--shape") + 1] if "--shape" in args else None
            f.write(json.dumps(dict(name="profile", event="profile", emulate=False, shape=shape)) + "\\n")
        if shape:
            print("lesson2 at " + shape.replace("/", " ") + " on Fake GPU: one launch of each")
        print("most likely limit: too few blocks: the grid fills 1% of one wave")
        sys.exit(0)
    out = args[args.index("--json") + 1]
    name = os.path.basename(out)
    if "--emulate" not in args:  # a GPU grade
        with open(out, "w", encoding="utf-8") as f:
            json.dump({"verdict": "fail-gate", "gpu": "Fake GPU", "bench": [
                {"shape": "big_4096x4096", "dtype": "f16", "ratio": 0.9},
                {"shape": "small_128x4096", "dtype": "bf16", "ratio": 0.4}]}, f)
        with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(name=name, event="gpu", emulate=False)) + "\\n")
        sys.exit(2)
    log, running = os.environ["FAKE_LOG"], os.environ["FAKE_RUNNING"]
    def note(event, **more):
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps(dict(name=name, event=event, emulate="--emulate" in args, **more)) + "\\n")
    note("start")
    mine = os.path.join(running, str(os.getpid()))
    open(mine, "w").close()
    saw_peer = False
    if "solution" not in name:
        deadline = time.time() + float(os.environ["FAKE_WAIT"])
        while not saw_peer and time.time() < deadline:
            saw_peer = len(os.listdir(running)) > 1
            time.sleep(0.05)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"verdict": "pass", "predicted_gate": {"verdict": "fail-gate", "reason": "too few blocks",
                                                          "shapes": [{"ratio": 0.5}]}}, f)
    note("end", saw_peer=saw_peer)
    os.remove(mine)
""")


class CalibrationSetTests(unittest.TestCase):
    def test_at_least_40_files_and_every_slow_variant_expects_pass_or_fail_gate(self):
        proc = subprocess.run([sys.executable, SCRIPT, "--list"], capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        lines = proc.stdout.strip().splitlines()
        self.assertGreaterEqual(len(lines), 40, proc.stdout)
        variants = glob.glob(os.path.join(ROOT, "grader", "lessons", "*", "slow_variants", "*.bad"))
        self.assertGreaterEqual(len(variants), 26)
        for path in variants:
            bad = KnownBad(path)
            self.assertIn(bad.verdict, ("pass", "fail-gate"), path)
            self.assertTrue(2 <= bad.lesson <= 11, path)
        # Every lesson from 2 to 11 has slow variants of its own.
        self.assertEqual({KnownBad(p).lesson for p in variants}, set(range(2, 12)))


class EmulatedPredictionTests(unittest.TestCase):
    def run_script(self, tmp, *args, wait=20.0):
        fake = os.path.join(tmp, "fake_grade.py")
        with open(fake, "w", encoding="utf-8") as f:
            f.write(FAKE_GRADE)
        running = os.path.join(tmp, "running")
        os.makedirs(running, exist_ok=True)
        env = dict(os.environ, TRAFFIC_CALIBRATION_GRADE=fake, FAKE_LOG=os.path.join(tmp, "log"),
                   FAKE_RUNNING=running, FAKE_WAIT=str(wait))
        proc = subprocess.run([sys.executable, SCRIPT, "--emulated", os.path.join(tmp, "emu"), "--lessons", "2",
                               *args], capture_output=True, text=True, timeout=300, env=env)
        events = []
        if os.path.exists(os.path.join(tmp, "log")):
            with open(os.path.join(tmp, "log"), encoding="utf-8") as f:
                events = [json.loads(line) for line in f]
        return proc.returncode, proc.stdout + proc.stderr, events

    def test_jobs_grade_at_once_after_the_solution_and_keep_every_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, text, events = self.run_script(tmp, "--jobs", "8")
            self.assertEqual(code, 0, text)
            starts = [e["name"] for e in events if e["event"] == "start"]
            variants = [n for n in starts if "solution" not in n]
            self.assertGreaterEqual(len(variants), 2, events)
            self.assertEqual(len(starts), len(set(starts)), "a file was graded twice")
            self.assertTrue(all(e["emulate"] for e in events))
            # The solution (which compiles the reference) ends before any variant of its lesson starts.
            solution_end = next(i for i, e in enumerate(events)
                                if e["event"] == "end" and e["name"] == "lesson2-solution.emu.json")
            first_variant = next(i for i, e in enumerate(events) if e["event"] == "start" and e["name"] in variants)
            self.assertLess(solution_end, first_variant, events)
            self.assertTrue(any(e.get("saw_peer") for e in events), "no two grades ran at once")
            for name in starts:
                self.assertTrue(os.path.exists(os.path.join(tmp, "emu", name)), name)
            self.assertIn("predicted fail-gate", text)
            # Kept reports are not graded again.
            code, text, events_again = self.run_script(tmp, "--jobs", "8")
            self.assertEqual(code, 0, text)
            self.assertEqual(len(events_again), len(events), "kept predictions were graded again")

    def test_a_report_made_from_other_source_text_is_graded_again(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, text, events = self.run_script(tmp, "--jobs", "8")
            self.assertEqual(code, 0, text)
            stamp = os.path.join(tmp, "emu", "lesson2-uncoalesced_lanes.source.sha256")
            with open(stamp, "w", encoding="utf-8") as f:
                f.write("0" * 64 + "\n")
            os.remove(os.path.join(tmp, "log"))
            code, text, events = self.run_script(tmp, "--jobs", "8", wait=0.3)
            self.assertEqual(code, 0, text)
            self.assertEqual([e["name"] for e in events if e["event"] == "start"],
                             ["lesson2-uncoalesced_lanes.emu.json"])
            with open(stamp, encoding="utf-8") as f:
                self.assertNotEqual(f.read().strip(), "0" * 64)

    def test_gpu_reports_are_tabulated_and_kept_for_a_run_that_goes_on(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out")
            code, text, events = self.run_script(tmp, "--jobs", "8", "--gpu", "--profile", "--out", out)
            self.assertEqual(code, 0, text)
            graded = [e for e in events if e["event"] == "start"]
            self.assertEqual(len([e for e in events if e["event"] == "gpu"]), len(graded))
            profiles = [e for e in events if e["event"] == "profile"]
            self.assertEqual(len(profiles), len(graded))
            # Each slow file is profiled where its measured ratio is lowest, not at the default shape.
            self.assertEqual({e["shape"] for e in profiles}, {"small_128x4096/bf16"})
            with open(os.path.join(out, "traffic-calibration-fake-gpu.md"), encoding="utf-8") as f:
                table = f.read()
            # Every prediction (fail-gate) meets a measured fail-gate, and both name too few blocks.
            self.assertIn(f"Verdicts agree on {len(graded)} of {len(graded)} files", table)
            self.assertIn(f"names --profile's limit on {len(graded)} of {len(graded)} slow files", table)
            # Started again, nothing is graded or profiled again: the kept reports are used.
            code, text, again = self.run_script(tmp, "--jobs", "8", "--gpu", "--profile", "--out", out)
            self.assertEqual(code, 0, text)
            self.assertEqual(len(again), len(events), "kept GPU reports were made again")

    def test_build_jobs_compile_every_file_before_the_first_timed_grade(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, text, events = self.run_script(tmp, "--jobs", "8", "--gpu", "--build-jobs", "4",
                                                 "--out", os.path.join(tmp, "out"))
            self.assertEqual(code, 0, text)
            kinds = [e["event"] for e in events if e["event"] in ("build", "gpu")]
            builds = kinds.count("build")
            self.assertEqual(builds, kinds.count("gpu"), events)
            self.assertEqual(kinds, ["build"] * builds + ["gpu"] * builds, "a file was timed before all were built")
            self.assertIn(f"compiled {builds} of {builds} file(s) for the GPU, 4 at a time", text)

    def test_one_at_a_time_by_default(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, text, events = self.run_script(tmp, wait=0.3)
            self.assertEqual(code, 0, text)
            self.assertFalse(any(e.get("saw_peer") for e in events), "grades overlapped without --jobs")
            self.assertEqual(text.count("predicted fail-gate"), len([e for e in events if e["event"] == "start"]))

    def test_jobs_below_one_is_a_usage_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, text, _ = self.run_script(tmp, "--jobs", "0")
            self.assertEqual(code, 2, text)
            self.assertIn("--jobs needs 1 or more", text)


if __name__ == "__main__":
    unittest.main()
