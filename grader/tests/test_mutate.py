"""Unit tests of scripts/mutate (grader/mutation/): the operators on small sources, deterministic
enumeration, the equivalent-mutant files, verdicts and the score. Nothing is built or graded."""
import json
import os
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader"))

from mutation import operators, runner
from mutation import report as report_module  # noqa: E402
from mutation.operators import Source, enumerate_mutants, mask  # noqa: E402


def mutated(text, operator):
    """The mutated sources one operator makes of `text`, in enumeration order."""
    return [m.apply(text) for m in enumerate_mutants(text, operators=[operator])]


class MaskTest(unittest.TestCase):
    def test_blanks_comments_strings_and_directives_and_keeps_offsets(self):
        text = ('#include <a.h>\n#if X < 2 \\\n  && Y\n#endif\nint a = 1; // a < b\n'
                'const char* s = "x < y"; /* p && q */ char c = \'<\';\n')
        code = mask(text)
        self.assertEqual(len(code), len(text))
        self.assertEqual([i for i, ch in enumerate(code) if ch == "\n"], [i for i, ch in enumerate(text) if ch == "\n"])
        for gone in ("include", "X < 2", "&& Y", "endif", "a < b", "x < y", "p && q", "'<'"):
            self.assertNotIn(gone, code)
        self.assertIn("int a = 1;", code)
        self.assertIn("char c =", code)

    def test_static_assert_and_launch_bounds_are_not_mutated(self):
        text = "static_assert(N < 4, \"n\");\n__global__ void __launch_bounds__(B >= 1 ? 1 : 2) k() {}\n"
        self.assertEqual(enumerate_mutants(text), [])

    def test_line_numbers(self):
        src = Source("a\nbb\n\nc")
        self.assertEqual([src.line_of(i) for i in (0, 1, 2, 4, 5, 6)], [1, 1, 2, 2, 3, 4])


