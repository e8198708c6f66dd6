#!/usr/bin/env python3
"""CTest `docs_generator`: the page generator and the snippet filter, without Doxygen.

Runs docs/build_pages.py on a small made-up workbook in a temporary directory (and once on
the real repository), and checks what it writes and what it refuses: a snippet tag that is
not in the solution, README headings out of contract, a lesson without a solution, a bad
results file. Python 3 standard library only (unittest).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.dirname(HERE)
ROOT = os.path.dirname(DOCS)
FIXTURE_RESULTS = os.path.join(HERE, "fixtures", "results")
sys.dont_write_bytecode = True  # keep the source tree free of __pycache__
sys.path.insert(0, DOCS)

import build_pages  # noqa: E402
import snippet_filter  # noqa: E402

HEADINGS = ["What you build", "The idea", "The diagram", "Bytes and roofline", "What the grader checks",
            "Measured reference bandwidth", "Pitfalls that fail interviews", "Interview questions",
            "Where to look next"]


def readme(n, title, extra_idea=""):
    body = {h: f"Text of {h.lower()}." for h in HEADINGS}
    body["The idea"] += "\n\n" + extra_idea
    body["The diagram"] = "```\n a --> b\n```"
    body["Measured reference bandwidth"] = "See docs/results/ — filled in from the GPU run."
    return f"# Lesson {n} — {title}\n\n" + "\n\n".join(f"## {h}\n\n{body[h]}" for h in HEADINGS) + "\n"


SOLUTION_1 = """/** @file demo.cpp
 *  @brief A demo. */
namespace workbook::lesson1 {
/// [a]
int alpha() { return 1; }
/// [a]
/// [b]
int beta() { return 2; }
/// [b]
}
"""

SOLUTION_2 = """namespace workbook::lesson2 {
void k() {
    /// [k]
    int kappa = 3;
    /// [k]
}
}
"""


class MiniWorkbook:
    """A two-lesson workbook in a temporary directory."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="workbook-docs-")
        self.out = os.path.join(self.root, "build", "docs")
        idea = ("**`eps` first.** Bold.\n\n```math\ny = x^2\n```\n\nInline $`z`$ too. Next: [lesson 2](../02-demo/README.md), "
                "[hints](hints.md), [code](../../solutions/01-demo/demo.cpp), [web](https://example.com).")
        self.write("lessons/01-demo/README.md", readme(1, "Demo one", idea))
        self.write("lessons/01-demo/hints.md", "# Lesson 1 — hints\n\n## Hint 1\n\nLook.\n\n## Hint 2\n\nLook harder.\n")
        self.write("lessons/02-demo/README.md", readme(2, "Demo two"))
        self.write("solutions/01-demo/demo.cpp", SOLUTION_1)
        self.write("solutions/02-demo/demo2.cu", SOLUTION_2)
        self.write("docs/diagrams/one.dot", "digraph g { a -> b; }\n")
        self.write("docs/mainpage.md", "# Demo {#mainpage}\n\n\\f$a\\f$\n\n@LESSON_MAP@\n\n@LESSON_LIST@\n\n@RESULTS_PAGE@\n")
        self.config = {
            "required_headings": HEADINGS,
            "lessons": {
                "1": {"solution": "demo.cpp", "snippets": [{"tag": "b", "caption": "Beta"}, {"tag": "a"}],
                      "diagrams": [{"file": "one.dot", "caption": "One"}], "after": []},
                "2": {"solution": "demo2.cu", "snippets": "all", "diagrams": [], "after": [1]},
            },
        }
        self.save_config()

    def write(self, rel, text):
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def save_config(self):
        self.write("docs/book.json", json.dumps(self.config))

    def run(self, results=FIXTURE_RESULTS):
        cmd = [sys.executable, os.path.join(DOCS, "build_pages.py"), "--root", self.root, "--out", self.out,
               "--results", results]
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def page(self, name):
        with open(os.path.join(self.out, "pages", name), encoding="utf-8") as f:
            return f.read()

    def cleanup(self):
        shutil.rmtree(self.root, ignore_errors=True)


