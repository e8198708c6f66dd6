"""Every lesson's contract, rule by rule, names the cases that check it.

Each lesson folder with a plan (grader/lessons/NN-slug/plan.cu or plan.cpp) keeps its contract as
a table, grader/lessons/NN-slug/contract_rules.json:

    {"lesson": N, "contract": "where the contract is written",
     "rules": [{"id": "kebab-id", "area": "sizes", "rule": "one sentence", "cases": ["name", "prefix_*"]}]}

The file tests check the tables themselves (no build needed); the case tests ask the built grader
for the lesson's cases (`--list-cases`, which runs nothing and needs no GPU) and fail for every entry
that names none of them, so a rule cannot point at a case that was renamed or never written. The build
folder is WORKBOOK_BUILD_DIR (default ROOT/build); without the grader and the references built there,
the case tests are skipped, saying so.
"""
import json
import os
import re
import subprocess
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LESSONS_DIR = os.path.join(ROOT, "grader", "lessons")
BUILD = os.environ.get("WORKBOOK_BUILD_DIR") or os.path.join(ROOT, "build")

# The areas lessons 1-8 use; a lesson may name another (lesson 10's workspace, lesson 9's descriptor), as
# long as it is one lower-case word or kebab-case.
AREAS = ("sizes", "strides", "alignment", "aliasing", "scalars", "stream", "repeat", "numerics", "launch")
RULE_KEYS = {"id", "area", "rule", "cases"}
FILE_KEYS = {"lesson", "contract", "rules"}
KEBAB = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
# An exact case name, or a prefix of case names ending in `*` (no other wildcard).
ENTRY = re.compile(r"^[A-Za-z0-9_.\-]+\*?$")


def lessons_with_plans():
    """(number, folder) of every grader/lessons/NN-slug/ that holds a plan."""
    found = []
    for folder in sorted(os.listdir(LESSONS_DIR)):
        m = re.match(r"^(\d\d)-[a-z0-9-]+$", folder)
        if not m:
            continue
        if any(os.path.isfile(os.path.join(LESSONS_DIR, folder, p)) for p in ("plan.cu", "plan.cpp")):
            found.append((int(m.group(1)), folder))
    return found


def rules_path(folder):
    return os.path.join(LESSONS_DIR, folder, "contract_rules.json")


def load_rules(folder):
    with open(rules_path(folder), encoding="utf-8") as f:
        return json.load(f)


def entry_matches(entry, names):
    """The case names `entry` stands for: itself, or every name that starts with its prefix."""
    if entry.endswith("*"):
        return [n for n in names if n.startswith(entry[:-1])]
    return [n for n in names if n == entry]


def grader_for(lesson):
    """The front end that lists lesson `lesson`'s cases: the emulator's for GPU lessons where it is built."""
    gpu = os.path.join(BUILD, "bin", "wb-grader")
    emu = os.path.join(BUILD, "bin", "wb-grader-emu")
    if lesson != 1 and os.access(emu, os.X_OK):
        return emu
    return gpu if os.access(gpu, os.X_OK) else None


def reference_library(lesson):
    return os.path.join(BUILD, "lib", f"lesson{lesson}_reference.so")