class OperatorTest(unittest.TestCase):
    def test_flip_cmp_leaves_templates_shifts_and_launches_alone(self):
        text = ("void f() {\n  if (a < b && c == d) x = y >> 2;\n  Pack<T, 4> p = q->r;\n"
                "  k<<<g, b>>>(x);\n  e = (1 << 20) != n;\n}\n")
        self.assertEqual(mutated(text, "flip-cmp"), [
            text.replace("a < b", "a <= b"),
            text.replace("c == d", "c != d"),
            text.replace(") != n", ") == n"),
        ])

    def test_flip_cmp_every_operator(self):
        pairs = [("<", "<="), ("<=", "<"), (">", ">="), (">=", ">"), ("==", "!="), ("!=", "==")]
        for old, new in pairs:
            text = f"bool f(int a, int b) {{ return a {old} b; }}\n"
            self.assertEqual(mutated(text, "flip-cmp"), [text.replace(f" {old} ", f" {new} ")], old)

    def test_drop_term_drops_each_term_of_each_chain(self):
        text = "bool ok() { return a && b && (c || d); }\n"
        self.assertEqual(mutated(text, "drop-term"), [
            "bool ok() { return b && (c || d); }\n",
            "bool ok() { return a && (c || d); }\n",
            "bool ok() { return a && b; }\n",
            "bool ok() { return a && b && (d); }\n",
            "bool ok() { return a && b && (c); }\n",
        ])

    def test_drop_term_respects_precedence_and_template_commas(self):
        text = "void f() {\n  if constexpr (std::is_same_v<T, float> && N % 2 == 0) g();\n  h(x, p || q && r);\n}\n"
        self.assertEqual(mutated(text, "drop-term"), [
            text.replace("std::is_same_v<T, float> && ", ""),
            text.replace(" && N % 2 == 0", ""),
            text.replace("p || q && r", "q && r"),
            text.replace("p || q && r", "p"),
            text.replace("p || q && r", "p || r"),
            text.replace("p || q && r", "p || q"),
        ])

    def test_drop_term_ignores_rvalue_references(self):
        self.assertEqual(mutated("template <typename F> void g(F&& f) { f(); }\n", "drop-term"), [])

    def test_off_by_one_only_binary_integer_ones(self):
        text = "void f() {\n  int n = (rows + k - 1) / k;\n  int m = -1;\n  float z = x + 1.0f;\n  int w = y + 10;\n}\n"
        self.assertEqual(mutated(text, "off-by-one"), [text.replace("rows + k - 1", "rows + k")])

    def test_loop_bound(self):
        text = ("void f() {\n  for (int i = 0; i < n; ++i) g(i);\n  for (int o = 16; o > 0; o /= 2) g(o);\n"
                "  for (int j = 0; j < a && j <= b * 2; ++j) g(j);\n  for (auto& v : vs) g(v);\n"
                "  for (int k = 0; k < 4; ++k) g(k);\n}\n")
        self.assertEqual(mutated(text, "loop-bound"), [
            text.replace("i < n;", "i < n - 1;"),
            text.replace("o > 0;", "o > 1;"),
            text.replace("j < a &&", "j < a - 1 &&"),
            text.replace("j <= b * 2;", "j <= b * 2 - 1;"),
            text.replace("k < 4;", "k < 3;"),
        ])

    def test_no_satfinite(self):
        text = "q = __nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3); // __NV_SATFINITE\n"
        self.assertEqual(mutated(text, "no-satfinite"),
                         ["q = __nv_cvt_float_to_fp8(v, __NV_NOSAT, __NV_E4M3); // __NV_SATFINITE\n"])

    def test_swap_stride_in_calls_and_initialisers_only(self):
        text = ("struct S {\n  int64_t x_stride, y_stride;\n};\n"
                "void f(const float* x, int64_t x_stride, int64_t y_stride) {\n"
                "  Args a{x, x_stride, y, y_stride};\n  g(p.x_s0, p.x_s1, n);\n  h(t.stride[0], t.stride[0]);\n}\n")
        self.assertEqual(mutated(text, "swap-stride"), [
            text.replace("{x, x_stride, y, y_stride}", "{x, y_stride, y, x_stride}"),
            text.replace("g(p.x_s0, p.x_s1, n)", "g(p.x_s1, p.x_s0, n)"),
        ])

    def test_drop_sync(self):
        text = ("__device__ void f() {\n  __syncthreads();\n  cluster.sync();\n  cg::this_cluster().sync();\n"
                "  __syncwarp(0xffffffffu);\n  cudaGridDependencySynchronize();\n  int c = __syncthreads_count(p);\n"
                "  if constexpr (S) __syncthreads();\n}\n")
        got = mutated(text, "drop-sync")
        self.assertEqual(got, [
            text.replace("  __syncthreads();\n  cluster", "  (void)0;\n  cluster"),
            text.replace("cluster.sync()", "(void)0"),
            text.replace("cg::this_cluster().sync()", "(void)0"),
            text.replace("__syncwarp(0xffffffffu)", "(void)0"),
            text.replace("cudaGridDependencySynchronize()", "(void)0"),
            text.replace("(S) __syncthreads()", "(S) (void)0"),
        ])

    def test_shuffle_mask_and_offset(self):
        text = ("__device__ float f(float v) {\n"
                "  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);\n"
                "  return __shfl_sync(0xffffffff, v, 0);\n}\n")
        self.assertEqual(mutated(text, "shfl-mask"), [
            text.replace("sync(0xffffffffu, v, o)", "sync(0x0000ffffu, v, o)"),
            text.replace("(0xffffffff, v, 0)", "(0x0000ffffu, v, 0)"),
        ])
        self.assertEqual(mutated(text, "shfl-offset"), [
            text.replace("v, o)", "v, o / 2)"),
            text.replace("v, 0)", "v, 1)"),
        ])

    def test_atomic_sum_on_memory_not_registers(self):
        text = ("__global__ void k(float* out) {\n  __shared__ float s[32];\n  float r[4];\n  s[t] += v;\n"
                "  r[0] += v;\n  out[i] += v;\n  float& slot = s[j];\n  slot = turn == 0 ? a[i] : slot + a[i];\n}\n")
        self.assertEqual(mutated(text, "atomic-sum"), [
            text.replace("s[t] += v;", "atomicAdd(&s[t], v);"),
            text.replace("out[i] += v;", "atomicAdd(&out[i], v);"),
            text.replace("slot = turn == 0 ? a[i] : slot + a[i];",
                         "turn == 0 ? (void)(slot = a[i]) : (void)atomicAdd(&slot, a[i]);"),
        ])

    def test_guard_var_uses_floats_in_scope_nearest_first(self):
        text = ("__device__ float scale(float sumsq, float amax_in, int cols, float* factor) {\n"
                "  const float rstd = 1.0f / sqrtf(sumsq);\n  const float amax = rstd * amax_in;\n"
                "  *factor = amax > 0.0f ? 1.0f : 0.0f;\n  return amax;\n}\n"
                "float other(float unrelated) { return unrelated; }\n")
        self.assertEqual(mutated(text, "guard-var"), [
            text.replace("amax > 0.0f", "rstd > 0.0f"),
            text.replace("amax > 0.0f", "amax_in > 0.0f"),
            text.replace("amax > 0.0f", "sumsq > 0.0f"),
        ])

    def test_guard_var_skips_arrays_and_out_of_scope(self):
        text = ("void f(float eps) {\n  { float inner = 1.0f; g(inner); }\n  float arr[4];\n"
                "  if (!(eps >= 0.0f)) return;\n}\n")
        self.assertEqual(mutated(text, "guard-var"), [])

    def test_swap_constant(self):
        text = "float f() { float s = 0.0f, m = 1.f; return 10.0f + s * m + 0.05f; }\n"
        self.assertEqual(mutated(text, "swap-const"), [
            text.replace("s = 0.0f", "s = 1.0f"),
            text.replace("m = 1.f", "m = 0.0f"),
        ])

    def test_operator_table_is_complete(self):
        self.assertEqual(len(operators.OPERATOR_NAMES), len(set(operators.OPERATOR_NAMES)))
        for name, doc in operators.operator_help():
            self.assertTrue(doc, name)


