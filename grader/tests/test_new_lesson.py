"""scripts/new-lesson in a copy of the tree: the new lesson is only its folders, and it builds and
grades on the CPU emulator as it is (its solution passes, its stub fails, its known-bad kernels are
rejected for their reasons), with no edit anywhere else."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEW = "12-copy-check"
FOLDERS = ("lessons", "exercises", "solutions", "grader/lessons")


def run(cmd, cwd, env=None, timeout=1800):
    return subprocess.run(cmd, cwd=cwd, env=env, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


def copy_tree(dst):
    """The repository's files (tracked, and untracked but not ignored) in a fresh git repository."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT).stdout
    for rel in filter(None, listed.split("\0")):
        src = os.path.join(ROOT, rel)
        if not os.path.isfile(src):
            continue  # deleted in the working tree
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, rel))
    git = ["git", "-c", "user.name=check", "-c", "user.email=check@localhost"]
    for cmd in (git + ["init", "-q"], git + ["add", "-A"], git + ["commit", "-q", "-m", "copy"]):
        result = run(cmd, dst)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {result.stdout}")


class NewLessonTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="new-lesson-")
        cls.tree = os.path.join(cls.tmp, "tree")
        copy_tree(cls.tree)
        cls.result = run([sys.executable, "scripts/new-lesson", "12", "copy-check", "--from", "2"], cls.tree)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_copy_is_only_the_new_lessons_folders(self):
        self.assertEqual(self.result.returncode, 0, self.result.stdout)
        status = run(["git", "status", "--porcelain", "--untracked-files=all"], self.tree).stdout.splitlines()
        self.assertTrue(status, "new-lesson wrote nothing")
        allowed = tuple(f"{folder}/{NEW}/" for folder in FOLDERS)
        outside = [line for line in status if not line[3:].startswith(allowed)]
        self.assertEqual(outside, [], "new-lesson changed files outside the new lesson's folders")
        for folder in FOLDERS:
            self.assertTrue(os.path.isdir(os.path.join(self.tree, folder, NEW)), folder)

    def test_the_copy_is_renamed(self):
        with open(os.path.join(self.tree, "lessons", NEW, "lesson.json"), encoding="utf-8") as f:
            manifest = f.read()
        self.assertIn('"number": 12', manifest)
        self.assertIn(f'"slug": "{NEW}"', manifest)
        with open(os.path.join(self.tree, "grader", "lessons", NEW, "plan.cpp"), encoding="utf-8") as f:
            self.assertIn("WORKBOOK_REGISTER_PLAN(12,", f.read())
        solution = os.listdir(os.path.join(self.tree, "solutions", NEW))[0]
        with open(os.path.join(self.tree, "solutions", NEW, solution), encoding="utf-8") as f:
            text = f.read()
        self.assertIn("lesson12", text)
        self.assertNotIn("lesson2 ", text.replace("lesson2:", "lesson2 "))

    def test_the_book_has_a_page_for_the_copy(self):
        """The book's entry lives in the manifest: the page generator needs no edit for a new lesson."""
        self.assertEqual(self.result.returncode, 0, self.result.stdout)
        out = os.path.join(self.tmp, "pages")
        pages = run([sys.executable, "docs/build_pages.py", "--root", self.tree, "--out", out], self.tree)
        self.assertEqual(pages.returncode, 0, pages.stdout)
        self.assertTrue(os.path.isfile(os.path.join(out, "pages", "lesson12.md")), pages.stdout)

    def test_refusals_name_the_problem(self):
        taken = run([sys.executable, "scripts/new-lesson", "3", "again", "--from", "2"], self.tree)
        self.assertEqual(taken.returncode, 64)
        self.assertIn("lesson 3 exists already", taken.stdout)
        header = run([sys.executable, "scripts/new-lesson", "13", "prod", "--from", "9"], self.tree)
        self.assertEqual(header.returncode, 64)
        self.assertIn("shared header", header.stdout)
        slug = run([sys.executable, "scripts/new-lesson", "13", "Bad_Slug", "--from", "2"], self.tree)
        self.assertEqual(slug.returncode, 64)
        self.assertIn("is not a slug", slug.stdout)

    def test_the_copy_builds_and_grades_on_the_emulator(self):
        self.assertEqual(self.result.returncode, 0, self.result.stdout)
        build = os.path.join(self.tmp, "build")
        configure = run(["cmake", "-S", self.tree, "-B", build, "-DCMAKE_BUILD_TYPE=Release"], self.tree)
        self.assertEqual(configure.returncode, 0, configure.stdout[-3000:])
        with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
            if "Boost_CONTEXT_LIBRARY" not in f.read() and not os.path.exists(os.path.join(build, "emulator_config.json")):
                self.skipTest("Boost.Context is not installed: the CPU emulator is not built")
        env = dict(os.environ, WORKBOOK_BUILD_DIR=build, WORKBOOK_NO_GPU="1")
        made = run(["cmake", "--build", build, "--target", "wb-grader-emu", "-j", str(os.cpu_count() or 2)], self.tree)
        self.assertEqual(made.returncode, 0, made.stdout[-3000:])
        check = run([sys.executable, "scripts/emulator-check", "--lessons", "12", "--quick", "--out",
                     os.path.join(self.tmp, "check")], self.tree, env)
        self.assertEqual(check.returncode, 0, check.stdout[-4000:])
        self.assertIn("lesson12", check.stdout)
        for label in ("solution", "stub"):
            self.assertRegex(check.stdout, rf"lesson12\s+{label}\b")


if __name__ == "__main__":
    unittest.main()
