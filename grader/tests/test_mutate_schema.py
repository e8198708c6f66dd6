"""Mutant schemata (grader/mutation/schema.py): where each mutant's switch goes, the schema's text, the
compiler's errors read back, and, with the host's C++ compiler, that a schema run with WORKBOOK_MUTANT=K
prints what mutant K compiled alone prints, for every mutant of a small program."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader"))

from mutation import operators, schema  # noqa: E402
from mutation.cxx_source import Source  # noqa: E402

# The constructs the references use: a loop bound, a `&&` chain holding a template call, a statement a
# mutant turns into atomics, `if constexpr`, a template argument, a braced initialiser, stride arguments.
TOY = """/** A small program for the schema tests. */
#include <cstdint>
#include <cstdio>

template <typename T>
T twice(T v) {
    return v + v;
}
template <int N>
int fixed() {
    return N;
}
static void atomicAdd(float* p, float v) { *p += v * 1.0001f; }
constexpr int kLimit = 4;

float total(const float* x, int n) {
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) sum += x[i];
    return sum;
}

int pick(int a, int b, const float* p) {
    if (a < b && p != nullptr) return twice<int>(a) - 1;
    if constexpr (kLimit > 3) {
        if (a >= b || fixed<2>() == 2) return a + 1;
    }
    return b;
}

void accumulate(float* out, const float* x, int n, int64_t s0, int64_t s1) {
    for (int i = 0; i < n; ++i) out[0] += x[i];
    out[1] = twice<float>(static_cast<float>(s0 - s1));
}

int main() {
    float x[6] = {1.5f, 2.0f, -3.0f, 4.25f, 0.5f, 7.0f};
    float acc[2] = {0.0f, 0.0f};
    const int64_t x_stride = 3, y_stride = 7;
    accumulate(acc, x, 6, x_stride, y_stride);
    std::printf("%.9g %d %d %d %.9g %.9g\\n", total(x, 6), pick(2, 5, x), pick(5, 2, nullptr), fixed<kLimit - 1>(),
                acc[0], acc[1]);
    return 0;
}
"""

# The body of an `if constexpr` written without braces is ordinary code: its mutants get places.
TOY_IF_CONSTEXPR = """/** A second small program: `if constexpr (C) statement;` with no braces. */
#include <cstdio>

constexpr bool kOn = true;
static int barriers = 0;
static void __syncthreads() { ++barriers; }

int step(int a, int b) {
    int r = b;
    if constexpr (kOn) r = a < b ? a + 1 : b;
    if constexpr (kOn) __syncthreads();
    if constexpr (kOn) std::printf("%d ", a == 0 ? 1 : 2);
    return r;
}

int main() {
    const int first = step(2, 5), second = step(0, 0);
    std::printf("%d %d %d\\n", first, second, barriers);
    return 0;
}
"""

# `if constexpr` chains whose branches compile only for some types: `v.a` only for Wide. As a plain `if`
# every branch would be compiled for every instantiation, and the schema would not compile.
TOY_BRANCHES = """/** A third small program: branches that compile only where their condition holds. */
#include <cstdio>

struct Wide {
    int a, b, c;
};
template <typename T>
int width(T v) {
    if constexpr (sizeof(T) >= 8) {
        return v.a + v.b;
    } else if constexpr (sizeof(T) >= 4) {
        return static_cast<int>(v) * 2;
    } else {
        return static_cast<int>(v) + 1;
    }
}
template <int N>
int steps() {
    int r = 0;
    if constexpr (N > 2 && N % 2 == 0) {
        r = N / 2;
    } else {
        r = N;
    }
    return r;
}