def list_cases(binary, lesson):
    """The case names `binary --list-cases` prints for the lesson, one a line."""
    lib = reference_library(lesson)
    proc = subprocess.run([binary, "--list-cases", "--lesson", str(lesson), "--student", lib, "--reference", lib],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(f"{os.path.basename(binary)} --list-cases --lesson {lesson} exited {proc.returncode}: "
                             f"{proc.stderr.strip()}")
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


class RuleFiles(unittest.TestCase):
    """The tables themselves: present for every lesson with a plan, well formed, ids unique."""

    def test_there_are_lessons(self):
        self.assertTrue(lessons_with_plans(), f"no lesson plan found under {LESSONS_DIR}")

    def test_every_lesson_with_a_plan_has_its_rules(self):
        for n, folder in lessons_with_plans():
            with self.subTest(lesson=folder):
                self.assertTrue(os.path.isfile(rules_path(folder)),
                                f"grader/lessons/{folder}/ has a plan but no contract_rules.json: write the "
                                "lesson's contract as rules, each naming the cases that check it")

    def test_rules_are_well_formed(self):
        for n, folder in lessons_with_plans():
            if not os.path.isfile(rules_path(folder)):
                continue  # reported by test_every_lesson_with_a_plan_has_its_rules
            with self.subTest(lesson=folder):
                where = f"grader/lessons/{folder}/contract_rules.json"
                try:
                    data = load_rules(folder)
                except ValueError as e:
                    self.fail(f"{where} is not valid JSON: {e}")
                self.assertIsInstance(data, dict, f"{where}: the top level is an object")
                self.assertEqual(set(data), FILE_KEYS, f"{where}: the keys are {sorted(FILE_KEYS)}")
                self.assertEqual(data["lesson"], n, f"{where}: \"lesson\" is {data['lesson']!r}, the folder says {n}")
                self.assertIsInstance(data["contract"], str, f"{where}: \"contract\" says where the contract is written")
                self.assertTrue(data["contract"].strip(), f"{where}: \"contract\" is empty")
                self.assertIsInstance(data["rules"], list, f"{where}: \"rules\" is a list")
                self.assertTrue(data["rules"], f"{where}: no rules")
                seen = set()
                for i, rule in enumerate(data["rules"]):
                    at = f"{where}: rules[{i}]"
                    self.assertIsInstance(rule, dict, f"{at} is an object")
                    self.assertEqual(set(rule), RULE_KEYS, f"{at}: the keys are {sorted(RULE_KEYS)}")
                    rid = rule["id"]
                    at = f"{where}: rule {rid!r}"
                    self.assertIsInstance(rid, str, f"{where}: rules[{i}].id is a string")
                    self.assertRegex(rid, KEBAB, f"{at}: an id is kebab-case")
                    self.assertNotIn(rid, seen, f"{at}: the id is used twice")
                    seen.add(rid)
                    self.assertIsInstance(rule["area"], str, f"{at}: the area is a word")
                    self.assertRegex(rule["area"], KEBAB, f"{at}: the area is one lower-case word, such as "
                                                          f"{', '.join(AREAS)}")
                    self.assertIsInstance(rule["rule"], str, f"{at}: the rule is a sentence")
                    self.assertTrue(rule["rule"].strip(), f"{at}: the rule is empty")
                    self.assertIsInstance(rule["cases"], list, f"{at}: \"cases\" is a list")
                    self.assertTrue(rule["cases"], f"{at}: no case checks this rule")
                    for entry in rule["cases"]:
                        self.assertIsInstance(entry, str, f"{at}: a case entry is a string")
                        self.assertRegex(entry, ENTRY, f"{at}: {entry!r} is a case name or a prefix ending in *")
                    self.assertEqual(len(rule["cases"]), len(set(rule["cases"])), f"{at}: a case is named twice")


class RulesNameCases(unittest.TestCase):
    """Every case entry of every rule matches at least one case of the lesson's plan."""

    def cases_of(self, lesson):
        binary = grader_for(lesson)
        if binary is None:
            self.skipTest(f"the grader is not built in {BUILD} (build wb-grader and wb-grader-emu, or set "
                          "WORKBOOK_BUILD_DIR)")
        if not os.path.isfile(reference_library(lesson)):
            self.skipTest(f"{reference_library(lesson)} is not built (the `lessons` target builds it)")
        return list_cases(binary, lesson)

    def test_every_entry_names_a_case(self):
        for n, folder in lessons_with_plans():
            if not os.path.isfile(rules_path(folder)):
                continue  # RuleFiles fails for it
            with self.subTest(lesson=folder):
                names = self.cases_of(n)
                self.assertTrue(names, f"--list-cases printed no case for lesson {n}")
                missing = []
                for rule in load_rules(folder).get("rules", []):
                    for entry in rule.get("cases", []):
                        if not entry_matches(entry, names):
                            missing.append(f"{rule.get('id')}: {entry}")
                self.assertFalse(missing, f"grader/lessons/{folder}/contract_rules.json names cases the plan does not "
                                          "have (" + "; ".join(missing) + ")")

    def test_both_front_ends_list_the_same_cases(self):
        gpu = os.path.join(BUILD, "bin", "wb-grader")
        emu = os.path.join(BUILD, "bin", "wb-grader-emu")
        if not (os.access(gpu, os.X_OK) and os.access(emu, os.X_OK)):
            self.skipTest(f"wb-grader and wb-grader-emu are not both built in {BUILD}")
        for n, folder in lessons_with_plans():
            if n == 1 or not os.path.isfile(reference_library(n)):
                continue
            with self.subTest(lesson=folder):
                self.assertEqual(list_cases(gpu, n), list_cases(emu, n),
                                 "wb-grader and wb-grader-emu list different cases for the same plan")


class EntryMatching(unittest.TestCase):
    """How an entry stands for cases (no build needed)."""

    def test_exact_and_prefix(self):
        names = ["one_row_f32", "one_row_f16", "one_row_partial_vector_f32", "rows_zero"]
        self.assertEqual(entry_matches("rows_zero", names), ["rows_zero"])
        self.assertEqual(entry_matches("one_row_*", names), names[:3])
        self.assertEqual(entry_matches("one_row", names), [])
        self.assertEqual(entry_matches("cols_*", names), [])


if __name__ == "__main__":
    unittest.main()