class EnumerationTest(unittest.TestCase):
    TEXT = ("__device__ float f(float v, int n) {\n  for (int i = 0; i < n; ++i) v += 0.0f;\n"
            "  if (n > 1 && n < 8) __syncthreads();\n  return v;\n}\n")

    def test_deterministic_and_named_by_line(self):
        first = enumerate_mutants(self.TEXT)
        second = enumerate_mutants(self.TEXT)
        self.assertEqual(first, second)
        names = [m.name for m in first]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual([m.name for m in first if m.operator == "flip-cmp"],
                         ["flip-cmp@2", "flip-cmp@3", "flip-cmp@3.2"])
        self.assertEqual([(m.start, m.end) for m in first], sorted((m.start, m.end) for m in first))

    def test_one_edit_each_and_no_duplicates(self):
        mutants = enumerate_mutants(self.TEXT)
        texts = [m.apply(self.TEXT) for m in mutants]
        self.assertEqual(len(texts), len(set(texts)))
        for m, t in zip(mutants, texts):
            self.assertNotEqual(t, self.TEXT, m.name)
            self.assertEqual(t[:m.start], self.TEXT[:m.start])
            self.assertEqual(t[m.start + len(m.replacement):], self.TEXT[m.end:])

    def test_every_reference_solution_enumerates(self):
        for lesson in runner.all_lessons():
            with open(lesson.solution, encoding="utf-8") as f:
                text = f.read()
            mutants = enumerate_mutants(text)
            self.assertGreater(len(mutants), 5, lesson.name)
            self.assertEqual(len({m.name for m in mutants}), len(mutants), lesson.name)

    def test_equivalent_files_match_their_lessons(self):
        """A stale entry (a mutant that no longer exists) fails here, not only in scripts/mutate."""
        lessons = {l.slug: l for l in runner.all_lessons()}
        if not os.path.isdir(runner.EQUIVALENT_DIR):
            return
        for name in sorted(os.listdir(runner.EQUIVALENT_DIR)):
            if not name.endswith(".txt"):
                continue
            slug = name[:-4]
            self.assertIn(slug, lessons, f"{name} names no lesson")
            _, mutants = runner.lesson_mutants(lessons[slug])
            runner.load_equivalent(lessons[slug], mutants)  # raises on a stale or malformed entry


