"""The traffic report's prediction (grader/cli/workbook/traffic.py) on made-up recorder figures: the
reference against itself is level and passes; a kernel that reads its input twice, one that launches
a handful of blocks, one with too few bytes in flight and one with uncoalesced loads each fail with
the reason --profile would give, in its words, and everything printed says "predicted on the CPU".
No build needed."""
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook import traffic  # noqa: E402

BYTES = 512 * 2 ** 20  # 32768 x 4096 bf16, read and written once


def launch(**changes):
    """The recorder's figures for a reference-like launch: a block per row, 16-byte coalesced loads."""
    base = {"units": 32768, "units_run": 16, "grid_blocks": 32768, "threads_per_block": 256, "blocks_per_unit": 1,
            "shared_bytes_per_block": 64, "dram_read_bytes": BYTES / 2, "dram_write_bytes": BYTES / 2,
            "global_requests": 16 * 34, "global_sectors": 16 * 34 * 16, "global_lane_bytes": 16 * 34 * 32 * 16,
            "global_lane_accesses": 16 * 34 * 32, "shared_requests": 32, "shared_wavefronts": 0,
            "inflight_bytes_per_thread": 32}
    base.update(changes)
    return base


def data(student, gate=0.8):
    return {"lesson": 4, "gate_fraction": gate,
            "shapes": [{"shape": "32768x4096", "dtype": "bf16", "bytes": BYTES,
                        "student": {"launches": [student]}, "reference": {"launches": [launch()]}}]}


class Prediction(unittest.TestCase):
    def test_the_reference_against_itself_is_level_and_passes(self):
        r = traffic.predict(data(launch()))
        self.assertEqual(r["verdict"], "pass")
        self.assertAlmostEqual(r["shapes"][0]["ratio"], 1.0)
        self.assertIn("level with the reference", r["reason"])
        self.assertEqual(r["label"], "predicted on the CPU")

    def test_reading_x_twice_is_extra_traffic(self):
        r = traffic.predict(data(launch(dram_read_bytes=BYTES)))
        self.assertEqual(r["verdict"], "fail-gate")
        self.assertIn("extra traffic: your kernel moves 1.50x the bytes the lesson needs", r["reason"])

    def test_a_handful_of_blocks_is_too_few_blocks(self):
        r = traffic.predict(data(launch(units=8, units_run=8, grid_blocks=8)))
        self.assertEqual(r["verdict"], "fail-gate")
        self.assertIn("too few blocks: the grid fills", r["reason"])

    def test_too_few_bytes_in_flight_is_long_scoreboard(self):
        r = traffic.predict(data(launch(inflight_bytes_per_thread=2)))
        self.assertEqual(r["verdict"], "fail-gate")
        self.assertIn("long_scoreboard stalls lead", r["reason"])
        self.assertIn("put more independent loads in flight", r["reason"])

    def test_uncoalesced_loads_are_lg_throttle(self):
        # 4-byte lanes 128 bytes apart: 32 sectors a request, each moving 4 bytes of use.
        r = traffic.predict(data(launch(global_requests=16 * 34 * 4, global_sectors=16 * 34 * 4 * 32 * 8,
                                        global_lane_bytes=16 * 34 * 4 * 32 * 4,
                                        global_lane_accesses=16 * 34 * 4 * 32)))
        self.assertEqual(r["verdict"], "fail-gate")
        self.assertIn("lg_throttle stalls lead", r["reason"])

    def test_the_gate_fraction_decides_the_predicted_verdict(self):
        slower = launch(inflight_bytes_per_thread=6)
        ratio = traffic.predict(data(slower))["shapes"][0]["ratio"]
        self.assertEqual(traffic.predict(data(slower, gate=ratio - 0.01))["verdict"], "pass")
        self.assertEqual(traffic.predict(data(slower, gate=ratio + 0.01))["verdict"], "fail-gate")

    def test_the_report_is_labelled_and_joins_the_json_report(self):
        with tempfile.TemporaryDirectory() as d:
            figures, report = os.path.join(d, "t.json"), os.path.join(d, "r.json")
            with open(figures, "w", encoding="utf-8") as f:
                json.dump(data(launch(dram_read_bytes=BYTES)), f)
            with open(report, "w", encoding="utf-8") as f:
                json.dump({"verdict": "pass"}, f)
            text = traffic.format_report(traffic.predict(data(launch(dram_read_bytes=BYTES))))
            self.assertIn("predicted on the CPU", text)
            self.assertIn("decides nothing", text)
            self.assertIn("(1.50x)", text)
            traffic.report(figures, report)
            with open(report, encoding="utf-8") as f:
                j = json.load(f)
            self.assertEqual(j["verdict"], "pass", "the prediction never changes the verdict")
            self.assertEqual(j["predicted_gate"]["verdict"], "fail-gate")
            self.assertEqual(j["predicted_gate"]["label"], "predicted on the CPU")


if __name__ == "__main__":
    unittest.main()
