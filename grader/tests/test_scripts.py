"""The maintainers' scripts that gpu-check relies on: the known-bad catalogue, the verdict
matcher, and the results collector. They run without a GPU on made-up reports."""
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook.known_bad import KnownBad, catalogue  # noqa: E402
from workbook.lessons import UsageError  # noqa: E402


def script(name, *args):
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", name), *args], capture_output=True,
                          text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


class KnownBadTests(unittest.TestCase):
    def test_every_entry_names_a_verdict_and_changes_the_reference(self):
        entries = catalogue()
        self.assertGreaterEqual(len(entries), 20)
        for bad in entries:
            self.assertIn(bad.verdict, ("fail-correctness", "fail-gate"), bad.path)
            self.assertTrue(bad.needle, bad.path)
            with open(bad.solution(), encoding="utf-8") as f:
                reference = f.read()
            self.assertNotEqual(bad.source().split("\n", 2)[2], reference, bad.path)

    def test_the_catalogue_covers_every_gpu_lesson(self):
        lessons = {bad.lesson for bad in catalogue()}
        self.assertTrue({2, 3, 4, 5, 6, 7, 8} <= lessons, lessons)

    def test_an_edit_that_no_longer_matches_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "03-block-reduce", "known_bad")
            os.makedirs(folder)
            path = os.path.join(folder, "stale.bad")
            with open(path, "w", encoding="utf-8") as f:
                f.write("expect: fail-correctness wrong\nbug: stale\n--- find\nthis line is not in the reference\n"
                        "--- replace\nanything\n")
            bad = KnownBad(path)
            with self.assertRaises(UsageError) as ctx:
                bad.source()
            self.assertIn("occurs 0 times", str(ctx.exception))

    def test_write_produces_complete_submissions(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, out = script("known-bad", "write", tmp)
            self.assertEqual(code, 0, out)
            lines = out.strip().splitlines()
            self.assertEqual(len(lines), len(catalogue()))
            lesson, path = lines[0].split(" ", 1)
            with open(path, encoding="utf-8") as f:
                self.assertTrue(f.readline().startswith("// expect: "))


class VerdictMatchTests(unittest.TestCase):
    def run_match(self, report, verdict, needle):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(report, f)
        try:
            return script("verdict-matches", f.name, verdict, needle)[1].strip()
        finally:
            os.unlink(f.name)

    def test_match_on_reason_or_failing_case(self):
        report = {"verdict": "fail-correctness", "reason": "prime_cols: y[row 1, col 4098] was never written",
                  "cases": [{"name": "prime_cols", "passed": False, "detail": "..."},
                            {"name": "one_row", "passed": True, "detail": ""}]}
        self.assertEqual(self.run_match(report, "fail-correctness", "prime_cols"), "match")
        self.assertEqual(self.run_match(report, "fail-correctness", "never written"), "match")
        self.assertNotEqual(self.run_match(report, "fail-correctness", "one_row"), "match")  # it passed
        self.assertNotEqual(self.run_match(report, "fail-gate", "prime_cols"), "match")

    def test_a_missing_report_is_not_a_match(self):
        code, out = script("verdict-matches", "/no/such/report.json", "fail-gate", "pdl")
        self.assertIn("no-report", out)


class CollectResultsTests(unittest.TestCase):
    def test_merges_lessons_and_publishes(self):
        with tempfile.TemporaryDirectory() as tmp:
            for lesson, copy in ((4, 3000.0), (8, 2990.0)):
                report = {"lesson": f"lesson{lesson}", "verdict": "pass", "gpu": "Test GPU 80GB", "driver": "1.2",
                          "cuda": "13.0", "copy_gbps": copy, "gate_notes": [],
                          "bench": [{"shape": "4096x65536", "dtype": "f16", "reference_gbps": 2900.0,
                                     "copy_fraction": 2900.0 / copy, "noise": 0.01}]}
                if lesson == 4:  # lesson 8's report predates the same-size copy: shown as a dash
                    report["bench"][0]["size_copy_fraction"] = 0.98
                with open(os.path.join(tmp, f"lesson{lesson}.json"), "w", encoding="utf-8") as f:
                    json.dump(report, f)
            publish = os.path.join(tmp, "published")
            code, out = script("collect-results", tmp, "--publish", publish)
            self.assertEqual(code, 0, out)
            with open(os.path.join(publish, "test-gpu-80gb.json"), encoding="utf-8") as f:
                merged = json.load(f)
            self.assertTrue(os.path.isfile(os.path.join(publish, "test-gpu-80gb.md")))  # the stable names
            self.assertEqual(merged["gpu"], "Test GPU 80GB")
            self.assertEqual([r["lesson"] for r in merged["rows"]], [4, 8])
            for key in ("date", "commit", "driver", "cuda", "copy_gbps"):
                self.assertIn(key, merged)
            self.assertIn("| 4 | 4096x65536 | f16 | 2900 | 96.7% | 98.0% |", out)
            self.assertIn("| 8 | 4096x65536 | f16 | 2900 | 97.0% | – |", out)

    def test_torch_side_by_side_names_faster_ties_and_slower(self):
        with tempfile.TemporaryDirectory() as tmp:
            report = {"lesson": "lesson4", "verdict": "pass", "gpu": "Test GPU", "copy_gbps": 3000.0,
                      "bench": [{"shape": "32768x4096", "dtype": "f16", "reference_gbps": 2900.0,
                                 "copy_fraction": 0.967, "noise": 0.01}]}
            with open(os.path.join(tmp, "lesson4.json"), "w", encoding="utf-8") as f:
                json.dump(report, f)
            rows = []
            for shape, ref, comp in (("32768x4096", 2950.0, 2900.0), ("1x4096", 5.0, 5.02), ("16x4096", 50.0, 60.0)):
                for impl, gbps in (("reference", ref), ("eager", 2000.0), ("compile", comp), ("copy", 3000.0)):
                    rows.append({"lesson": 4, "impl": impl, "shape": shape, "dtype": "fp16", "gbps": gbps,
                                 "noise": 0.005})
            torch_json = os.path.join(tmp, "torch.json")
            with open(torch_json, "w", encoding="utf-8") as f:
                json.dump({"torch": "2.x", "cuda": "13.0", "rows": rows}, f)
            code, out = script("collect-results", tmp, "--torch", torch_json)
            self.assertEqual(code, 0, out)
            self.assertIn("| 4 | 32768x4096 | fp16 | 2950 | 3000 | 2000 | 2900 | 1.017 | faster |", out)
            self.assertIn("| tie |", out)
            self.assertIn("| slower |", out)
            self.assertIn("1 faster, 1 tie, 1 slower, of 3 rows", out)
            self.assertIn("| 2 of 3 | 4 16x4096 fp16 0.833 |", out)  # the parity target, checked
            self.assertNotIn("every shape moving", out)  # a report without bytes per shape checks no size target
            code, out = script("collect-results", tmp, "--torch", os.path.join(tmp, "missing.json"))
            self.assertNotEqual(code, 0)
            self.assertIn("torch_compare", out)

    def test_targets_name_the_rows_that_miss(self):
        mib = 2**20
        with tempfile.TemporaryDirectory() as tmp:
            bench = [  # shape, dtype, share of the large copy, share of a same-size copy, bytes
                ("32768x4096", "f16", 0.97, 0.99, 512 * mib),
                ("32768x512", "bf16", 0.82, 1.00, 64 * mib),   # short of 90%, but at its size's copy
                ("16384x4095", "f16", 0.76, 0.80, 256 * mib),  # short of both
                ("32768x256", "f16", 0.75, 0.99, 32 * mib),    # under 64 MiB: not a target shape
                ("16384x4096", "f32", 0.50, 0.50, 512 * mib),  # fp32: not a target shape
            ]
            report = {"lesson": "lesson4", "verdict": "pass", "gpu": "Test GPU", "copy_gbps": 3000.0,
                      "bench": [{"shape": s, "dtype": d, "reference_gbps": 3000.0 * c, "copy_fraction": c,
                                 "size_copy_fraction": z, "noise": 0.01, "bytes": b} for s, d, c, z, b in bench]}
            chain = {"lesson": "lesson7", "verdict": "pass", "gpu": "Test GPU", "copy_gbps": 3000.0, "bench": [],
                     "gate_notes": ["reference chain_1x4096 f16 chain: 3.0 us per layer with PDL, 3.6 without (+15.0%)",
                                    "reference chain_64x8192 bf16 chain: 5.0 us per layer with PDL, 5.02 without (+0.4%)",
                                    "your chain_1x4096 f16 chain: 3.6 us per layer with PDL, 3.6 without (+0.0%)"]}
            for name, r in (("lesson4", report), ("lesson7", chain)):
                with open(os.path.join(tmp, name + ".json"), "w", encoding="utf-8") as f:
                    json.dump(r, f)
            code, out = script("collect-results", tmp)
            self.assertEqual(code, 0, out)
            with open(os.path.join(tmp, "results.json"), encoding="utf-8") as f:
                found = {t["target"].split(":")[0]: t for t in json.load(f)["targets"]}
            large = found["lessons 4 and on, fp16/bf16, every shape moving ≥ 64 MiB"]
            self.assertEqual((large["met"], large["total"]), (1, 3))
            self.assertEqual(large["short"], ["4 16384x4095 f16 76.0%", "4 32768x512 bf16 82.0%"])
            sized = next(t for k, t in found.items() if "own size" in t["target"])
            self.assertEqual((sized["met"], sized["total"]), (2, 3))
            self.assertEqual(sized["short"], ["4 16384x4095 f16 76.0% / 80.0%"])
            pdl = found["lesson 7"]  # the reference's chains only, not the submission's
            self.assertEqual((pdl["met"], pdl["total"], pdl["short"]), (1, 2, ["chain_64x8192 bf16 +0.4%"]))
            self.assertIn("## Targets", out)
            self.assertIn("| 1 of 3 |", out)

    def test_rows_short_of_the_target_carry_their_recorded_reason(self):
        mib = 2**20
        with tempfile.TemporaryDirectory() as tmp:
            bench = [("16384x4095", 0.76, 0.80), ("4096x8192", 0.80, 0.91), ("32768x4096", 0.97, 0.99)]
            report = {"lesson": "lesson11", "verdict": "pass", "gpu": "Test GPU", "copy_gbps": 3000.0,
                      "bench": [{"shape": s, "dtype": "bf16", "reference_gbps": 3000.0 * c, "copy_fraction": c,
                                 "size_copy_fraction": z, "noise": 0.01, "bytes": 256 * mib} for s, c, z in bench]}
            with open(os.path.join(tmp, "lesson11.json"), "w", encoding="utf-8") as f:
                json.dump(report, f)
            reasons = os.path.join(tmp, "reasons.json")
            rows = [{"gpu": "Test GPU", "lesson": 11, "shape": "4096x8192", "dtype": "bf16", "profiled": True,
                     "why": "six waves in step.", "measured": "DRAM 73% of peak.", "tried": "two passes: 0.92x."},
                    # the same row measured on another GPU says nothing about this one
                    {"gpu": "Other GPU", "lesson": 11, "shape": "16384x4095", "dtype": "bf16", "profiled": True,
                     "why": "elsewhere.", "measured": "-", "tried": "-"},
                    # a row that meets the target is not listed, whatever its entry says
                    {"gpu": "Test GPU", "lesson": 11, "shape": "32768x4096", "dtype": "bf16", "profiled": True,
                     "why": "stale.", "measured": "-", "tried": "-"}]
            with open(reasons, "w", encoding="utf-8") as f:
                json.dump({"rows": rows}, f)
            code, out = script("collect-results", tmp, "--reasons", reasons)
            self.assertEqual(code, 0, out)
            self.assertIn("- **11 4096x8192 bf16** (80.0% of the large copy, 91.0% of a same-size copy): six waves "
                          "in step. Measured: DRAM 73% of peak. Tried: two passes: 0.92x.", out)
            self.assertIn("- **11 16384x4095 bf16** (76.0% of the large copy, 80.0% of a same-size copy): no "
                          "measured reason recorded yet.", out)
            self.assertNotIn("elsewhere", out)
            self.assertNotIn("stale", out)
            self.assertIn("Of 2 rows short of the target, 1 have a reason measured with Nsight Compute, 0 a "
                          "reason recorded without a profile of their own, and 1 none yet.", out)
            with open(os.path.join(tmp, "results.json"), encoding="utf-8") as f:
                short = json.load(f)["short_rows"]
            self.assertEqual([(e["row"], bool(e["reason"])) for e in short],
                             [("11 16384x4095 bf16", False), ("11 4096x8192 bf16", True)])


class TorchCompareBenchTest(unittest.TestCase):
    """bench/torch_compare.py's Bench pools a short shape's samples over the placement passes and
    measures a long one in the first pass only; torch is stubbed, the timer made up."""

    @classmethod
    def setUpClass(cls):
        stub = mock.MagicMock()
        modules = {"torch": stub, "torch.nn": stub.nn, "torch.nn.functional": stub.nn.functional}
        with mock.patch.dict(sys.modules, modules):
            sys.path.insert(0, os.path.join(ROOT, "bench"))
            try:
                sys.modules.pop("torch_compare", None)
                import torch_compare  # noqa: PLC0415
            finally:
                sys.path.pop(0)
        cls.tc = torch_compare
        cls.stub = stub

    def bench(self, placements):
        args = mock.Mock(samples=20, short_samples=60, placements=placements, no_graphs=True)
        with mock.patch.dict(sys.modules, {"torch": self.stub}):
            bench = self.tc.Bench(args)
        calls = []

        def samples_of(fns, n):
            calls.append((bench.pass_index, len(fns), n))
            # The reference (first) takes 1 us in the first pass and 3 us after; the peer 2 us;
            # reference-again as the reference; the copy 1 us.
            ref = 1e-6 if bench.pass_index == 0 else 3e-6
            return [[ref] * n, [2e-6] * n, [ref] * n, [1e-6] * n]
        bench.timer = mock.Mock(samples_of=samples_of)
        return bench, calls

    def measure(self, bench, passes, short_bytes, long_bytes):
        impls = [("reference", lambda: None), ("compile", lambda: None)]
        with mock.patch.object(self.tc, "torch", self.stub), contextlib.redirect_stdout(io.StringIO()):
            for index in range(passes):
                bench.pass_index = index
                bench.shape(4, "16x4096", "bf16", short_bytes, impls)
                bench.shape(4, "32768x4096", "bf16", long_bytes, impls)
        bench.finish()
        return {(r["shape"], r["impl"]): r for r in bench.rows}

    def test_short_shapes_pool_every_pass_and_long_ones_take_the_first(self):
        bench, calls = self.bench(placements=3)
        rows = self.measure(bench, 3, short_bytes=256 * 1024, long_bytes=512 << 20)
        # 60 short samples split over 3 passes; the long shape once, at --samples.
        self.assertEqual(calls, [(0, 4, 20), (0, 4, 20), (1, 4, 20), (2, 4, 20)])
        short = rows[("16x4096", "reference")]
        self.assertEqual((short["samples"], short["placements"]), (60, 3))
        # Pooled: 20 samples of 1 us and 40 of 3 us, median 3 us.
        self.assertEqual(short["us"], 3.0)
        self.assertEqual(rows[("16x4096", "compile")]["us"], 2.0)
        long = rows[("32768x4096", "reference")]
        self.assertEqual((long["samples"], long["placements"], long["us"]), (20, 1, 1.0))
        self.assertNotIn(("16x4096", "reference-again"), rows)
        self.assertEqual(short["noise"], 0.0)

    def test_one_placement_is_the_plain_measurement(self):
        bench, calls = self.bench(placements=1)
        rows = self.measure(bench, 1, short_bytes=256 * 1024, long_bytes=512 << 20)
        self.assertEqual(calls, [(0, 4, 60), (0, 4, 20)])
        short = rows[("16x4096", "reference")]
        self.assertEqual((short["samples"], short["us"]), (60, 1.0))


if __name__ == "__main__":
    unittest.main()


class NcuTorchTests(unittest.TestCase):
    """bench/ncu_torch.py without a GPU: its row syntax and how it splits ncu's kernels into calls."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import ncu_torch
        self.ncu = ncu_torch

    def test_rows_are_read_or_named_when_wrong(self):
        rows = self.ncu.parse_rows("4:32768x256:fp16,6:128:qkv:bf16")
        self.assertEqual((rows[0]["rows"], rows[0]["cols"]), (32768, 256))
        self.assertEqual((rows[1]["tokens"], rows[1]["layout"]), (128, "qkv"))
        with self.assertRaises(SystemExit) as err:
            self.ncu.parse_rows("6:128:strided:bf16")
        self.assertIn("6:128:strided:bf16", str(err.exception))

    def test_lesson9_rows_name_their_option_and_have_a_page_of_their_own(self):
        rows = self.ncu.parse_rows("9:bias_rstd:4096x8192:fp16,9:prenorm:32768x256:bf16")
        self.assertEqual([(r["option"], r["rows"], r["cols"]) for r in rows],
                         [("bias_rstd", 4096, 8192), ("prenorm", 32768, 256)])
        self.assertEqual(self.ncu.publish_kind(rows), "lesson9-ncu-torch")
        self.assertEqual(self.ncu.publish_kind(self.ncu.parse_rows("4:32768x256:fp16")), "ncu-torch")
        with self.assertRaises(SystemExit) as err:
            self.ncu.parse_rows("9:rms:4096x8192:fp16")
        self.assertIn("plain, bias_rstd", str(err.exception))
        with self.assertRaises(SystemExit) as err:
            self.ncu.publish_kind(self.ncu.parse_rows("4:32768x256:fp16,9:plain:4096x8192:fp16"))
        self.assertIn("not both", str(err.exception))

    def test_lesson9_options_are_those_torch_compare_times(self):
        with open(os.path.join(ROOT, "bench", "production_norm.py")) as f:
            text = f.read()
        block = text[text.index("VARIANTS = {"):]
        block = block[:block.index("}")]
        self.assertEqual(tuple(re.findall(r'^    "(\w+)":', block, re.M)), self.ncu.LESSON9_OPTIONS)

    def test_calls_alternate_and_a_missing_call_stops_the_table(self):
        k = [{"Kernel Name": n, "gpu__time_duration.sum": "1000"} for n in
             ("rmsnorm_rows_kernel", "column_sum", "triton_red_fused_0", "rmsnorm_rows_kernel", "triton_per_fused_1")]
        groups = self.ncu.windows(k, 4)
        self.assertEqual([len(g) for g in groups], [2, 1, 1, 1])
        with self.assertRaises(SystemExit) as err:
            self.ncu.windows(k[:3], 4)
        self.assertIn("expected 4 profiled calls", str(err.exception))


class ProfileShortRowsTests(unittest.TestCase):
    """bench/profile_short_rows.py without a GPU: the rows it takes from a make bench page, and its row syntax."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import profile_short_rows
        self.p = profile_short_rows

    def test_rows_are_the_short_rows_of_the_design_target(self):
        page = os.path.join(ROOT, "docs", "results", "nvidia-h100-80gb-hbm3.json")
        with open(page, encoding="utf-8") as f:
            target = [t for t in json.load(f)["targets"] if "of a copy of their own size" in t["target"]][0]
        rows = self.p.rows_from_results(page)
        self.assertEqual(len(rows), len(target["short"]))
        for row in rows:
            lesson, shape = self.p.parse_row(row)
            self.assertTrue(lesson.needs_gpu, row)
            self.assertRegex(shape, r"^[a-z_0-9]*x[0-9x]+/(f16|bf16|f32)$")

    def test_a_wrong_row_is_named(self):
        for bad, said in (("11:16384x4095", "'11:16384x4095'"), ("1:32x32/f32", "lesson 1 has no GPU reference"),
                          ("eleven:4096x8192/bf16", "'eleven:4096x8192/bf16'")):
            with self.assertRaises(SystemExit) as err:
                self.p.parse_row(bad)
            self.assertIn(said, str(err.exception))


class RemoteTimingLimitsTests(unittest.TestCase):
    """bench/remote_timing.py without a GPU: a hung remote run ends with the grader's own message
    (its call timeout, then the batch watchdog's phase) before the script kills it."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import remote_timing
        self.rt = remote_timing

    def test_a_hang_ends_before_the_kill(self):
        for timeout in (60, 80, 120, 300):
            call, phase = self.rt.call_limits(timeout)
            # The longest chain after a batch starts: the answer's wait, then the phase releasing the gates.
            self.assertLess(call + phase, timeout - 30, timeout)
            self.assertGreater(phase, call)
        self.assertEqual(self.rt.call_limits(80), (15, 20))
        self.assertEqual(self.rt.call_limits(3000), (30, 35))

    def test_gated_runs_trace_both_processes_and_bound_the_phases(self):
        env = self.rt._env(None, "stream", trace=True, timeout=80)
        self.assertEqual(env["WORKBOOK_REMOTE_TRACE"], "1")
        self.assertEqual(env["WORKBOOK_REMOTE_PHASE_SECONDS"], "20")
        with mock.patch.dict(os.environ):
            os.environ.pop("WORKBOOK_REMOTE_TRACE", None)
            self.assertNotIn("WORKBOOK_REMOTE_TRACE", self.rt._env(None, "stream", trace=False, timeout=80))
        self.assertNotIn("WORKBOOK_REMOTE_CLOCK", self.rt._env(None))


class EmulatorCheckReuseTests(unittest.TestCase):
    """scripts/emulator-check --reuse: the agreement table from kept reports, nothing graded."""

    def write_reports(self, emu_dir, gpu_dir, gpu_stub_verdict="fail-correctness"):
        def put(path, verdict, reason=""):
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"verdict": verdict, "reason": reason, "cases": []}, f)
        put(os.path.join(emu_dir, "lesson2-solution.emu.json"), "pass")
        put(os.path.join(emu_dir, "lesson2-stub.emu.json"), "fail-correctness")
        put(os.path.join(gpu_dir, "solution2.json"), "pass")
        put(os.path.join(gpu_dir, "stub2.json"), gpu_stub_verdict)
        for bad in catalogue():
            if bad.lesson == 2:
                put(os.path.join(emu_dir, f"lesson2-{bad.name}.emu.json"), bad.verdict, bad.needle)
                put(os.path.join(gpu_dir, f"bad-2-{bad.name}.json"), bad.verdict, bad.needle)

    def test_agreement_and_a_disagreement_from_kept_reports(self):
        with tempfile.TemporaryDirectory() as emu, tempfile.TemporaryDirectory() as gpu, \
                tempfile.TemporaryDirectory() as out:
            self.write_reports(emu, gpu)
            code, text = script("emulator-check", "--lessons", "2", "--reuse", emu, "--gpu-reports", gpu, "--out", out)
            self.assertEqual(code, 0, text)
            self.assertIn("0 where the GPU disagrees unexpectedly", text)
            self.assertIn("(reused)", text)
            self.write_reports(emu, gpu, gpu_stub_verdict="pass")
            code, text = script("emulator-check", "--lessons", "2", "--reuse", emu, "--gpu-reports", gpu, "--out", out)
            self.assertEqual(code, 1, text)
            self.assertIn("| lesson2 | stub | fail-correctness | fail-correctness | pass | NO |", text)

    def test_a_missing_report_is_an_unexpected_verdict(self):
        with tempfile.TemporaryDirectory() as emu, tempfile.TemporaryDirectory() as out:
            code, text = script("emulator-check", "--lessons", "2", "--reuse", emu, "--out", out)
            self.assertEqual(code, 1, text)
            self.assertIn("got missing", text)


class StraightforwardGapsTests(unittest.TestCase):
    """scripts/straightforward-check's below_gate.txt: an open gap for every GPU, or for the one it was measured on."""

    def load(self):
        from importlib.machinery import SourceFileLoader
        return SourceFileLoader("straightforward_check", os.path.join(ROOT, "scripts", "straightforward-check")).load_module()

    def test_a_gap_keyed_to_one_gpu_applies_to_that_gpu_only(self):
        sf = self.load()
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "below_gate.txt"), "w", encoding="utf-8") as f:
                f.write("# comment\nlesson4@nvidia-h200  0.76 at 128x4096 bf16; README, Decode batches\n"
                        "lesson10  0.75 at 32768x1024 bf16; README, Two kernels\n")
            report = os.path.join(d, "lesson4.json")
            with open(report, "w", encoding="utf-8") as f:
                json.dump({"gpu": "NVIDIA H200", "verdict": "fail-gate"}, f)
            with mock.patch.object(sf, "KERNELS", d):
                known = sf.known_below_gate()
            self.assertEqual(set(known), {(4, "nvidia-h200"), (10, None)})
            self.assertEqual(sf.report_gpu(report), "nvidia-h200")
            self.assertNotIn((4, "nvidia-h100-80gb-hbm3"), known)

    def test_a_malformed_entry_names_both_forms(self):
        sf = self.load()
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "below_gate.txt"), "w", encoding="utf-8") as f:
                f.write("lesson4@NVIDIA H200  gap\n")
            with mock.patch.object(sf, "KERNELS", d), self.assertRaises(SystemExit) as e:
                sf.known_below_gate()
            self.assertIn("lessonN@gpu-slug  why", str(e.exception))


