"""./grade lessonN --profile without a GPU: the parsing of Nsight Compute's CSV, the table, the
line on the most likely limit, and the plain messages when ncu is missing or the lesson is lesson 1."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook import profile  # noqa: E402

# The shape of `ncu --csv --page raw --print-units base` output: the program's lines, ncu's own,
# a header, a units row, one row per kernel. The numbers are made up.
HEADER = ['ID', 'Process ID', 'Process Name', 'Host Name', 'Kernel Name', 'Context', 'Stream', 'Block Size',
          'Grid Size', 'Device', 'CC', 'dram__bytes_read.sum', 'dram__bytes_write.sum',
          'dram__throughput.avg.pct_of_peak_sustained_elapsed', 'gpu__time_duration.sum',
          'launch__registers_per_thread', 'launch__shared_mem_per_block_dynamic',
          'launch__shared_mem_per_block_static', 'launch__waves_per_multiprocessor',
          'sm__warps_active.avg.pct_of_peak_sustained_active',
          'smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio',
          'smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio',
          'smsp__average_warps_issue_stalled_selected_per_issue_active.ratio']
UNITS = ['', '', '', '', '', '', '', '', '', '', '', 'byte', 'byte', '%', 'nsecond', 'register/thread', 'byte',
         'byte', '', '%', 'inst', 'inst', 'inst']


def csv_text(*kernels):
    def line(cells):
        return ",".join(f'"{c}"' for c in cells)
    rows = ["lesson 4 (04-vectorized): whatever the program printed", "==PROF== Connected to process 1",
            line(HEADER), line(UNITS)]
    for i, k in enumerate(kernels):
        rows.append(line([str(i), "1", "wb-grader", "host", k["name"], "1", "13", k["block"], k["grid"], "0", "9.0",
                          k["read"], k["write"], k["dram"], k["ns"], k["regs"], "0", k["smem"], k["waves"], k["occ"],
                          k["barrier"], k["long"], "1.0"]))
    rows.append("==PROF== Disconnected from process 1")
    return "\n".join(rows) + "\n"


def kernel(**over):
    k = dict(name="rmsnorm_rows_kernel", block="(256, 1, 1)", grid="(1056, 1, 1)", read="268,435,456",
             write="268435456", dram="91.5", ns="180000", regs="40", smem="64", waves="1.6", occ="85.0",
             barrier="0.5", long="9.5")
    k.update(over)
    return k


LESSON_BYTES = 536870912.0 + 8192


class ParseTests(unittest.TestCase):
    def test_parses_kernels_and_skips_units_and_chatter(self):
        kernels = profile.parse_ncu_csv(csv_text(kernel(), kernel(name="second")))
        self.assertEqual([k["Kernel Name"] for k in kernels], ["rmsnorm_rows_kernel", "second"])
        self.assertEqual(profile.parse_ncu_csv("no csv here\n"), [])

    def test_summary_adds_bytes_and_time_and_ranks_stalls(self):
        s = profile.summarise(profile.parse_ncu_csv(csv_text(kernel(), kernel(ns="20000", read="0", write="0"))))
        self.assertEqual(s["kernels"], 2)
        self.assertAlmostEqual(s["time_us"], 200.0)
        self.assertEqual(s["dram_bytes"], 536870912.0)
        self.assertEqual(s["shared_bytes"], 64)
        self.assertEqual(s["grid"], "(1056, 1, 1)")
        self.assertEqual([name for name, _ in s["stalls"]], ["long_scoreboard", "barrier"])  # "selected" is no stall


class LimitTests(unittest.TestCase):
    def both(self, **mine):
        ref = profile.summarise(profile.parse_ncu_csv(csv_text(kernel())))
        return profile.summarise(profile.parse_ncu_csv(csv_text(kernel(**mine)))), ref

    def test_extra_traffic_comes_first(self):
        mine, ref = self.both(read="536870912", dram="95", ns="270000")
        self.assertIn("extra traffic: your kernel moves 1.50x", profile.most_likely_limit(mine, ref, LESSON_BYTES))

    def test_traffic_the_reference_shares_is_not_blamed_on_the_submission(self):
        both = self.both(read="536870912")[0]
        line = profile.most_likely_limit(both, both, LESSON_BYTES)
        self.assertNotIn("extra traffic", line)
        self.assertIn("level with the reference", line)
        self.assertIn("DRAM bandwidth (92% of peak)", line)

    def test_slower_at_the_memory_limit(self):
        mine, ref = self.both(ns="260000", dram="85")
        self.assertIn("1.4x the reference's time: at 85% of DRAM peak", profile.most_likely_limit(mine, ref, LESSON_BYTES))

    def test_too_few_blocks(self):
        mine, ref = self.both(dram="40", waves="0.25", ns="900000")
        self.assertIn("too few blocks: the grid fills 25% of one wave", profile.most_likely_limit(mine, ref, LESSON_BYTES))

    def test_a_shape_too_small_for_the_gpu_is_the_shapes_limit(self):
        small = self.both(dram="7", waves="0.16", ns="4700")[0]
        line = profile.most_likely_limit(small, small, 2 * 1048576)
        self.assertIn("the shape itself", line)

    def test_low_occupancy(self):
        mine, ref = self.both(dram="55", occ="30", ns="300000")
        self.assertIn("occupancy 30% against the reference's 85%", profile.most_likely_limit(mine, ref, LESSON_BYTES))

    def test_the_leading_stall(self):
        mine, ref = self.both(dram="60", occ="80", barrier="20", ns="300000")
        self.assertIn("barrier stalls lead", profile.most_likely_limit(mine, ref, LESSON_BYTES))

    def test_writes_left_in_l2_are_explained(self):
        mine, ref = self.both(write="0")
        table = profile.format_table({"bytes": LESSON_BYTES}, mine, ref)
        self.assertIn("still sit in L2", table)

    def test_table_has_every_row(self):
        mine, ref = self.both(dram="60")
        table = profile.format_table({"bytes": LESSON_BYTES, "shape": "32768x4096", "dtype": "bf16"}, mine, ref)
        for row in ("DRAM throughput, % of peak", "DRAM bytes (lesson: 512.0 MiB)", "(1.00x)", "achieved occupancy",
                    "registers per thread", "shared memory per block", "grid", "block", "warp stall #1",
                    "long_scoreboard 9.5", "most likely limit:"):
            self.assertIn(row, table)

    def test_command_profiles_only_the_marked_range_at_the_gpus_own_clocks(self):
        cmd = profile.ncu_command("ncu", ["wb-grader", "--lesson", "4"])
        self.assertEqual(cmd[:3], ["ncu", "--profile-from-start", "off"])
        self.assertIn("--clock-control", cmd)
        self.assertEqual(cmd[cmd.index("--clock-control") + 1], "none")
        self.assertEqual(cmd[-3:], ["wb-grader", "--lesson", "4"])
        extra = profile.ncu_command("ncu", ["wb-grader"], extra_metrics=("smsp__inst_executed.sum",))
        metrics = extra[extra.index("--metrics") + 1].split(",")
        self.assertEqual(metrics, list(profile.METRICS) + ["smsp__inst_executed.sum"])


class CommandLineTests(unittest.TestCase):
    def grade(self, *args, path=None):
        env = dict(os.environ, WORKBOOK_STATE_DIR=tempfile.mkdtemp(prefix="workbook-test-"))
        if path is not None:
            env["PATH"] = path
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "grade"), *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        return proc.returncode, proc.stdout + proc.stderr

    def test_lesson_one_has_no_kernel_to_profile(self):
        code, out = self.grade("lesson1", "--profile")
        self.assertEqual(code, 64, out)
        self.assertIn("runs on the CPU: there is no kernel to profile", out)

    @unittest.skipIf(profile.find_ncu(), "ncu is installed here")
    def test_missing_ncu_is_said_plainly(self):
        path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if not os.path.exists(
            os.path.join(p, "ncu")))
        code, out = self.grade("lesson2", "--profile", path=path)
        self.assertEqual(code, 4, out)
        self.assertIn("Nsight Compute (ncu) was not found", out)

    def test_shape_without_profile_is_a_usage_error(self):
        code, out = self.grade("lesson2", "--shape", "32768x4096")
        self.assertEqual(code, 64, out)
        self.assertIn("--shape goes with --profile", out)


if __name__ == "__main__":
    unittest.main()
