"""The ./grade command as a learner uses it: exit codes, messages, hints, reset, watch, JSON,
and lesson 1 graded for real on the CPU (its stub fails, its solution passes)."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRADE = os.path.join(ROOT, "grade")
SOLUTION1 = os.path.join(ROOT, "solutions", "01-cpu-reference", "rmsnorm_cpu.cpp")


def has_gpu():
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class GradeTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="workbook-test-")
        self.env = dict(os.environ, WORKBOOK_STATE_DIR=os.path.join(self.tmp, "state"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def grade(self, *args, cwd=ROOT, grade=GRADE):
        proc = subprocess.run([sys.executable, grade, *args], cwd=cwd, env=self.env, capture_output=True, text=True,
                              timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path


class UsageTests(GradeTestCase):
    def test_list_shows_lessons_and_next_step(self):
        code, out = self.grade()
        self.assertEqual(code, 0, out)
        self.assertIn("lesson1", out)
        self.assertIn("lesson3", out)
        self.assertIn("Next:", out)

    def test_unknown_lesson_lists_the_lessons(self):
        code, out = self.grade("lesson99")
        self.assertEqual(code, 64, out)
        self.assertIn("unknown lesson 'lesson99'", out)
        self.assertIn("lesson1, lesson2", out)

    def test_unknown_option_is_a_usage_error(self):
        code, out = self.grade("lesson1", "--frobnicate")
        self.assertEqual(code, 64, out)
        self.assertIn("--help", out)

    def test_missing_source_file_names_it(self):
        code, out = self.grade("lesson1", "--source", "/no/such/file.cpp")
        self.assertEqual(code, 64, out)
        self.assertIn("no such file: /no/such/file.cpp", out)

    def test_help_documents_exit_codes(self):
        code, out = self.grade("--help")
        self.assertEqual(code, 0, out)
        self.assertIn("3 did not build", out)

    def test_every_lesson_has_three_to_five_hints(self):
        sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
        from workbook import hints, lessons
        found = lessons.all_lessons()
        # In order, no number twice, from lesson 1 (a lesson may land before the one numbered below it).
        numbers = [l.number for l in found]
        self.assertEqual(numbers, sorted(set(numbers)))
        self.assertEqual(numbers[:9], list(range(1, 10)))
        for lesson in found:
            count = len(hints.parse(lesson.hints_file))
            self.assertTrue(3 <= count <= 5, f"{lesson.name} has {count} hints")

    def test_hints_escalate_and_stop_at_the_last(self):
        seen = []
        for _ in range(8):
            code, out = self.grade("lesson2", "--hint")
            self.assertEqual(code, 0, out)
            seen.append(out.splitlines()[0])
        self.assertIn("hint 1 of", seen[0])
        self.assertIn("hint 2 of", seen[1])
        self.assertEqual(seen[-1], seen[-2])  # the last hint repeats


class LessonOneTests(GradeTestCase):
    """Lesson 1 grades for real without a GPU."""

    def test_stub_fails_with_first_wrong_element(self):
        code, out = self.grade("lesson1", "--json", os.path.join(self.tmp, "r.json"))
        self.assertEqual(code, 1, out)
        self.assertIn("FAIL  one_row", out)
        self.assertIn("no element of y was written", out)
        with open(os.path.join(self.tmp, "r.json"), encoding="utf-8") as f:
            report = json.load(f)
        self.assertEqual(report["verdict"], "fail-correctness")
        self.assertEqual(report["lesson"], "lesson1")
        self.assertTrue(any(not c["passed"] for c in report["cases"]))

    def test_identical_failures_are_one_line_and_the_stub_is_named(self):
        """The untouched stub writes nothing: one failure printed in full, one line for the rest,
        and a plain word that the file is still the stub; the JSON report keeps every case."""
        path = os.path.join(self.tmp, "r.json")
        code, out = self.grade("lesson1", "--json", path)
        self.assertEqual(code, 1, out)
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        same = [c for c in report["cases"] if c["detail"].startswith("no element of y was written")]
        self.assertGreaterEqual(len(same), 5)
        self.assertEqual(out.count("no element of y was written"), 1, out)
        self.assertIn(f"and {len(same) - 1} more cases with the same failure as {same[0]['name']}", out)
        self.assertIn("still the stub: this file is the stub as it was handed out, unchanged", out)
        self.assertTrue(report["still_stub"])
        self.assertTrue(report["reason"].startswith("still the stub:"))
        # Lesson 1 has no gate: the count line says what failed and nothing about a gate.
        failed = sum(not c["passed"] for c in report["cases"])
        self.assertIn(f"{failed} of {len(report['cases'])} case(s) failed.", out)
        self.assertNotIn("gate", out.split("case(s) failed")[1].split("\n")[0])

    def test_a_caller_that_wrote_the_stub_can_say_so(self):
        """The interview grades a copy of its bare stub with --source; it says the file is untouched."""
        src = self.write("bare.cpp", "#include <cstdint>\nnamespace workbook::lesson1 {\n"
                         "void rmsnorm(const float*, const float*, float*, int64_t, int64_t, float) {}\n}\n")
        code, out = self.grade("lesson1", "--source", src, "--untouched-stub")
        self.assertEqual(code, 1, out)
        self.assertIn("still the stub: this file is the stub as it was handed out, unchanged", out)

    def test_a_changed_file_that_writes_nothing_is_not_called_the_stub(self):
        src = self.write("nothing.cpp", "#include <cstdint>\nnamespace workbook::lesson1 {\n"
                         "void rmsnorm(const float*, const float*, float*, int64_t, int64_t, float) {}\n}\n")
        path = os.path.join(self.tmp, "r.json")
        code, out = self.grade("lesson1", "--source", src, "--json", path)
        self.assertEqual(code, 1, out)
        self.assertNotIn("still the stub", out)
        self.assertIn("more cases with the same failure as", out)
        with open(path, encoding="utf-8") as f:
            self.assertFalse(json.load(f)["still_stub"])

    def test_solution_passes_and_json_is_complete(self):
        path = os.path.join(self.tmp, "r.json")
        code, out = self.grade("lesson1", "--source", SOLUTION1, "--json", path)
        self.assertEqual(code, 0, out)
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        for key in ("lesson", "source", "verdict", "reason", "cases", "bench", "gpu", "seed"):
            self.assertIn(key, report)
        self.assertEqual(report["verdict"], "pass")
        self.assertGreaterEqual(len(report["cases"]), 10)
        self.assertTrue(all(c["passed"] for c in report["cases"]))

    def test_fail_fast_stops_at_the_first_failing_case(self):
        """--fail-fast: one failing case decides the verdict; the others are listed as not run."""
        with open(SOLUTION1, encoding="utf-8") as f:
            text = f.read()
        bad = text.replace("1.0f / std::sqrt(sum / static_cast<float>(cols) + eps)",
                           "1.0f / (std::sqrt(sum / static_cast<float>(cols)) + eps)")
        self.assertNotEqual(bad, text)
        path = os.path.join(self.tmp, "r.json")
        code, out = self.grade("lesson1", "--source", self.write("eps.cpp", bad), "--fail-fast", "--json", path)
        self.assertEqual(code, 1, out)
        self.assertIn("not run (--fail-fast)", out)
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        self.assertEqual(report["verdict"], "fail-correctness")
        failed = [c for c in report["cases"] if not c["passed"] and not c["skipped"]]
        left_out = [c for c in report["cases"] if c["skipped"]]
        self.assertEqual(len(failed), 1, report["cases"])
        self.assertGreater(len(left_out), 0)
        self.assertTrue(all("--fail-fast" in c["detail"] for c in left_out), left_out)
        # Without it every case runs: the same file fails more than one.
        code, out = self.grade("lesson1", "--source", self.write("eps.cpp", bad), "--json", path)
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        self.assertFalse(any(c["skipped"] for c in report["cases"]))

    def test_seed_reproduces_the_inputs(self):
        # A copy instead of a norm: wrong everywhere, so the first wrong element's values are printed.
        src = self.write("copy.cpp", "#include <cstdint>\nnamespace workbook::lesson1 {\n"
                         "void rmsnorm(const float* x, const float*, float* y, int64_t rows, int64_t cols, float) {\n"
                         "    for (int64_t i = 0; i < rows * cols; ++i) y[i] = x[i];\n}\n}\n")
        outs = []
        for _ in range(2):
            code, out = self.grade("lesson1", "--source", src, "--seed", "1234", "--cases", "one_row")
            self.assertEqual(code, 1, out)
            outs.append([l for l in out.splitlines() if "expected" in l])
        self.assertTrue(outs[0], out)
        self.assertEqual(outs[0], outs[1])
        code, out = self.grade("lesson1", "--source", src, "--seed", "1235", "--cases", "one_row")
        self.assertNotEqual(outs[0], [l for l in out.splitlines() if "expected" in l])

    def test_eps_outside_the_root_is_caught(self):
        with open(SOLUTION1, encoding="utf-8") as f:
            text = f.read()
        bad = text.replace("1.0f / std::sqrt(sum / static_cast<float>(cols) + eps)",
                           "1.0f / (std::sqrt(sum / static_cast<float>(cols)) + eps)")
        self.assertNotEqual(bad, text)
        code, out = self.grade("lesson1", "--source", self.write("eps.cpp", bad))
        self.assertEqual(code, 1, out)
        self.assertIn("FAIL  eps_inside_sqrt", out)

    def test_half_precision_sum_is_caught(self):
        with open(SOLUTION1, encoding="utf-8") as f:
            text = f.read()
        # Round the running sum to 11 significant bits after every add, as an fp16 accumulator would.
        bad = text.replace("for (int64_t c = 0; c < cols; ++c) sum += xr[c] * xr[c];",
                           "for (int64_t c = 0; c < cols; ++c) { sum += xr[c] * xr[c]; int e; "
                           "float m = std::frexp(sum, &e); sum = std::ldexp(std::round(m * 2048.0f) / 2048.0f, e); }")
        self.assertNotEqual(bad, text)
        code, out = self.grade("lesson1", "--source", self.write("half.cpp", bad), "--cases", "prime_cols")
        self.assertEqual(code, 1, out)

    def test_a_nan_the_kernel_wrote_is_not_called_never_written(self):
        """Issue 30: a NaN the kernel computed is named as a NaN; "never written" is kept for the poison's bits."""
        with open(SOLUTION1, encoding="utf-8") as f:
            text = f.read()
        # No eps: an all-zero row is 0 * inf = NaN, written in every element of the row.
        no_eps = text.replace("sum / static_cast<float>(cols) + eps)", "sum / static_cast<float>(cols))")
        self.assertNotEqual(no_eps, text)
        code, out = self.grade("lesson1", "--source", self.write("no_eps.cpp", no_eps), "--cases", "all_zero_rows")
        self.assertEqual(code, 1, out)
        self.assertRegex(out, r"of the elements are wrong, 0 of them never written, 16384 of them NaN written by the kernel")
        self.assertNotIn("was never written", out)
        # One sum for all rows: the NaN of row 37 leaks into every later row, each element written.
        leaky = text.replace("    for (int64_t r = 0; r < rows; ++r) {", "    float sum = 0.0f;\n    for (int64_t r = 0; r < rows; ++r) {")
        leaky = leaky.replace("        float sum = 0.0f;\n", "")
        self.assertEqual(leaky.count("float sum = 0.0f;"), 1)
        code, out = self.grade("lesson1", "--source", self.write("leaky.cpp", leaky), "--cases", "nan_row_isolated")
        self.assertEqual(code, 1, out)
        self.assertRegex(out, r"of the elements are wrong, 0 of them never written, 6656 of them NaN written by the kernel")

    def test_a_write_past_the_output_names_the_guard_element(self):
        """Issue 30: a guard-zone write names its index, its side, the guard value and what replaced it."""
        with open(SOLUTION1, encoding="utf-8") as f:
            text = f.read()
        shifted = text.replace("float* yr = y + r * cols;", "float* yr = y + r * cols + 1;")
        self.assertNotEqual(shifted, text)
        code, out = self.grade("lesson1", "--source", self.write("shifted.cpp", shifted), "--cases", "one_row")
        self.assertEqual(code, 1, out)
        self.assertRegex(out, r"wrote outside y: 1 guard element\(s\) after its last element changed, the first at index "
                              r"4096 \(1 past its last element, index 4095\): expected the guard value -12345\.6777, "
                              r"got -?[0-9.e+-]+")

    def test_remote_grading_checks_from_outside_the_submissions_process(self):
        # The solution passes with its code in a process of its own.
        path = os.path.join(self.tmp, "remote.json")
        code, out = self.grade("lesson1", "--source", SOLUTION1, "--remote", "--json", path)
        self.assertEqual(code, 0, out)
        self.assertIn("remote grading", out)
        with open(path, encoding="utf-8") as f:
            self.assertTrue(json.load(f).get("remote"))
        # A wrong kernel is judged on what it wrote, from the grader's process (the board's forged-pass
        # cases, which need the board's report pipe, are in hostile_class.py: uma and vic).
        with open(SOLUTION1, encoding="utf-8") as f:
            text = f.read()
        wrong = text.replace("sum / static_cast<float>(cols) + eps)", "sum / static_cast<float>(cols)) + eps")
        self.assertNotEqual(wrong, text)
        code, out = self.grade("lesson1", "--source", self.write("wrong.cpp", wrong), "--remote", "--cases", "eps")
        self.assertEqual(code, 1, out)
        self.assertIn("FAIL  eps_inside_sqrt", out)

    def test_compile_error_shows_the_compiler_and_exits_3(self):
        path = self.write("broken.cpp", "namespace workbook::lesson1 { void rmsnorm( }\n")
        code, out = self.grade("lesson1", "--source", path, "--json", os.path.join(self.tmp, "b.json"))
        self.assertEqual(code, 3, out)
        self.assertIn("did not compile", out)
        self.assertIn("broken.cpp", out)
        self.assertIn("error", out)
        with open(os.path.join(self.tmp, "b.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["verdict"], "fail-build")

    def test_watch_grades_once_then_stops_when_asked(self):
        code, out = self.grade("lesson1", "--watch", "--watch-rounds", "1", "--cases", "one_row")
        self.assertEqual(code, 1, out)
        self.assertIn("grading lesson1", out)


@unittest.skipIf(has_gpu(), "this machine has a GPU; grading without one is tested where there is none")
class NoGpuTests(GradeTestCase):
    """Without a GPU, lessons 2-11 grade their correctness on the CPU emulator."""

    def test_stub_fails_on_the_cpu_emulator(self):
        code, out = self.grade("lesson3", "--json", os.path.join(self.tmp, "r.json"))
        self.assertEqual(code, 1, out)
        self.assertIn("correctness on the CPU emulator; the bandwidth gate needs a GPU", out)
        with open(os.path.join(self.tmp, "r.json"), encoding="utf-8") as f:
            report = json.load(f)
        self.assertEqual(report["verdict"], "fail-correctness")
        self.assertEqual(report["gpu"], "CPU emulator")
        # Every case runs, past 2^31 elements included: on a sample of its blocks (docs/emulator.md).
        self.assertEqual([c["name"] for c in report["cases"] if c["skipped"]], [])
        large = next(c for c in report["cases"] if c["name"] == "past_2pow31_elements")
        self.assertIn("on the CPU emulator: its launches run the blocks", large["what"])

    def test_fail_fast_on_the_cpu_emulator_runs_small_cases_first(self):
        """The emulated grader's --fail-fast: the stub fails its first case, which is one of the smallest."""
        path = os.path.join(self.tmp, "r.json")
        code, out = self.grade("lesson3", "--fail-fast", "--json", path)
        self.assertEqual(code, 1, out)
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        ran = [c for c in report["cases"] if not c["skipped"]]
        self.assertEqual(len(ran), 1, ran)
        self.assertFalse(ran[0]["passed"])
        self.assertEqual(report["cases"][0]["name"], ran[0]["name"])  # it ran first
        self.assertNotIn(ran[0]["name"], ("past_2pow31_elements", "many_rows_gt_65535"))
        self.assertIn("not run (--fail-fast)", out)

    def test_a_case_named_exactly_runs_alone(self):
        """`--cases =NAME` selects the case named NAME, not every case whose name contains it."""
        solution = os.path.join(ROOT, "solutions", "02-one-warp", "rmsnorm_one_warp.cu")
        path = os.path.join(self.tmp, "r.json")
        code, out = self.grade("lesson2", "--source", solution, "--cases", "=one_row", "--json", path)
        self.assertEqual(code, 0, out)
        with open(path, encoding="utf-8") as f:
            self.assertEqual([c["name"] for c in json.load(f)["cases"]], ["one_row"])
        code, out = self.grade("lesson2", "--source", solution, "--cases", "one_row", "--json", path)
        with open(path, encoding="utf-8") as f:
            self.assertIn("one_row_partial_vector", [c["name"] for c in json.load(f)["cases"]])

    def test_a_read_past_the_end_of_an_input_is_caught_on_the_cpu_emulator(self):
        """On the emulator the inputs have no guard zone: one element read past x's end (here, by the last
        row's lane 0, the value unused) is an illegal address, not a read of the guard's bytes."""
        with open(os.path.join(ROOT, "solutions", "02-one-warp", "rmsnorm_one_warp.cu"), encoding="utf-8") as f:
            text = f.read()
        loop = "for (int64_t c = lane; c < cols; c += kWarpSize) sum += xr[c] * xr[c];"
        bad = text.replace(loop, loop + " if (lane == 0) { volatile float past = xr[cols]; (void)past; }")
        self.assertNotEqual(bad, text)
        code, out = self.grade("lesson2", "--source", self.write("past.cu", bad), "--cases", "=one_row")
        self.assertEqual(code, 1, out)
        self.assertIn("illegal address", out)
        self.assertIn("past the end", out)

    def test_solution_passes_on_the_cpu_emulator(self):
        solution = os.path.join(ROOT, "solutions", "02-one-warp", "rmsnorm_one_warp.cu")
        code, out = self.grade("lesson2", "--source", solution, "--cases", "cols")
        self.assertEqual(code, 0, out)
        self.assertIn("the bandwidth gate was not run: it needs a GPU", out)

    def test_lesson11_fp8_is_graded_on_the_cpu_emulator(self):
        """Lesson 11's FP8 types are emulated (the emulator's cuda_fp8.h): without a GPU its reference
        passes the cases asked for, saturation and all-zero rows among them, with the emulator's label."""
        solution = os.path.join(ROOT, "solutions", "11-fp8-quant", "rmsnorm_fp8.cu")
        path = os.path.join(self.tmp, "r.json")
        code, out = self.grade("lesson11", "--source", solution, "--cases", "clip_saturates,all_zero_rows_f32",
                               "--json", path)
        self.assertEqual(code, 0, out)
        self.assertIn("for the CPU emulator", out)
        self.assertIn("correctness on the CPU emulator; the bandwidth gate needs a GPU", out)
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        self.assertEqual(report["verdict"], "pass")
        self.assertEqual(report["gpu"], "CPU emulator")
        names = sorted(c["name"] for c in report["cases"])
        self.assertTrue({"all_zero_rows_f32", "clip_saturates_bf16", "clip_saturates_f16",
                         "clip_saturates_f32"} <= set(names), names)
        self.assertTrue(all(n.startswith("clip_saturates") or n == "all_zero_rows_f32" for n in names), names)

    def test_a_write_before_the_output_names_the_guard_element_on_the_emulator(self):
        """Issue 30: the GPU lessons' guard zones say the same as lesson 1's: side, index, marker and value."""
        solution = os.path.join(ROOT, "solutions", "02-one-warp", "rmsnorm_one_warp.cu")
        with open(solution, encoding="utf-8") as f:
            text = f.read()
        shifted = text.replace("float* yr = y + row * cols;", "float* yr = y + row * cols - 1;")
        self.assertNotEqual(shifted, text)
        code, out = self.grade("lesson2", "--source", self.write("shifted.cu", shifted), "--cases", "one_row")
        self.assertEqual(code, 1, out)
        self.assertRegex(out, r"wrote outside y: 1 guard element\(s\) before its first element changed, the nearest to "
                              r"it at index -1 \(1 before y\[0\]\): expected the guard marker 0xa5a5a5a5 \(-2\.[0-9]+e-16\), "
                              r"got 0x[0-9a-f]{8} \(-?[0-9.e+-]+\)")

    def test_a_read_of_never_written_shared_memory_is_named_before_the_wrong_values(self):
        """Issue 30: the emulator names the read of a slot no warp wrote, with its line, before the values it spoiled."""
        solution = os.path.join(ROOT, "solutions", "03-block-reduce", "rmsnorm_block_reduce.cu")
        with open(solution, encoding="utf-8") as f:
            text = f.read()
        unguarded = text.replace("float total = lane < num_warps ? partials[lane] : 0.0f;",
                                 "float total = partials[lane];")
        self.assertNotEqual(unguarded, text)
        line = next(i for i, l in enumerate(unguarded.splitlines(), 1) if "float total = partials[lane];" in l)
        path = os.path.join(self.tmp, "r.json")
        code, out = self.grade("lesson3", "--source", self.write("unguarded.cu", unguarded), "--cases", "one_row",
                               "--json", path)
        self.assertEqual(code, 1, out)
        with open(path, encoding="utf-8") as f:
            case = next(c for c in json.load(f)["cases"] if c["name"] == "one_row")
        self.assertRegex(case["detail"], rf"^read of shared memory never written: partials\[[0-9]+\] at unguarded\.cu:{line} "
                                         r"by block \([0-9]+,0,0\) warp [0-9]+ lane [0-9]+ \(thread \([0-9]+,0,0\)\): .*; "
                                         r"y\[row 0, col 0\]: expected")

    def test_compile_error_names_the_learners_file(self):
        broken = self.write("broken.cu", "#include <cuda_runtime.h>\nint f() { return undeclared_name; }\n")
        code, out = self.grade("lesson2", "--source", broken)
        self.assertEqual(code, 3, out)
        self.assertIn("broken.cu:2", out)


class EmulatorHeaderTests(unittest.TestCase):
    """A GPU lesson whose reference includes a CUDA header the emulator does not provide is built with
    nvcc and, without a GPU, said to need one (./grade) or refused (--emulate). Every lesson's headers are
    provided today, so the rule is checked on a reference written for the test."""

    def test_headers_the_emulator_lacks_are_named_and_provided_ones_are_not(self):
        sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
        from workbook import emulated, lessons  # noqa: E402
        with tempfile.TemporaryDirectory() as tmp:
            reference = os.path.join(tmp, "reference.cu")
            with open(reference, "w", encoding="utf-8") as f:
                f.write("#include <cuda_runtime.h>\n#include <cuda_fp8.h>\n  #  include <cuda_fp4.h>\n")
            self.assertEqual(emulated.missing_headers(types.SimpleNamespace(solution=reference)), ["cuda_fp4.h"])
        for lesson in lessons.all_lessons():
            self.assertEqual(emulated.missing_headers(lesson), [], lesson.name)


def on_a_terminal(args, env, cwd=ROOT, timeout=600):
    """Runs ./grade with stdout and stderr on a pseudo-terminal; returns (exit code, everything written)."""
    import pty
    import select
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, GRADE, *args], cwd=cwd, env=dict(env, TERM="xterm"), stdout=slave,
                            stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    out, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    os.close(master)
    proc.wait(timeout=60)
    return proc.returncode, out.decode("utf-8", "replace")


def screen_lines(raw):
    """What a terminal shows at the end: carriage returns and erase-to-end-of-line applied."""
    lines, line, col, i = [], "", 0, 0
    raw = raw.replace("\r\n", "\n")
    while i < len(raw):
        if raw.startswith("\033[K", i):
            line, i = line[:col], i + 3
            continue
        ch = raw[i]
        if ch == "\n":
            lines.append(line)
            line, col = "", 0
        elif ch == "\r":
            col = 0
        else:
            line = line[:col] + ch + line[col + 1:]
            col += 1
        i += 1
    lines.append(line)
    return lines


class ProgressTests(GradeTestCase):
    """What a long command shows while it runs: the build's progress, the case being graded."""

    CMAKE = """[  2%] Building CXX object grader/CMakeFiles/wb-grader.dir/src/main.cpp.o
Consolidate compiler generated dependencies of target wbemu
[  7%] Built target wbemu
[ 37%] Building CUDA object lessons/CMakeFiles/lesson6_exercise.dir/__/grader/adapters/submission_adapter.cu.o
[ 90%] Linking CXX executable ../bin/wb-grader
[100%] Built target lesson1
"""

    def live(self):
        sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
        from workbook import live
        return live

    def test_build_progress_without_a_terminal_is_cmakes_own_lines(self):
        live = self.live()
        import io
        stream = io.StringIO()
        progress = live.BuildProgress("lesson1", live.StatusLine(stream, live=False))
        for line in self.CMAKE.splitlines(True):
            progress.feed(line)
        self.assertEqual(stream.getvalue().splitlines(), [
            "[  2%] Building CXX object grader/CMakeFiles/wb-grader.dir/src/main.cpp.o",
            "[ 37%] Building CUDA object lessons/CMakeFiles/lesson6_exercise.dir/__/grader/adapters/submission_adapter.cu.o",
            "[ 90%] Linking CXX executable ../bin/wb-grader"])
        self.assertTrue(progress.worked)
        quiet = live.BuildProgress("lesson1", live.StatusLine(io.StringIO(), live=False))
        quiet.feed("[100%] Built target lesson1\n")
        self.assertFalse(quiet.worked)  # an up-to-date build prints nothing

    def test_build_progress_on_a_terminal_is_one_line_redrawn(self):
        live = self.live()
        import io
        stream = io.StringIO()
        progress = live.BuildProgress("lesson1", live.StatusLine(stream, live=True))
        for line in self.CMAKE.splitlines(True):
            progress.feed(line)
        out = stream.getvalue()
        self.assertNotIn("\n", out)
        self.assertIn("\r\033[Kbuilding lesson1:   2%  wb-grader: src/main.cpp", out)
        self.assertIn("\r\033[Kbuilding lesson1:  37%  lesson6_exercise: ../grader/adapters/submission_adapter.cu", out)
        self.assertIn("\r\033[Kbuilding lesson1:  90%  linking wb-grader", out)
        self.assertEqual(progress.percent, 90)

    def test_the_case_being_graded_is_shown_on_a_terminal(self):
        """On a terminal, a status line names the case being graded (a slow submission makes each case
        take long enough to be seen); what stays on the screen is the grader's own report."""
        with open(SOLUTION1, encoding="utf-8") as f:
            text = f.read()
        slow = text.replace("#include <cmath>", "#include <chrono>\n#include <cmath>\n#include <thread>").replace(
            "    for (int64_t r = 0; r < rows; ++r) {",
            "    std::this_thread::sleep_for(std::chrono::milliseconds(400));\n    for (int64_t r = 0; r < rows; ++r) {", 1)
        self.assertNotEqual(slow, text)
        src = self.write("slow.cpp", slow)
        code, raw = on_a_terminal(["lesson1", "--source", src, "--cases", "one_row,prime_cols"], self.env)
        self.assertEqual(code, 0, raw)
        self.assertRegex(raw, r"\r\033\[Kgrading case 1 of 2: one_row \.\.\. \d+ s")
        self.assertRegex(raw, r"\r\033\[Kgrading case 2 of 2: prime_cols \.\.\. \d+ s")
        shown = "\n".join(screen_lines(raw))
        self.assertIn("  pass  one_row", shown)
        self.assertIn("  pass  prime_cols", shown)
        self.assertIn("all 2 case(s) passed", shown)
        self.assertNotIn("grading case", shown.split("all 2 case(s) passed")[1])  # the status line is gone

    def test_without_a_terminal_the_output_is_plain(self):
        code, out = self.grade("lesson1", "--cases", "one_row")
        self.assertEqual(code, 1, out)
        self.assertNotIn("\r", out)
        self.assertNotIn("\033[", out)
        self.assertNotIn("grading case", out)


class ResetTests(GradeTestCase):
    """--reset in a scratch copy of the workbook, so the real exercise is never touched."""

    def test_reset_restores_the_stub_and_backs_up_the_learners_file(self):
        copy = os.path.join(self.tmp, "wb")
        for part in ("grade", "grader/cli", "lessons", "exercises", "solutions"):
            src, dst = os.path.join(ROOT, part), os.path.join(copy, part)
            if os.path.isdir(src):
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy(src, dst)
        git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
        subprocess.run([*git, "init", "-q"], cwd=copy, check=True)
        subprocess.run([*git, "add", "-A"], cwd=copy, check=True)
        subprocess.run([*git, "commit", "-qm", "stubs"], cwd=copy, check=True)
        exercise = os.path.join(copy, "exercises", "01-cpu-reference", "rmsnorm_cpu.cpp")
        with open(exercise, "a", encoding="utf-8") as f:
            f.write("// my work\n")
        self.env["WORKBOOK_STATE_DIR"] = os.path.join(copy, ".workbook")
        code, out = self.grade("lesson1", "--reset", grade=os.path.join(copy, "grade"), cwd=copy)
        self.assertEqual(code, 0, out)
        with open(exercise, encoding="utf-8") as f:
            self.assertNotIn("// my work", f.read())
        backups = os.listdir(os.path.join(copy, ".workbook", "backups", "01-cpu-reference"))
        self.assertEqual(len(backups), 1)
        with open(os.path.join(copy, ".workbook", "backups", "01-cpu-reference", backups[0]), encoding="utf-8") as f:
            self.assertIn("// my work", f.read())
        code, out = self.grade("lesson1", "--reset", grade=os.path.join(copy, "grade"), cwd=copy)
        self.assertIn("already the shipped stub", out)

    def test_the_list_says_a_passed_lesson_was_reset(self):
        """A lesson passed, then --reset: the list says both, not a bare "passed" next to a stub."""
        copy = os.path.join(self.tmp, "wb")
        for part in ("grade", "grader/cli", "lessons", "exercises", "solutions"):
            src, dst = os.path.join(ROOT, part), os.path.join(copy, part)
            if os.path.isdir(src):
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy(src, dst)
        git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
        subprocess.run([*git, "init", "-q"], cwd=copy, check=True)
        subprocess.run([*git, "add", "-A"], cwd=copy, check=True)
        subprocess.run([*git, "commit", "-qm", "stubs"], cwd=copy, check=True)
        state = os.path.join(copy, ".workbook")
        self.env["WORKBOOK_STATE_DIR"] = state
        grade = os.path.join(copy, "grade")
        shutil.copy(SOLUTION1, os.path.join(copy, "exercises", "01-cpu-reference", "rmsnorm_cpu.cpp"))
        os.makedirs(state)
        with open(os.path.join(state, "progress.json"), "w", encoding="utf-8") as f:  # as a passing ./grade writes it
            json.dump({"lesson1": {"last": "pass", "when": "2026-01-02 10:00", "passed": True,
                                   "passed_when": "2026-01-02 10:00", "source": "exercises/01-cpu-reference"}}, f)
        code, out = self.grade(grade=grade, cwd=copy)
        self.assertRegex(out, r"lesson1 .* passed\n")
        code, out = self.grade("lesson1", "--reset", grade=grade, cwd=copy)
        self.assertEqual(code, 0, out)
        code, out = self.grade(grade=grade, cwd=copy)
        self.assertRegex(out, r"lesson1 .* passed earlier; the file was reset \(\d{4}-\d\d-\d\d \d\d:\d\d\)")
        # Once the learner writes in it again, it is their file again: passed, with the work in progress.
        with open(os.path.join(copy, "exercises", "01-cpu-reference", "rmsnorm_cpu.cpp"), "a", encoding="utf-8") as f:
            f.write("// again\n")
        code, out = self.grade(grade=grade, cwd=copy)
        self.assertRegex(out, r"lesson1 .* passed\n")


def first_ten_minutes(path):
    """The commands of a file's "Your first ten minutes" section: (first shell block, the C++ lines of the
    edit, the lines the edit replaces (first, last), second shell block)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^## Your first ten minutes[^\n]*\n(.*?)(?=^## |\Z)", text, flags=re.S | re.M)
    if not m:
        raise AssertionError(f"{path} has no '## Your first ten minutes' section")
    blocks = re.findall(r"^```(\w*)\n(.*?)^```", m.group(1), flags=re.S | re.M)
    kinds = [k for k, _ in blocks]
    if kinds != ["sh", "cpp", "sh"]:
        raise AssertionError(f"{path}: the section's code blocks are {kinds}, expected sh, cpp, sh")
    span = re.search(r"from `([^`]+)` to `([^`]+)`", m.group(1))
    if not span:
        raise AssertionError(f"{path}: the section does not say which lines the edit replaces (from `A` to `B`)")
    return blocks[0][1], blocks[1][1], span.groups(), blocks[2][1]


def fresh_origin(where):
    """A clone of this repository whose last commit is the working tree as it is now (tracked changes and
    new files, but every exercise as committed: a learner's work in this checkout never leaks in)."""
    origin = os.path.join(where, "origin")
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", ROOT, origin], check=True)
    git = ["git", "-C", ROOT]
    listing = subprocess.run([*git, "ls-files", "-z", "--modified", "--others", "--exclude-standard"],
                             capture_output=True, text=True, check=True).stdout
    for rel in sorted(set(p for p in listing.split("\0") if p)):
        if rel.startswith("exercises/"):
            continue
        src, dst = os.path.join(ROOT, rel), os.path.join(origin, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)
        elif os.path.exists(dst) and not os.path.isdir(dst):
            os.remove(dst)  # deleted in the working tree
    ident = ["-c", "user.email=test@workbook", "-c", "user.name=test"]
    subprocess.run(["git", "-C", origin, "add", "-A"], check=True)
    subprocess.run(["git", "-C", origin, *ident, "commit", "-q", "--allow-empty", "-m", "the working tree"],
                   check=True)
    return origin


def shell(script, cwd, env):
    start = time.monotonic()
    proc = subprocess.run(["bash", "-c", script], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=1800)
    return proc.returncode, proc.stdout, time.monotonic() - start


@unittest.skipUnless(shutil.which("git") and shutil.which("make") and shutil.which("cmake"), "needs git, make, cmake")
class FirstTenMinutesTests(unittest.TestCase):
    """README.md's "Your first ten minutes", run exactly as written on a fresh clone with its own build
    directory: `make lesson1` builds lesson 1 from nothing with its progress shown, `./grade lesson1`
    fails on the stub, the edit the README gives makes `./grade lesson1` pass. Lesson 1 is CPU-only, so
    this runs without a GPU; it builds only the lesson1 target (the grader and lesson 1's two libraries)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="workbook-fresh-")
        first, edit, (cut_from, cut_to), second = first_ten_minutes(os.path.join(ROOT, "README.md"))
        cls.first_block, cls.edit = first, edit
        origin = fresh_origin(cls.tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("WORKBOOK_")}
        env["WORKBOOK_STATE_DIR"] = os.path.join(cls.tmp, "state")
        env["PATH"] = "/usr/local/cuda/bin:" + env.get("PATH", "")
        learner = os.path.join(cls.tmp, "learner")
        os.makedirs(learner)
        script = first.replace("<this repository's URL>", origin)
        cls.first = shell(script, learner, env)
        clone = os.path.join(learner, "rmsnorm-workbook")
        cls.clone = clone
        cls.again = shell("make lesson1", clone, env) if os.path.isdir(clone) else (None, "", 0)
        exercise = os.path.join(clone, "exercises", "01-cpu-reference", "rmsnorm_cpu.cpp")
        cls.edited = False
        if os.path.isfile(exercise):
            with open(exercise, encoding="utf-8") as f:
                lines = f.read().split("\n")
            start = next((i for i, l in enumerate(lines) if l.strip().startswith(cut_from)), None)
            end = next((i for i, l in enumerate(lines) if start is not None and i >= start and l.strip() == cut_to),
                       None)
            if start is not None and end is not None:
                lines[start:end + 1] = edit.rstrip("\n").split("\n")
                with open(exercise, "w", encoding="utf-8") as f:
                    f.write("\n".join(lines))
                cls.edited = True
        cls.second = shell(second, clone, env) if cls.edited else (None, "", 0)
        cls.listing = shell("./grade", clone, env) if cls.edited else (None, "", 0)
        # What the README suggests next: the stub back, to write it yourself.
        cls.reset = shell("./grade lesson1 --reset && ./grade", clone, env) if cls.edited else (None, "", 0)
        cls.timings = (cls.first[2], cls.again[2], cls.second[2])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_make_lesson1_builds_lesson1_on_a_fresh_clone(self):
        code, out, took = self.first
        built = os.path.join(self.clone, "build")
        for path in ("bin/wb-grader", "lib/lesson1_exercise.so", "lib/lesson1_reference.so"):
            self.assertTrue(os.path.isfile(os.path.join(built, path)), f"{path} was not built:\n{out[-3000:]}")
        self.assertIn("make lesson1: building lesson1's exercise, its reference solution and the grader", out)
        self.assertRegex(out, r"\[\s*\d+%\] Building CXX object lessons/CMakeFiles/lesson1_exercise\.dir/")
        self.assertRegex(out, r"\[\s*\d+%\] Linking \w+ executable ../bin/wb-grader|Linking .*wb-grader")
        self.assertIn("Built target lesson1", out)
        self.assertNotIn("Nothing to be done", out)
        print(f"\n(first make lesson1 && ./grade lesson1 on a fresh clone: {took:.0f} s)", file=sys.stderr)

    def test_make_lesson1_again_is_a_no_op(self):
        code, out, took = self.again
        self.assertEqual(code, 0, out)
        self.assertNotRegex(out, r"Building|Linking", out)
        self.assertIn("make lesson1: up to date", out)

    def test_the_first_grade_fails_on_the_stub_and_says_so(self):
        code, out, _ = self.first
        self.assertEqual(code, 1, out[-3000:])
        self.assertIn("FAIL  one_row", out)
        self.assertIn("no element of y was written", out)
        self.assertIn("still the stub", out)

    def test_the_edit_passes_and_the_rebuild_shows_its_progress(self):
        self.assertTrue(self.edited, "the lines the README says to replace are not in the exercise")
        code, out, _ = self.second
        self.assertEqual(code, 0, out)
        self.assertRegex(out, r"\nall \d+ case\(s\) passed\n")
        self.assertIn("lesson1 passed. Next: make lesson2 && ./grade lesson2", out)
        # ./grade rebuilt the edited exercise, and said so with CMake's percentage lines (stdout is no terminal).
        self.assertRegex(out, r"\[\s*\d+%\] Building CXX object lessons/CMakeFiles/lesson1_exercise\.dir/")
        self.assertNotIn("\r", out)
        self.assertNotIn("\033[", out)
        code, out, _ = self.listing
        self.assertRegex(out, r"lesson1 .* passed\n")

    def test_after_reset_the_list_says_passed_earlier(self):
        code, out, _ = self.reset
        self.assertEqual(code, 0, out)
        self.assertIn("restored exercises/01-cpu-reference/rmsnorm_cpu.cpp to the shipped stub", out)
        self.assertRegex(out, r"lesson1 .* passed earlier; the file was reset \(")

    def test_the_books_main_page_gives_the_same_commands(self):
        readme = first_ten_minutes(os.path.join(ROOT, "README.md"))
        book = first_ten_minutes(os.path.join(ROOT, "docs", "mainpage.md"))
        self.assertEqual(readme, book)


if __name__ == "__main__":
    unittest.main()