class EquivalentFileTest(unittest.TestCase):
    def test_parse(self):
        text = "# comment\n\nflip-cmp@37   lanes 1-31 write the same value\n  drop-term@12.2\twhy not\n"
        self.assertEqual(runner.parse_equivalent(text),
                         {"flip-cmp@37": "lanes 1-31 write the same value", "drop-term@12.2": "why not"})

    def test_errors(self):
        for bad in ("flip-cmp@37\n", "flip-cmp@37   \n", "not a name  reason\n", "x@1 a\nx@1 b\n"):
            with self.assertRaises(runner.MutationError, msg=bad):
                runner.parse_equivalent(bad)

    def test_stale_entry_is_an_error(self):
        mutants = enumerate_mutants("bool f(int a) { return a < 3; }\n")
        runner.check_stale({"flip-cmp@1": "r"}, mutants)
        with self.assertRaises(runner.MutationError) as e:
            runner.check_stale({"flip-cmp@1": "r", "drop-sync@9": "r"}, mutants)
        self.assertIn("drop-sync@9", str(e.exception))


class ScoreTest(unittest.TestCase):
    def test_tally(self):
        s = runner
        c = s.tally([s.KILLED] * 6 + [s.TIMEOUT] * 2 + [s.SURVIVED] * 1 + [s.EQUIVALENT] * 2 + [s.NOT_COMPILED] * 3
                    + [s.ERROR])
        self.assertEqual(c["mutants"], 15)
        self.assertEqual(c["killed"], 8)
        self.assertEqual(c["compiled"], 11)
        self.assertEqual(c["equivalent"], 2)
        self.assertEqual(c["survived"], 1)
        self.assertAlmostEqual(c["score"], 8 / 9)
        self.assertEqual(runner.format_score(c["score"]), "88.9%")

    def test_no_judged_mutant_has_no_score(self):
        c = runner.tally([runner.NOT_COMPILED, runner.EQUIVALENT])
        self.assertIsNone(c["score"])
        self.assertEqual(runner.format_score(None), "—")


class ClassifyTest(unittest.TestCase):
    def report(self, verdict, cases=(), reason=""):
        return {"verdict": verdict, "reason": reason, "cases": list(cases)}

    def test_verdicts(self):
        c = runner.classify
        self.assertEqual(c(0, self.report("pass"), "", False, 60)[0], runner.SURVIVED)
        self.assertEqual(c(3, self.report("fail-build", reason="x.cu:3: error: no"), "", False, 60),
                         (runner.NOT_COMPILED, "x.cu:3: error: no"))
        status, detail = c(1, self.report("fail-correctness", [
            {"name": "one_row", "passed": True, "detail": ""},
            {"name": "odd_cols", "passed": False, "detail": "y[0, 3]: expected 1, got 2"},
            {"name": "big", "passed": False, "skipped": True, "detail": "not run"}]), "", False, 60)
        self.assertEqual((status, detail), (runner.KILLED, "odd_cols: y[0, 3]: expected 1, got 2"))

    def test_hangs_count_as_timeouts(self):
        hang = {"name": "one_row", "passed": False,
                "detail": "the kernel did not finish within 20 s on the emulator (a hang)"}
        self.assertEqual(runner.classify(1, self.report("fail-correctness", [hang]), "", False, 60)[0], runner.TIMEOUT)
        self.assertEqual(runner.classify(-9, None, "", True, 60)[0], runner.TIMEOUT)
        self.assertEqual(runner.classify(1, None, "the kernel did not finish within 20 s; stopping.", False, 60)[0],
                         runner.TIMEOUT)

    def test_a_crash_after_a_failed_case_is_a_kill(self):
        output = ("correctness: 13 case(s)\n  FAIL  rows_zero  (rows = 0 does nothing)\n"
                  "        wrote outside the output\n")
        status, detail = runner.classify(245, None, output, False, 60)
        self.assertEqual(status, runner.KILLED)
        self.assertTrue(detail.startswith("rows_zero: wrote outside the output"), detail)
        self.assertIn("crashed, exit code 245", detail)
        self.assertEqual(runner.classify(-11, None, "building ...\n", False, 60)[0], runner.KILLED)

    def test_no_report_is_an_error(self):
        status, detail = runner.classify(4, None, "no usable GPU\n", False, 60)
        self.assertEqual(status, runner.ERROR)
        self.assertIn("exit code 4", detail)
        self.assertEqual(runner.classify(4, self.report("no-gpu"), "", False, 60)[0], runner.ERROR)

    def test_cache_reuse(self):
        self.assertTrue(runner._reusable({"status": runner.KILLED}, "abc"))
        self.assertTrue(runner._reusable({"status": runner.NOT_COMPILED}, None))
        self.assertTrue(runner._reusable({"status": runner.SURVIVED, "grader": "abc"}, "abc"))
        self.assertFalse(runner._reusable({"status": runner.SURVIVED, "grader": "abc"}, "def"))
        self.assertFalse(runner._reusable({"status": runner.ERROR}, "abc"))