class GeneratorTest(unittest.TestCase):
    def setUp(self):
        self.wb = MiniWorkbook()

    def tearDown(self):
        self.wb.cleanup()

    def build_ok(self, **kw):
        proc = self.wb.run(**kw)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return proc

    def test_lesson_page_has_label_nav_snippets_diagrams_math(self):
        self.build_ok()
        page = self.wb.page("lesson1.md")
        self.assertIn("# Lesson 1 — Demo one {#lesson1}", page)
        self.assertIn('\\ref lesson2 "Lesson 2: Demo two →"', page)
        self.assertIn('\\ref index "Contents"', page)
        self.assertIn("[TOC]", page)
        # snippets in the mapping's order, with captions
        self.assertLess(page.index("\\snippet 01-demo/demo.cpp b"), page.index("\\snippet 01-demo/demo.cpp a"))
        self.assertIn("**Beta**", page)
        self.assertIn('\\ref demo.cpp "solutions/01-demo/demo.cpp"', page)
        self.assertIn('\\dotfile one.dot "One"', page)
        self.assertIn("\\f[\ny = x^2\n\\f]", page)
        self.assertIn("\\f$z\\f$", page)
        self.assertIn("<b>`eps` first.</b> Bold.", page)
        # links: lesson README -> page ref, hints -> hints page, source file -> path, web untouched
        self.assertIn('\\ref lesson2 "lesson 2"', page)
        self.assertIn('\\ref lesson1_hints "hints"', page)
        self.assertIn("code (`solutions/01-demo/demo.cpp`)", page)
        self.assertIn("[web](https://example.com)", page)
        self.assertIn('\\subpage lesson1_hints "Hints for lesson 1"', page)
        # headings keep their order and get stable labels
        positions = [page.index(f"## {h} {{#") for h in HEADINGS]
        self.assertEqual(positions, sorted(positions))
        self.assertIn("## The reference code {#lesson1_the_reference_code}", page)
        self.assertNotIn("filled in from the GPU run", page)

    def test_all_snippets_mode_and_undocumented_file(self):
        self.build_ok()
        page = self.wb.page("lesson2.md")
        self.assertIn("\\snippet 02-demo/demo2.cu k", page)
        self.assertIn("`solutions/02-demo/demo2.cu`", page)  # no @file: no \ref to a file page
        self.assertIn('\\ref lesson1 "← Lesson 1: Demo one"', page)

    def test_results_table_from_fixture(self):
        self.build_ok()
        page = self.wb.page("lesson2.md")
        self.assertIn("Fixture GPU 80GB", page)
        self.assertIn("| 32768x4096 | f32 | 2400 | 80.0 % |", page)
        self.assertIn("commit `0123456789ab`", page)
        self.assertIn("**3000 GB/s**", page)
        self.assertIn("Not measured yet", self.wb.page("lesson1.md"))
        results = self.wb.page("results.md")
        self.assertIn("| 7 | chain 128x4096 x 32 layers | bf16 | 1500 | 50.0 % | – |", results)
        # The same-size copy column appears where a row has it; older rows show a dash.
        self.assertIn("| 3 | 32768x4096 | f32 | 2712 | 90.4 % | 95.0 % |", results)
        self.assertIn("| 3 | 4096x65536 | f32 | 2550 | 85.0 % | – |", results)
        self.assertNotIn("same-size copy", page)  # lesson 2's rows predate it: no empty column
        # The targets the results file checked are shown on the all-lessons page only.
        self.assertIn("| 1 of 2 | 4 32768x512 f16 82.4% |", results)
        self.assertNotIn("short of it", page)

    def test_no_results_means_not_measured(self):
        empty = os.path.join(self.wb.root, "no-results")
        os.makedirs(empty)
        self.build_ok(results=empty)
        for name in ("lesson1.md", "lesson2.md", "results.md"):
            self.assertIn("Not measured yet", self.wb.page(name))

    def test_manifest_main_page_map_and_hints(self):
        self.build_ok()
        with open(os.path.join(self.wb.out, "manifest.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        self.assertEqual([l["n"] for l in manifest["lessons"]], [1, 2])
        first = manifest["lessons"][0]
        self.assertEqual([s["tag"] for s in first["snippets"]], ["b", "a"])
        self.assertEqual(first["snippets"][0]["lines"], ["int beta() { return 2; }"])
        self.assertEqual(first["formulas"], 2)
        self.assertEqual(first["dotfiles"], ["one.dot"])
        self.assertFalse(first["measured"])
        self.assertTrue(manifest["lessons"][1]["measured"])
        main = self.wb.page("mainpage.md")
        self.assertIn("1. \\subpage lesson1", main)
        self.assertIn("\\subpage results", main)
        with open(os.path.join(self.wb.out, "dot", "lesson-map.dot"), encoding="utf-8") as f:
            dot = f.read()
        self.assertIn("l1 -> l2;", dot)
        if shutil.which("dot"):
            # The map is inlined as an SVG that scales with the page (no fixed-size frame), its nodes
            # linked to the lesson pages.
            self.assertNotIn("\\dotfile lesson-map.dot", main)
            self.assertIn("\\htmlonly[block]", main)
            svg = re.search(r"<svg\b[^>]*>", main).group(0)
            self.assertIn('width="100%"', svg)
            self.assertIn("viewBox=", svg)
            self.assertNotIn("height=", svg)
            self.assertIn('xlink:href="lesson2.html"', main)
            self.assertEqual(manifest["main"]["lesson_map"]["nodes"], ["lesson-map-l1", "lesson-map-l2"])
            self.assertEqual(manifest["main"]["dotfiles"], [])
        else:  # no graphviz here: Doxygen draws the map
            self.assertIn("\\dotfile lesson-map.dot", main)
            self.assertIn('URL="\\ref lesson2"', dot)
        hints = self.wb.page("lesson1_hints.md")
        self.assertIn("{#lesson1_hints}", hints)
        self.assertIn("## Hint 2", hints)
        dox = self.wb.page("namespaces.dox")
        self.assertIn("\\namespace workbook::lesson2", dox)

    def test_mathjax_is_copied_not_linked(self):
        """The site gets the part of MathJax its pages load, as files: it works copied anywhere."""
        src = os.path.join(self.wb.root, "mathjax-src")
        for rel in ("MathJax.js", "extensions/tex2jax.js", "jax/input/TeX/jax.js", "jax/output/SVG/jax.js",
                    "jax/output/SVG/fonts/TeX/fontdata.js", "jax/output/SVG/fonts/STIX-Web/fontdata.js",
                    "unpacked/MathJax.js"):
            self.wb.write(f"mathjax-src/{rel}", "// " + rel)
        os.symlink(os.path.join(src, "extensions", "tex2jax.js"), os.path.join(src, "extensions", "linked.js"))
        dst = os.path.join(self.wb.out, "html", "mathjax")
        os.makedirs(os.path.dirname(dst))
        os.symlink(src, dst)  # what an older build left: a link into the system copy
        proc = subprocess.run([sys.executable, os.path.join(DOCS, "build_pages.py"), "mathjax", src, dst],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertFalse(os.path.islink(dst))
        for rel in ("MathJax.js", "extensions/tex2jax.js", "jax/output/SVG/fonts/TeX/fontdata.js"):
            self.assertTrue(os.path.isfile(os.path.join(dst, rel)), rel)
        self.assertFalse(os.path.islink(os.path.join(dst, "extensions", "linked.js")))
        self.assertFalse(os.path.exists(os.path.join(dst, "unpacked")))  # only what the pages load
        self.assertFalse(os.path.exists(os.path.join(dst, "jax", "output", "SVG", "fonts", "STIX-Web")))
        proc = subprocess.run([sys.executable, os.path.join(DOCS, "build_pages.py"), "mathjax",
                               os.path.join(self.wb.root, "nowhere"), dst], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("no MathJax.js", proc.stderr)

    def test_missing_tag_fails(self):
        self.wb.config["lessons"]["1"]["snippets"].append({"tag": "gamma"})
        self.wb.save_config()
        proc = self.wb.run()
        self.assertEqual(proc.returncode, 1)
        self.assertIn("[gamma]", proc.stderr)

    def test_marker_three_times_fails(self):
        self.wb.write("solutions/02-demo/demo2.cu", SOLUTION_2 + "/// [k]\n")
        proc = self.wb.run()
        self.assertEqual(proc.returncode, 1)
        self.assertIn("appears 3 times", proc.stderr)

    def test_headings_out_of_contract_fail(self):
        text = readme(2, "Demo two").replace("## Interview questions", "## Questions")
        self.wb.write("lessons/02-demo/README.md", text)
        proc = self.wb.run()
        self.assertEqual(proc.returncode, 1)
        self.assertIn("must be exactly", proc.stderr)

    def test_title_must_match_folder(self):
        self.wb.write("lessons/02-demo/README.md", readme(3, "Wrong number"))
        proc = self.wb.run()
        self.assertEqual(proc.returncode, 1)
        self.assertIn("lesson 3 but the folder is lesson 2", proc.stderr)

    def test_readme_without_solution_fails(self):
        os.remove(os.path.join(self.wb.root, "solutions/02-demo/demo2.cu"))
        proc = self.wb.run()
        self.assertEqual(proc.returncode, 1)
        self.assertIn("no solution file", proc.stderr)

    def test_missing_diagram_fails(self):
        self.wb.config["lessons"]["2"]["diagrams"] = [{"file": "absent.dot", "caption": "x"}]
        self.wb.save_config()
        proc = self.wb.run()
        self.assertEqual(proc.returncode, 1)
        self.assertIn("absent.dot", proc.stderr)

    def test_bad_results_file_fails(self):
        bad = os.path.join(self.wb.root, "bad-results")
        os.makedirs(bad)
        with open(os.path.join(bad, "x.json"), "w") as f:
            json.dump({"gpu": "g", "rows": []}, f)
        proc = self.wb.run(results=bad)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("missing keys", proc.stderr)


class FilterTest(unittest.TestCase):
    def test_markers_become_plain_comments(self):
        src = "/// doc\n  /// [tag-1]\nint a;\n\t///  [tag-1] \r\n/// [not a marker] x\n"
        out = snippet_filter.filter_text(src)
        self.assertEqual(out, "/// doc\n  // [tag-1]\nint a;\n\t//  [tag-1] \r\n/// [not a marker] x\n")
        self.assertEqual(out.count("\n"), src.count("\n"))

    def test_markdown_passes_through(self):
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write("/// [x]\n")
        try:
            proc = subprocess.run([sys.executable, os.path.join(DOCS, "snippet_filter.py"), f.name],
                                  stdout=subprocess.PIPE, text=True)
            self.assertEqual(proc.stdout, "/// [x]\n")
        finally:
            os.remove(f.name)


class RealWorkbookTest(unittest.TestCase):
    """The repository's own lessons meet the contract the docs build enforces."""

    def test_real_lessons_generate(self):
        if not build_pages.find_lessons(ROOT):
            self.skipTest("no lessons yet")
        out = tempfile.mkdtemp(prefix="workbook-docs-real-")
        try:
            proc = subprocess.run([sys.executable, os.path.join(DOCS, "build_pages.py"), "--root", ROOT,
                                   "--out", out, "--results", FIXTURE_RESULTS],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        finally:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=1)