int main() {
    const Wide w{3, 4, 5};
    std::printf("%d %d %d %d %d %d\\n", width(w), width(5), width(static_cast<char>(7)), steps<4>(), steps<3>(),
                steps<2>());
    return 0;
}
"""


def numbered(text):
    return [(k + 1, m) for k, m in enumerate(operators.enumerate_mutants(text))]


class PlaceTest(unittest.TestCase):
    def place(self, text, name):
        m = next(m for m in operators.enumerate_mutants(text) if m.name == name)
        p = schema.place_of(Source(text), m)
        return None if p is None else (text[p[0]:p[1]], p[2])

    def test_expression_places(self):
        self.assertEqual(self.place(TOY, "flip-cmp@18"), ("i < n", "expr"))
        self.assertEqual(self.place(TOY, "drop-term@23"), ("a < b && p != nullptr", "expr"))
        self.assertEqual(self.place(TOY, "off-by-one@23"), ("twice<int>(a) - 1", "expr"))
        # The expression bounds stop at the comma between template arguments; the place does not.
        self.assertEqual(self.place(TOY, "drop-term@25"), ("a >= b || fixed<2>() == 2", "expr"))
        self.assertEqual(self.place(TOY, "swap-stride@39"), ("accumulate(acc, x, 6, x_stride, y_stride)", "expr"))

    def test_a_statement_place_for_an_assignment_made_atomic(self):
        text, kind = self.place(TOY, "atomic-sum@31")
        self.assertEqual(kind, "stmt")
        self.assertEqual(text, "for (int i = 0; i < n; ++i) out[0] += x[i];")

    def test_an_if_constexpr_condition_stays_a_constant_where_it_can(self):
        self.assertEqual(self.place(TOY, "flip-cmp@24"), ("constexpr (kLimit > 3)", "cond"))
        placed, _ = schema.switches(TOY, numbered(TOY))
        lines = schema.build(TOY, placed).splitlines()
        # The branch is compiled where the reference or a mutant takes it; the run-time switch picks.
        self.assertTrue(lines[23].startswith("    { if constexpr (static_cast<bool>(kLimit > 3) || "
                                             "static_cast<bool>(kLimit >= 3)) if (__wb_mutant == 9 ? "
                                             "(static_cast<bool>(kLimit >= 3)) : "), lines[23])
        self.assertTrue(lines[23].endswith(" : (kLimit > 3)) {"), lines[23])
        self.assertEqual(lines[25], "    } }")  # no else: the block closes the switch
        cond = next(s for s in placed if s.kind == "cond")
        self.assertEqual(schema.lines_of(TOY, cond), (24, 26))  # its branches may compile for more instantiations

    def test_an_if_constexpr_chain_keeps_its_else_branches(self):
        placed, _ = schema.switches(TOY_BRANCHES, numbered(TOY_BRANCHES))
        lines = schema.build(TOY_BRANCHES, placed).splitlines()
        self.assertTrue(lines[8].startswith("    { if constexpr (static_cast<bool>(sizeof(T) >= 8) || "), lines[8])
        # `} else if constexpr (...) {`: the else runs its chain where some variant is false, the chain a switch too.
        self.assertTrue(lines[10].startswith("    } if constexpr (!(static_cast<bool>(sizeof(T) >= 8) && "), lines[10])
        self.assertIn(" if (!(__wb_mutant == ", lines[10])
        self.assertIn("{ if constexpr (static_cast<bool>(sizeof(T) >= 4) || ", lines[10])
        self.assertTrue(lines[14].endswith("    } } }"), lines[14])  # the chain's end closes both

    def test_constant_expressions_get_no_place(self):
        src = "constexpr int kA = 3;\nconstexpr int kB = kA - 1;\nint f(int v) { return v < kB ? 1 : 0; }\n"
        self.assertIsNone(self.place(src, "off-by-one@2"))
        self.assertEqual(self.place(src, "flip-cmp@3"), ("v < kB", "expr"))

    def test_the_body_of_an_if_constexpr_without_braces_is_not_a_constant(self):
        self.assertEqual(self.place(TOY_IF_CONSTEXPR, "flip-cmp@10"), ("a < b", "expr"))
        self.assertEqual(self.place(TOY_IF_CONSTEXPR, "off-by-one@10"), ("a + 1", "expr"))
        self.assertEqual(self.place(TOY_IF_CONSTEXPR, "flip-cmp@12"), ("a == 0", "expr"))
        self.assertIsNotNone(self.place(TOY_IF_CONSTEXPR, "drop-sync@11"))
        # Its condition is still the constant it was: a place of its own kind.
        src = "constexpr int kA = 3;\nint f(int v) {\n    if constexpr (kA > 2) v = v + 1;\n    return v;\n}\n"
        self.assertEqual(self.place(src, "flip-cmp@3"), ("constexpr (kA > 2)", "cond"))
        self.assertEqual(self.place(src, "off-by-one@3"), ("v + 1", "expr"))

    def test_a_barrier_is_its_own_place_not_the_loop_before_it(self):
        src = ("__global__ void k(float* s) {\n    for (int i = 0; i < 4; ++i) {\n        s[i] = 0.0f;\n    }\n"
               "    __syncthreads();\n}\n")
        self.assertIn(self.place(src, "drop-sync@5"), (("__syncthreads()", "expr"), ("__syncthreads();", "stmt")))


class BuildTest(unittest.TestCase):
    def test_lines_are_kept_and_every_placed_mutant_has_an_arm(self):
        pairs = numbered(TOY)
        placed, unplaced = schema.switches(TOY, pairs)
        out = schema.build(TOY, placed)
        self.assertEqual(out.count("\n"), TOY.count("\n"))
        self.assertTrue(out.startswith(schema.PRELUDE))
        for k, m in pairs:
            arm = re.search(rf"{schema.VAR} == {k}\b", out)
            self.assertEqual(arm is None, (k, m) in unplaced, m.name)
        # Every line of the reference is still there, on its own line (arms go in front of it).
        for a, b in zip(TOY.splitlines()[1:], out.splitlines()[1:]):
            self.assertTrue(b.endswith(a.strip()) or schema.VAR in b, (a, b))

    def test_overlapping_places_share_one_switch(self):
        placed, _ = schema.switches(TOY, numbered(TOY))
        line23 = [s for s in placed if schema.lines_of(TOY, s)[0] == 23]
        self.assertEqual(len(line23), 2)  # the condition's chain, and the returned value
        self.assertEqual(len(line23[0].members), 4)

    def test_a_chain_arm_is_a_bool(self):
        placed, _ = schema.switches(TOY, numbered(TOY))
        out = schema.build(TOY, placed)
        self.assertIn("static_cast<bool>(p != nullptr)", out)

    def test_comments_in_a_place_do_not_swallow_the_arms(self):
        src = "int f(int a, int b) {\n    return a < b &&  // why\n           b > 0;\n}\n"
        placed, _ = schema.switches(src, numbered(src))
        out = schema.build(src, placed)
        self.assertEqual(out.count("\n"), src.count("\n"))
        first = out.splitlines()[1]
        self.assertNotIn("// why ", first.split("// why")[0])
        self.assertIn(":", first)


class ErrorTest(unittest.TestCase):
    OUTPUT = (
        "In file included from adapter.cu:9:\n"
        "schema-1.cu: In instantiation of 'void f() [with int VEC = 4]':\n"
        "schema-1.cu:40:5:   required from here\n"
        "schema-1.cu:12:20: error: the value of '__wb_mutant' is not usable in a constant expression\n"
        "schema-1.cu:1:65: note: '__wb_mutant' was not initialized with a constant expression\n"
        "schema-1.cu:30:9: error: template argument 4 is invalid\n"
        "other.h:12:3: error: something else\n")

    def test_errors_about_the_switch_come_first(self):
        self.assertEqual(schema.error_lines(self.OUTPUT, "schema-1.cu"), {12})

    def test_other_errors_name_their_lines(self):
        out = "schema-1.cu:30:9: error: operands to '?:' have different types\nschema-1.cu:31:1: error: x\n"
        self.assertEqual(schema.error_lines(out, "schema-1.cu"), {30, 31})

    def test_an_error_inside_a_template_blames_the_if_constexpr_that_instantiated_it(self):
        placed, _ = schema.switches(TOY, numbered(TOY))
        out = ("schema-1.cu: In instantiation of 'int fixed() [with int N = 2]':\n"
               "schema-1.cu:25:30:   required from here\n"
               "schema-1.cu:11:12: error: something only this instantiation gets wrong\n")
        kept, dropped = schema.split_failures(TOY, placed, out, "schema-1.cu")
        self.assertEqual([s.kind for s in dropped], ["cond"])

    def test_split_takes_out_the_named_switches_or_says_none_is_named(self):
        placed, _ = schema.switches(TOY, numbered(TOY))
        out = "schema-1.cu:23:12: error: the value of '__wb_mutant' is not usable in a constant expression\n"
        kept, dropped = schema.split_failures(TOY, placed, out, "schema-1.cu")
        self.assertEqual(len(dropped), 2)
        self.assertEqual(len(kept), len(placed) - 2)
        self.assertEqual(schema.split_failures(TOY, placed, "ld: cannot find -lfoo\n", "schema-1.cu"), (None, []))


class NarrowTest(unittest.TestCase):
    """schema_compile.prepare with the compiler replaced: which mutants end in which schema."""

    def setUp(self):
        sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
        from mutation import grading, schema_compile
        from workbook import emulated
        self.tmp = tempfile.mkdtemp(prefix="narrow-test-")
        self.saved = [(emulated, "check_for_emulator"), (emulated, "compile_for_emulator"),
                      (grading, "grade_in_schema")]
        self.saved = [(mod, name, getattr(mod, name)) for mod, name in self.saved]
        self.emulated, self.grading, self.schema_compile = emulated, grading, schema_compile

    def tearDown(self):
        for mod, name, value in self.saved:
            setattr(mod, name, value)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def prepare(self, fails):
        """Runs prepare on the small program; `fails(lines)` -> the lines a compile of a schema holding
        switches on `lines` reports errors on (empty: it compiles)."""
        from workbook.build import BuildError
        pairs = numbered(TOY)
        placed, _ = schema.switches(TOY, pairs)
        line_of = {k: schema.lines_of(TOY, s)[0] for s in placed for k, _ in s.members}

        def check(lesson, path, shown):
            with open(path, encoding="utf-8") as f:
                present = {line_of[int(k)] for k in re.findall(rf"{schema.VAR} == (\d+)", f.read())}
            bad = fails(present)
            if bad:
                raise BuildError("did not compile", "".join(f"{path}:{b}:5: error: no match\n" for b in sorted(bad)))

        self.emulated.check_for_emulator = check
        self.emulated.compile_for_emulator = lambda lesson, path, shown: path + ".so"
        self.grading.grade_in_schema = lambda *a, **k: (self.grading.SURVIVED, "", 0.0)
        lesson = types.SimpleNamespace(name="toy", solution=os.path.join(self.tmp, "toy.cu"))
        built, singles = self.schema_compile.prepare(lesson, TOY, placed, pairs, self.tmp, 1, 60, log=lambda *_: None)
        return [sorted({line_of[k] for k in s.numbers.values()}) for s in built], sorted(m.name for m in singles)

    def test_switches_that_fail_only_together_go_into_schemata_apart(self):
        # Any switch of line 23 beside any of line 25 fails (a template made for the other's types);
        # line 40's switch fails on its own.
        def fails(lines):
            return ({23, 25} if {23, 25} <= lines else set()) | ({40} & lines)

        schemata, singles = self.prepare(fails)
        self.assertEqual(singles, ["off-by-one@40"])
        self.assertEqual(len(schemata), 3, schemata)
        for lines in schemata:
            self.assertFalse({23, 25} <= set(lines), lines)
        self.assertEqual(sorted(line for lines in schemata for line in lines),
                         [17, 18, 23, 24, 25, 31, 37, 39])

    def test_a_few_mutants_left_apart_are_compiled_one_by_one(self):
        schemata, singles = self.prepare(lambda lines: {18, 40} & lines)
        self.assertEqual(singles, ["flip-cmp@18", "loop-bound@18", "off-by-one@40"])
        self.assertEqual(len(schemata), 1)


def _compiler():
    return shutil.which("g++") or shutil.which("c++")


@unittest.skipUnless(_compiler(), "needs a C++ compiler")
class SameResultTest(unittest.TestCase):
    """The schema's promise: with WORKBOOK_MUTANT=K it behaves as mutant K compiled alone, and with 0 as the
    reference. Checked on every mutant of the small program that compiles alone."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="schema-test-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def build(self, name, text):
        src = os.path.join(self.tmp, name + ".cpp")
        exe = os.path.join(self.tmp, name)
        with open(src, "w", encoding="utf-8") as f:
            f.write(text)
        proc = subprocess.run([_compiler(), "-std=c++17", "-O1", "-w", src, "-o", exe], capture_output=True,
                              text=True)
        return exe if proc.returncode == 0 else None

    def run_exe(self, exe, k=None):
        env = dict(os.environ)
        env.pop(schema.ENV, None)
        if k is not None:
            env[schema.ENV] = str(k)
        return subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60).stdout

    def same_as_alone(self, text, at_least, outputs):
        """Compiles the schema of every mutant of `text` and each mutant alone; asserts they print alike.
        `at_least` mutants compared; `outputs`: how many different outputs the mutants must give at least."""
        pairs = numbered(text)
        placed, unplaced = schema.switches(text, pairs)
        exe = self.build("schema", schema.build(text, placed))
        self.assertIsNotNone(exe, "the schema of the small program compiles")
        reference = self.run_exe(self.build("reference", text))
        self.assertEqual(self.run_exe(exe), reference)
        self.assertEqual(self.run_exe(exe, 0), reference)
        compared = 0
        for k, m in pairs:
            if (k, m) in unplaced:
                continue
            alone = self.build(f"m{k}", m.apply(text))
            if alone is None:
                continue
            self.assertEqual(self.run_exe(exe, k), self.run_exe(alone), m.name)
            compared += 1
        self.assertGreaterEqual(compared, at_least)
        # Mutants do change what it prints: the comparison above is not of identical programs.
        self.assertGreaterEqual(len({self.run_exe(exe, k) for k, _ in pairs}), outputs)

    def test_every_mutant_runs_in_the_schema_as_it_runs_alone(self):
        self.same_as_alone(TOY, 15, 6)

    def test_if_constexpr_chains_run_in_the_schema_as_alone(self):
        self.assertEqual(sum(1 for s in schema.switches(TOY_BRANCHES, numbered(TOY_BRANCHES))[0] if s.kind == "cond"), 3)
        self.same_as_alone(TOY_BRANCHES, 7, 6)

    def test_mutants_in_an_if_constexpr_body_run_in_the_schema_as_alone(self):
        self.assertEqual(schema.switches(TOY_IF_CONSTEXPR, numbered(TOY_IF_CONSTEXPR))[1], [])
        self.same_as_alone(TOY_IF_CONSTEXPR, 4, 4)

    def test_coverage_names_every_mutant_that_could_change_the_output(self):
        """Coverage mode: the schema runs as the reference and marks each mutant infected (its value differs
        where it is evaluated, or its place is reached where it cannot be evaluated beside the reference).
        A mutant not marked must print what the reference prints: nothing it could fail was skipped."""
        pairs = numbered(TOY)
        placed, unplaced = schema.switches(TOY, pairs)
        exe = self.build("schema", schema.build(TOY, placed))
        reference = self.run_exe(self.build("reference", TOY))
        cov = os.path.join(self.tmp, "cov")
        env = dict(os.environ, **{schema.COVERAGE_ENV: cov})
        env.pop(schema.ENV, None)
        out = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=60).stdout
        self.assertEqual(out, reference)  # coverage mode changes nothing the program does
        with open(cov, "rb") as f:
            infected = {k for k, b in enumerate(f.read()) if b}
        not_infected = [(k, m) for k, m in pairs if (k, m) not in unplaced and k not in infected]
        self.assertTrue(not_infected, "some mutants of the small program are not infected by its one input")
        self.assertTrue(infected)
        for k, m in not_infected:
            self.assertEqual(self.run_exe(exe, k), reference, f"{m.name} was not infected yet prints otherwise")
        # Pure arms are compared, not merely reached: `a <= b` at (2, 5) and (5, 2) equals `a < b` there.
        flip = next(k for k, m in pairs if m.name == "flip-cmp@23")
        self.assertNotIn(flip, infected)

    def test_pure_expressions(self):
        for code in ("a < b", "nvec <= 128 && rows > 0", "x + 1", "a.rows - 1", "n / 2", "VEC % 2 == 0",
                     "static_cast<bool>(p != nullptr)", "sizeof(T) == 2"):
            self.assertTrue(schema.pure(code), code)
        for code in ("f(x) < 2", "p[0] > 0", "p->x", "*p == 0", "i++ < n", "a = b", "n / d", "x % m",
                     "__shfl_xor_sync(0xffffffffu, v, 16)", "twice<int>(a) - 1"):
            self.assertFalse(schema.pure(code), code)


if __name__ == "__main__":
    unittest.main()