class SampleTest(unittest.TestCase):
    """--sample: a seeded sample spread over the operators, in source order, the same every time."""

    def mutants(self):
        with open(os.path.join(ROOT, "solutions", "04-vectorized", "rmsnorm_vectorized.cu"), encoding="utf-8") as f:
            return enumerate_mutants(f.read())

    def test_the_sample_is_spread_deterministic_and_in_order(self):
        all_mutants = self.mutants()
        first = runner.select(all_mutants, sample=12, sample_key="04-vectorized-1")
        again = runner.select(all_mutants, sample=12, sample_key="04-vectorized-1")
        other = runner.select(all_mutants, sample=12, sample_key="04-vectorized-2")
        self.assertEqual(len(first), 12)
        self.assertEqual([m.name for m in first], [m.name for m in again])
        self.assertNotEqual([m.name for m in first], [m.name for m in other])
        operators_present = {m.operator for m in all_mutants}
        self.assertEqual({m.operator for m in first}, operators_present if len(operators_present) <= 12 else
                         {m.operator for m in first})
        self.assertGreaterEqual(len({m.operator for m in first}), min(12, len(operators_present)))
        order = [all_mutants.index(m) for m in first]
        self.assertEqual(order, sorted(order))

    def test_a_sample_larger_than_the_selection_takes_it_all(self):
        all_mutants = self.mutants()[:5]
        self.assertEqual(runner.select(all_mutants, sample=50, sample_key="x"), all_mutants)