class ResultsNamesTests(unittest.TestCase):
    """The stable names under docs/results/ (bench/results_names.py, docs/results/index.md)."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import results_names
        self.names = results_names

    def test_one_name_per_kind_and_gpu(self):
        n, gpu = self.names, "NVIDIA H100 80GB HBM3"
        self.assertEqual(n.page("R", gpu, "bench"), os.path.join("R", "nvidia-h100-80gb-hbm3.md"))
        self.assertEqual(n.table_json("R", gpu), os.path.join("R", "nvidia-h100-80gb-hbm3.json"))
        self.assertEqual(n.page("R", gpu, "lesson9-torch"), os.path.join("R", "nvidia-h100-80gb-hbm3-lesson9-torch.md"))
        self.assertEqual(n.raw("R", gpu, "torch", 2), os.path.join("R", "torch", "nvidia-h100-80gb-hbm3-torch-run2.json"))
        self.assertEqual(n.raw("R", gpu, "ncu-torch"), os.path.join("R", "torch", "nvidia-h100-80gb-hbm3-ncu-torch.json"))
        self.assertEqual([n.torch_kind(s) for s in ({4, 5, 6, 8}, {9}, {10, 11}, {4, 9})],
                         ["torch", "lesson9-torch", "lessons10-11", None])
        self.assertEqual(n.raw("R", gpu, "decode", 1), os.path.join("R", "torch", "nvidia-h100-80gb-hbm3-decode-run1.json"))
        with self.assertRaises(ValueError):
            n.stem(gpu, "torch-2026-11-24")

    def test_the_committed_results_are_the_stable_names_and_the_index_lists_them(self):
        results = os.path.join(ROOT, "docs", "results")
        files = sorted(os.path.relpath(os.path.join(d, f), results).replace(os.sep, "/")
                       for d, _, fs in os.walk(results) for f in fs)
        # One page (and its raw rows, two runs for a peers' page) per kind and GPU: a kind more, a few
        # files more; a GPU more, its own set; never dated copies. Each GPU is named by its make-bench
        # table (<slug>.json at the top).
        slugs = [f[:-len(".json")] for f in files if "/" not in f and f.endswith(".json")]
        self.assertTrue(slugs, files)
        def of(slug, name):
            return re.search(r"(^|/|-)" + re.escape(slug) + r"(-|\.)", name) is not None
        for slug in slugs:
            mine = [f for f in files if of(slug, f)]
            self.assertLessEqual(len(mine), 18, mine)
        shared = [f for f in files if not any(of(slug, f) for slug in slugs)]
        self.assertLessEqual(len(shared), 5, shared)
        with open(os.path.join(results, "index.md"), encoding="utf-8") as f:
            index = f.read()
        for name in files:
            self.assertNotRegex(name, r"\d{4}-\d{2}-\d{2}", "a dated snapshot: git keeps those")
            if name != "index.md":
                self.assertIn(f"({name})", index, f"index.md does not link {name}")

    def test_two_runs_tabulates_peers_and_decode_batches(self):
        with tempfile.TemporaryDirectory() as tmp:
            for run, liger_us in ((1, 4.0), (2, 5.2)):
                times = {"reference": 5.0, "compile": 6.0, "compile-dynamic": 7.0, "liger": liger_us, "copy": 4.0}
                rows = [{"lesson": 4, "impl": impl, "shape": "16x4096", "dtype": "bf16", "gbps": 100.0 / us, "us": us,
                         "noise": 0.005} for impl, us in times.items()]
                # A second row where Liger is ahead in both runs.
                rows += [{"lesson": 4, "impl": impl, "shape": "1x7168", "dtype": "bf16", "gbps": 100.0 / us, "us": us,
                          "noise": 0.005} for impl, us in dict(times, liger=4.0).items()]
                path = self.names.raw(tmp, "Test GPU", "decode", run)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    json.dump({"gpu": "Test GPU", "rows": rows, "peer_notes": []}, f)
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "two_runs.py"), "--results", tmp,
                                   "--kind", "decode"], capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            # Against each peer in both runs: Liger ahead in the 1st, behind in the 2nd.
            self.assertIn("| 4 | 16x4096 | bf16 | 1.400 faster | 1.400 faster | 0.800 slower | 1.040 faster |", proc.stdout)
            # The test is two runs: only the row behind in both is named.
            self.assertIn("- Liger-Kernel: 1 of 4 timings level or ahead, 3 behind by more than the noise; "
                          "behind in both runs on 1 of 2 rows (4 1x7168 bf16)", proc.stdout)
            # The decode table in microseconds, with the fastest peer of the 1st run.
            self.assertIn("| 4 | 16x4096 | bf16 | 5.00 | 6.00 | 7.00 | 4.00 | 4.00 | 0.800 slower (Liger-Kernel) |",
                          proc.stdout)

    def test_two_runs_of_one_run_has_one_column_a_peer(self):
        with tempfile.TemporaryDirectory() as tmp:
            rows = [{"lesson": 10, "impl": impl, "shape": "32768x4096", "dtype": "bf16", "gbps": gbps, "us": 1.0,
                     "noise": 0.005} for impl, gbps in (("reference", 2700.0), ("compile", 2500.0), ("liger", 1800.0))]
            path = os.path.join(tmp, "one.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump({"gpu": "Test GPU", "rows": rows}, f)
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "two_runs.py"), path],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            # One run: no "1st, 2nd" headers over columns that hold one value.
            self.assertNotIn("2nd", proc.stdout)
            self.assertIn("| 10 | 32768x4096 | bf16 | 2700 | 2500 | 1.080 faster |", proc.stdout)
            self.assertIn("| lesson | shape | dtype | vs Liger-Kernel |", proc.stdout)
            self.assertIn("| 10 | 32768x4096 | bf16 | 1.500 faster |", proc.stdout)

    def test_two_runs_counts_lesson9_rows_behind_in_both_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            # bias_rstd 8192x8192 behind in both runs, plain 8192x8192 in the 2nd only, a decode row ahead.
            ratios = {1: {"bias_rstd_8192x8192": 0.95, "plain_8192x8192": 1.0, "plain_16x4096": 1.1},
                      2: {"bias_rstd_8192x8192": 0.96, "plain_8192x8192": 0.9, "plain_16x4096": 1.1}}
            for run, shapes in ratios.items():
                rows = []
                for shape, ratio in shapes.items():
                    us = 100.0 if "8192x8192" in shape else 5.0
                    mib = 256 if "8192x8192" in shape else 1
                    for impl, t in (("reference", us), ("compile", us * ratio), ("copy", us * 0.9)):
                        rows.append({"lesson": 9, "impl": impl, "shape": shape, "dtype": "bf16", "us": t,
                                     "gbps": mib * 2**20 / (t * 1e3), "noise": 0.005})
                path = self.names.raw(tmp, "Test GPU", "lesson9-torch", run)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    json.dump({"gpu": "Test GPU", "rows": rows}, f)
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "two_runs.py"), "--results", tmp,
                                   "--kind", "lesson9-torch"], capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("| decode batches: 128 rows or fewer (1) | 1, 0, 0 | 1, 0, 0 | 0 |", proc.stdout)
            self.assertIn("| 64 MiB or more (2) | 0, 1, 1 | 0, 0, 2 | 1 |", proc.stdout)
            self.assertIn("| bias_rstd (1) | 0, 0, 1 | 0, 0, 1 | 1 |", proc.stdout)
            self.assertIn("| plain (1) | 0, 1, 0 | 0, 0, 1 | 0 |", proc.stdout)
            self.assertIn("| plain_8192x8192 | bf16 | 256 | ", proc.stdout)
            # Decode batches also in microseconds, both runs: the time a decode step waits for.
            self.assertIn("| plain_16x4096 | bf16 | 5.00, 5.00 | 5.50, 5.50 | 4.50 | 1.100 faster | 1.100 faster |",
                          proc.stdout)
            self.assertNotIn("| bias_rstd_8192x8192 | bf16 | 100.00", proc.stdout)
            self.assertIn("| 1.000 tie | 0.900 slower |", proc.stdout)

    def test_two_runs_reads_the_published_pair(self):
        with tempfile.TemporaryDirectory() as tmp:
            for run, ref in ((1, 2950.0), (2, 2940.0)):
                rows = [{"lesson": 4, "impl": impl, "shape": "32768x4096", "dtype": "fp16", "gbps": gbps, "us": 1.0,
                         "noise": 0.005} for impl, gbps in (("reference", ref), ("compile", 2900.0))]
                path = self.names.raw(tmp, "Test GPU", "torch", run)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    json.dump({"gpu": "Test GPU", "rows": rows}, f)
            proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "two_runs.py"), "--results", tmp],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            self.assertIn("| 4 | 32768x4096 | fp16 | 2950, 2940 | 2900, 2900 | 1.017 faster | 1.014 faster |",
                          proc.stdout)