class SelectionAndSummaryTest(unittest.TestCase):
    TEXT = "void f() {\n  if (a < b && c) __syncthreads();\n  for (int i = 0; i < n; ++i) g();\n}\n"

    def test_select(self):
        mutants = enumerate_mutants(self.TEXT)
        names = lambda ms: [m.name for m in ms]  # noqa: E731
        self.assertEqual(names(runner.select(mutants, "drop-sync")), ["drop-sync@2"])
        self.assertEqual(names(runner.select(mutants, "flip-cmp@3,drop-sync@2")), ["drop-sync@2", "flip-cmp@3"])
        self.assertEqual(names(runner.select(mutants, "*@3")), names([m for m in mutants if m.line == 3]))
        self.assertEqual(names(runner.select(mutants, None, 2)), names(mutants[:2]))
        with self.assertRaises(runner.UsageError):
            runner.select(mutants, "no-such@1")

    def test_summary_merges_lessons(self):
        lesson = runner.all_lessons()[2]
        text, mutants = runner.lesson_mutants(lesson)
        rows = [{"name": m.name, "operator": m.operator, "line": m.line, "description": m.description,
                 "status": runner.SURVIVED if k == 0 else runner.KILLED, "detail": "", "seconds": 1.0, "cached": False}
                for k, m in enumerate(mutants[:3])]
        report = {"lesson": lesson.name, "slug": lesson.slug, "source": "solutions/x.cu", "mode": "emulator",
                  "seed": 1, "commit": "abc1234", "source_modified": False, "when": "2025-01-01T00:00:00",
                  "mutants_total": len(mutants), "selected": 3, "partial": True, "limit": 3, "only": None,
                  "counts": runner.tally([r["status"] for r in rows]), "mutants": rows}
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, lesson.name))
            with open(os.path.join(tmp, lesson.name, "results.json"), "w", encoding="utf-8") as f:
                json.dump(report, f)
            page = os.path.join(tmp, "mutation.md")
            notes = os.path.join(tmp, "notes.md")
            with open(notes, "w", encoding="utf-8") as f:
                f.write("Lesson 9 waits for CPU time.\n")
            runner.write_summary(tmp, page, first_run=os.path.join(tmp, "none.json"), notes_path=notes)
            with open(page, encoding="utf-8") as f:
                md = f.read()
            self.assertIn(f"| {lesson.name} | {len(mutants)} (3 graded) | 3 | 2 | 1 | 0 | 66.7% |\n", md)
            self.assertIn(f"- `{mutants[0].name}`: {mutants[0].description}", md)
            self.assertIn("partial: 3 of", md)
            self.assertIn("verdicts reached 3 on not recorded", md)
            # Every other lesson is a row that says it is not graded, with its mutant count; the notes follow.
            other = runner.all_lessons()[3]
            count = len(runner.lesson_mutants(other)[1])
            self.assertIn(f"| {other.name} | {count} | — | — | — | — | not graded |\n", md)
            self.assertIn("## Notes\n\nLesson 9 waits for CPU time.\n", md)
            # The counts kept from a first full run are shown beside the latest.
            first = os.path.join(tmp, "first.json")
            self.assertEqual(list(report_module.save_first_run(tmp, first)), [lesson.name])
            report["counts"] = runner.tally([runner.KILLED] * 3)
            report["mutants"] = [dict(r, status=runner.KILLED, where="16 CPUs") for r in rows]
            with open(os.path.join(tmp, lesson.name, "results.json"), "w", encoding="utf-8") as f:
                json.dump(report, f)
            runner.write_summary(tmp, page, first_run=first)
            with open(page, encoding="utf-8") as f:
                md = f.read()
        self.assertIn("| score | first full run |", md)
        self.assertIn(f"| {lesson.name} | {len(mutants)} (3 graded) | 3 | 3 | 0 | 0 | 100.0% | 66.7% (3 graded) |", md)
        self.assertIn("verdicts reached 3 on 16 CPUs", md)

    def test_save_first_run_from_the_command_line(self):
        """`scripts/mutate --save-first-run` writes the counts (a local name once hid the report module)."""
        import io
        from unittest import mock
        cli = _load_cli()
        lesson = runner.all_lessons()[2]
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, lesson.name))
            counts = runner.tally([runner.KILLED, runner.SURVIVED])
            with open(os.path.join(tmp, lesson.name, "results.json"), "w", encoding="utf-8") as f:
                json.dump({"lesson": lesson.name, "mutants_total": 2, "selected": 2, "counts": counts,
                           "commit": "abc1234", "when": "2025-01-01T00:00:00"}, f)
            first = os.path.join(tmp, "first.json")
            with mock.patch.object(cli.report, "BEFORE", first), mock.patch("sys.stdout", io.StringIO()):
                self.assertEqual(cli.main(["--save-first-run", "--out", tmp]), 0)
            with open(first, encoding="utf-8") as f:
                self.assertEqual(json.load(f)[lesson.name]["counts"], counts)

    def test_reports_from_the_cache_alone(self):
        """`--from-cache` writes the reports from cached verdicts, grading nothing; a mutant without one
        is listed as not graded and the report is partial."""
        import io
        from unittest import mock
        cli = _load_cli()
        lesson = runner.all_lessons()[2]
        text, mutants = runner.lesson_mutants(lesson)
        equivalent = runner.load_equivalent(lesson, mutants)
        picked = [m for m in mutants if m.name not in equivalent][:4]
        verdicts = [runner.KILLED, runner.SURVIVED, runner.NOT_COMPILED]  # the fourth has none
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "cache"))
            for m, status in zip(picked, verdicts):
                key = runner.cache_key(lesson, "emulator", 1, m.apply(text))
                with open(os.path.join(tmp, "cache", key + ".json"), "w", encoding="utf-8") as f:
                    json.dump({"status": status, "detail": "", "seconds": 2.0, "grader": "an older build",
                               "name": m.name, "where": "2 CPUs"}, f)
            only = ",".join(m.name for m in picked)
            out = io.StringIO()
            with mock.patch("sys.stdout", out), \
                    mock.patch.object(runner, "grade_one", side_effect=AssertionError("graded")), \
                    mock.patch.object(runner, "grade_in_schema", side_effect=AssertionError("graded")):
                self.assertEqual(cli.main([lesson.name, "--from-cache", "--out", tmp, "--only", only]), 0)
            with open(os.path.join(tmp, "results.json"), encoding="utf-8") as f:
                result = json.load(f)
            with open(os.path.join(tmp, "survivors.md"), encoding="utf-8") as f:
                survivors = f.read()
            with open(os.path.join(tmp, "row.md"), encoding="utf-8") as f:
                row = f.read()
            diffs = os.listdir(os.path.join(tmp, "survivors"))
        self.assertEqual([r["name"] for r in result["mutants"]], [m.name for m in picked[:3]])
        self.assertEqual([r["status"] for r in result["mutants"]], verdicts)
        self.assertEqual(result["not_graded"], [picked[3].name])
        self.assertTrue(result["partial"])
        self.assertEqual(result["run"]["survivors_other_grader"], 1)
        self.assertEqual((result["counts"]["killed"], result["counts"]["survived"]), (1, 1))
        self.assertIn("Partial: 1 of the 4 selected mutants have no verdict yet", survivors)
        self.assertIn(f"## Not graded (no verdict yet)\n\n- `{picked[3].name}`", survivors)
        self.assertIn(f"- `{picked[1].name}`: {picked[1].description}", survivors)
        self.assertEqual(diffs, [picked[1].name + ".diff"])
        self.assertIn(f"| {lesson.name} | {len(mutants)} (3 graded) | 2 | 1 | 1 | 0 | 50.0% |", row)
        self.assertIn("partial: 1 not graded", out.getvalue())

    def test_a_survivor_killed_on_the_second_memory_counts_as_killed(self):
        """Lesson 4 picks its plan by the memory's speed: a survivor on the default memory that the cache holds as
        killed under WBEMU_MEMORY=h200 (OUT/memory-h200) is reported killed, and says on which memory."""
        import io
        from unittest import mock
        cli = _load_cli()
        lesson = runner.find_lesson("lesson4")
        text, mutants = runner.lesson_mutants(lesson)
        self.assertTrue(runner.picks_plan_by_memory(lesson))
        self.assertFalse(runner.picks_plan_by_memory(runner.find_lesson("lesson3")))
        equivalent = runner.load_equivalent(lesson, mutants)
        picked = [m for m in mutants if m.name not in equivalent][:2]
        key = runner.cache_key(lesson, "emulator", 1, picked[0].apply(text))
        self.assertNotEqual(key, runner.cache_key(lesson, "emulator", 1, picked[0].apply(text), "h200"))
        with tempfile.TemporaryDirectory() as tmp:
            second = runner.second_memory_out(tmp)
            for folder, memory, status in ((tmp, None, runner.SURVIVED), (second, "h200", runner.KILLED)):
                os.makedirs(os.path.join(folder, "cache"))
                for m in picked:
                    name = runner.cache_key(lesson, "emulator", 1, m.apply(text), memory)
                    verdict = status if m is picked[0] or memory is None else runner.SURVIVED
                    with open(os.path.join(folder, "cache", name + ".json"), "w", encoding="utf-8") as f:
                        json.dump({"status": verdict, "detail": "case_x: wrong", "seconds": 1.0, "name": m.name}, f)
            with mock.patch("sys.stdout", io.StringIO()):
                self.assertEqual(cli.main([lesson.name, "--from-cache", "--out", tmp, "--only",
                                           ",".join(m.name for m in picked)]), 0)
            with open(os.path.join(tmp, "results.json"), encoding="utf-8") as f:
                rows = json.load(f)["mutants"]
        self.assertEqual([r["status"] for r in rows], [runner.KILLED, runner.SURVIVED])
        self.assertIn("on an H200's memory (WBEMU_MEMORY=h200): case_x: wrong", rows[0]["detail"])

    def test_grading_regrades_survivors_on_the_second_memory(self):
        """A run on lesson 4 grades its survivors again with WBEMU_MEMORY=h200 set for the grading processes,
        and refuses to start with WBEMU_MEMORY already set."""
        import io
        from unittest import mock
        lesson = runner.find_lesson("lesson4")
        text, mutants = runner.lesson_mutants(lesson)
        equivalent = runner.load_equivalent(lesson, mutants)
        picked = [m for m in mutants if m.name not in equivalent][:2]
        seen = []

        def grade(lesson_, path, content, work, mode, seed, timeout_s, keep_libs=False):
            memory = os.environ.get("WBEMU_MEMORY")
            seen.append((os.path.basename(path), memory))
            killed = memory == "h200" and os.path.splitext(os.path.basename(path))[0] == picked[0].name
            return (runner.KILLED, "case_y: wrong", 0.5) if killed else (runner.SURVIVED, "", 0.5)

        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(runner, "grade_one", side_effect=grade), \
                mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("WBEMU_MEMORY", None)
            report = runner.run_lesson(lesson, tmp, only=",".join(m.name for m in picked), schemata=False,
                                       log=lambda *a: None)
            self.assertNotIn("WBEMU_MEMORY", os.environ)
            os.environ["WBEMU_MEMORY"] = "h200"
            with self.assertRaises(runner.UsageError):
                runner.run_lesson(lesson, tmp, only=picked[0].name, schemata=False, log=lambda *a: None)
        self.assertEqual(sorted(str(m) for _, m in seen), ["None", "None", "h200", "h200"])
        self.assertEqual([r["status"] for r in report["mutants"]], [runner.KILLED, runner.SURVIVED])
        self.assertEqual(report["run"]["second_memory"], {"memory": "h200", "graded": 2, "killed": 1})

    def test_memory_grades_the_selection_on_that_memory_alone_in_its_own_folder(self):
        import io
        from unittest import mock
        cli = _load_cli()
        lesson = runner.find_lesson("lesson4")
        _, mutants = runner.lesson_mutants(lesson)
        picked = mutants[0].name
        calls = []

        def run(lesson_, out, **kw):
            calls.append((out, kw.get("memory"), kw.get("only"), kw.get("check_equivalent")))
            return {"counts": {"timeouts": 0, "not_compiled": 0, "errors": 0}, "seconds_per_mutant": None,
                    "not_graded": []}

        with tempfile.TemporaryDirectory() as tmp, mock.patch.object(cli.runner, "run_lesson", side_effect=run), \
                mock.patch.object(cli.runner, "table_row", return_value=""), mock.patch("sys.stdout", io.StringIO()):
            cli.main(["lesson4", "--memory", "h200", "--check-equivalent", "--only", picked, "--out", tmp])
            self.assertEqual(calls, [(os.path.join(tmp, "memory-h200"), "h200", picked, True)])
            err = io.StringIO()
            with mock.patch("sys.stderr", err):
                self.assertEqual(cli.main(["lesson4", "--memory", "h200", "--from-cache", "--out", tmp]), 64)
                self.assertEqual(cli.main(["lesson4", "--memory", "h100", "--out", tmp]), 64)
            self.assertIn("does not go with --gpu or --from-cache", err.getvalue())

    def test_from_cache_without_a_cache_is_an_error(self):
        cli = _load_cli()
        with tempfile.TemporaryDirectory() as tmp:
            import io
            from unittest import mock
            err = io.StringIO()
            with mock.patch("sys.stderr", err):
                self.assertEqual(cli.main(["lesson3", "--from-cache", "--out", tmp]), 64)
        self.assertIn("no cache in", err.getvalue())


def _load_cli():
    """scripts/mutate as a module."""
    import importlib.machinery
    import importlib.util
    path = os.path.join(ROOT, "scripts", "mutate")
    loader = importlib.machinery.SourceFileLoader("mutate_cli", path)
    spec = importlib.util.spec_from_loader("mutate_cli", loader)
    cli = importlib.util.module_from_spec(spec)
    loader.exec_module(cli)
    return cli


if __name__ == "__main__":
    unittest.main()
