#!/usr/bin/env python3
"""CTest `docs_site`: build the docs target, then read the generated HTML as a reader would.

Checks, each failure named with the page it concerns:
  * a page exists for every lessons/NN-*/README.md (and its hints), linked from the main page,
    with previous / next links to its neighbours;
  * every \\snippet resolved to the real code of its tagged region (the region's code lines are
    in the page), and no page carries Doxygen's "not found" text or an empty code fragment;
  * every formula was produced: MathJax markup where the page source had formulas, no raw
    \\f$ left, the MathJax configuration and script in the page, and html/mathjax/MathJax.js
    present on disk (the site works offline);
  * every diagram was produced: each graphviz file a page draws has its image generated (a
    well-formed SVG, or a PNG) and referenced by that page;
  * the theme is in place, and each lesson page shows a measured-bandwidth table or says
    "Not measured yet".

Python 3 standard library only. Exit status: 0 pass, 1 fail, 77 skipped (no doxygen).
"""
import argparse
import glob
import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

SKIP = 77


class Page:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        with open(path, encoding="utf-8") as f:
            self.raw = f.read()
        m = re.search(r'<div class="contents">(.*)</div><!-- contents -->', self.raw, re.S)
        self.contents = m.group(1) if m else self.raw

    def text(self, part=None):
        """Visible text: tags dropped, entities decoded, whitespace runs collapsed."""
        src = self.contents if part is None else part
        src = re.sub(r"<script.*?</script>", " ", src, flags=re.S)
        src = re.sub(r"<[^>]+>", "", src)
        return re.sub(r"\s+", " ", html.unescape(src))

    def fragments(self):
        """The text of every code fragment (<div class="fragment">), one string per fragment."""
        out = []
        for m in re.finditer(r'<div class="fragment">(.*?)</div><!-- fragment -->', self.contents, re.S):
            lines = re.findall(r'<div class="line">(.*?)</div>', m.group(1), re.S)
            out.append("\n".join(html.unescape(re.sub(r"<[^>]+>", "", l)) for l in lines))
        return out


def norm(s):
    return re.sub(r"\s+", " ", s).strip()


class Checker:
    def __init__(self, html_dir):
        self.html_dir = html_dir
        self.failures = []
        self.passes = 0

    def check(self, ok, what):
        if ok:
            self.passes += 1
        else:
            self.failures.append(what)
        return ok

    def page(self, name):
        path = os.path.join(self.html_dir, name)
        if not self.check(os.path.isfile(path), f"{name}: page was not generated"):
            return None
        return Page(path)

    # ------------------------------------------------------------------ the checks

    def snippets(self, page, lesson):
        """Each \\snippet became a fragment whose lines are exactly its region's lines."""
        frags = page.fragments()
        self.check(all(f.strip() for f in frags), f"{page.name}: an empty code fragment")
        shown = [[norm(l) for l in f.splitlines() if norm(l)] for f in frags]
        for s in lesson["snippets"]:
            region = [norm(l) for l in s["lines"] if norm(l)]
            self.check(region in shown,
                       f"{page.name}: \\snippet {s['file']} [{s['tag']}] did not produce exactly the region's code")

    def no_doxygen_errors(self, page):
        """No Doxygen command left unprocessed in the prose, and no 'not found' notice."""
        prose = re.sub(r'<div class="fragment">.*?</div><!-- fragment -->', " ", page.contents, flags=re.S)
        prose = re.sub(r"<code>.*?</code>", " ", prose, flags=re.S)
        text = page.text(prose)
        for bad in ("\\snippet", "\\dotfile", "\\ref ", "\\subpage", "\\f$", "\\f[", "\\f]", "@ref "):
            self.check(bad not in text, f"{page.name}: the page shows {bad!r} (a Doxygen command left unprocessed)")
        self.check("**" not in text, f"{page.name}: '**' shown as text (bold markup Doxygen did not render)")
        m = re.search(r"(?i)\b(example|snippet|file|fragment|image|dot ?file|block)\b[^.<]{0,80}\b(not found|"
                      r"found it 0 times)", text)
        self.check(m is None, f"{page.name}: the page says {m.group(0)!r}" if m else "")

    def formulas(self, page, expected):
        if expected:
            inline = page.contents.count("\\(")
            display = page.contents.count("\\[")
            self.check(inline + display >= expected,
                       f"{page.name}: {expected} formula(s) in the source, {inline + display} MathJax formula(s) in the page")
        self.mathjax_loaded(page)

    def mathjax_loaded(self, page):
        m = re.search(r'<script[^>]+src="([^"]*MathJax\.js)[^"]*"', page.raw)
        if not self.check(m is not None, f"{page.name}: no MathJax script tag"):
            return
        src = m.group(1)
        self.check(not re.match(r"^[a-z]+://", src), f"{page.name}: MathJax is loaded from the network ({src})")
        script = os.path.normpath(os.path.join(self.html_dir, src))
        self.check(os.path.isfile(script), f"{page.name}: MathJax script {src} does not exist under html/")
        self.check("MathJax.Hub.Config" in page.raw or "window.MathJax" in page.raw,
                   f"{page.name}: no MathJax configuration")

    def diagrams(self, page, dotfiles):
        for dot in dotfiles:
            base = "dot_" + os.path.splitext(dot)[0]
            refs = re.findall(r'(?:src|data)="(' + re.escape(base) + r'\.(?:svg|png))"', page.raw)
            if not self.check(refs, f"{page.name}: diagram {dot} is not referenced (no {base}.svg/.png)"):
                continue
            img = os.path.join(self.html_dir, refs[0])
            if not self.check(os.path.isfile(img) and os.path.getsize(img) > 0,
                              f"{page.name}: diagram image {refs[0]} was not produced"):
                continue
            if img.endswith(".svg"):
                try:
                    root = ET.parse(img).getroot()
                    ok = root.tag.endswith("svg") and len(list(root.iter())) > 3
                except ET.ParseError:
                    ok = False
                self.check(ok, f"{page.name}: {refs[0]} is not a well-formed SVG drawing")
            else:
                with open(img, "rb") as f:
                    self.check(f.read(8) == b"\x89PNG\r\n\x1a\n", f"{page.name}: {refs[0]} is not a PNG")

    def theme(self, page):
        self.check("doxygen-awesome.css" in page.raw, f"{page.name}: the doxygen-awesome theme is not linked")
        self.check(os.path.isfile(os.path.join(self.html_dir, "doxygen-awesome.css")),
                   "doxygen-awesome.css was not copied into html/")


def lessons_on_disk(root):
    found = []
    for readme in sorted(glob.glob(os.path.join(root, "lessons", "*", "README.md"))):
        folder = os.path.basename(os.path.dirname(readme))
        m = re.match(r"^(\d\d)-", folder)
        if m:
            found.append((int(m.group(1)), folder))
    return found


def build_docs(build_dir, config):
    cmd = ["cmake", "--build", build_dir, "--target", "docs"]
    if config:
        cmd += ["--config", config]
    print("docs_site: " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout)
        print(f"docs_site: FAIL: the docs target failed (exit {proc.returncode}); Doxygen warnings fail it, "
              "see above")
        return False
    return True


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--build-dir", required=True, help="the CMake build directory holding the docs target")
    ap.add_argument("--out", required=True, help="<build>/docs")
    ap.add_argument("--doxygen", default="", help="the doxygen CMake found (empty or *-NOTFOUND: skip)")
    ap.add_argument("--config", default="")
    ap.add_argument("--no-build", action="store_true", help="check an already built site")
    args = ap.parse_args(argv)

    if not args.doxygen or args.doxygen.endswith("NOTFOUND"):
        print("docs_site: SKIP: doxygen was not found when CMake configured this build "
              "(Debian: apt-get install doxygen graphviz doxygen-awesome-css libjs-mathjax)")
        return SKIP
    if not args.no_build and not build_docs(args.build_dir, args.config):
        return 1

    html_dir = os.path.join(args.out, "html")
    manifest_path = os.path.join(args.out, "manifest.json")
    if not os.path.isfile(manifest_path):
        print(f"docs_site: FAIL: {manifest_path} is missing (build_pages.py did not run)")
        return 1
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    by_number = {l["n"]: l for l in manifest["lessons"]}
    c = Checker(html_dir)

    index = c.page("index.html")
    on_disk = lessons_on_disk(args.root)
    c.check(on_disk, "no lessons/NN-*/README.md found: nothing to check")
    numbers = [n for n, _ in on_disk]
    if index:
        c.theme(index)
        c.no_doxygen_errors(index)
        c.formulas(index, manifest["main"]["formulas"])
        c.check(manifest["main"]["formulas"] > 0, "index.html: the main page has no formula")
        c.diagrams(index, manifest["main"]["dotfiles"])

    for i, (n, folder) in enumerate(on_disk):
        lesson = by_number.get(n)
        if not c.check(lesson is not None, f"lessons/{folder}/README.md has no page in the manifest"):
            continue
        page = c.page(f"lesson{n}.html")
        if page is None:
            continue
        if index:
            c.check(f'href="lesson{n}.html"' in index.raw, f"index.html does not link to lesson{n}.html")
        c.check(f"Lesson {n}" in page.text(page.raw), f"{page.name}: title 'Lesson {n}' missing")
        if i > 0:
            c.check(f'href="lesson{numbers[i - 1]}.html"' in page.contents,
                    f"{page.name}: no link to the previous lesson")
        if i + 1 < len(numbers):
            c.check(f'href="lesson{numbers[i + 1]}.html"' in page.contents,
                    f"{page.name}: no link to the next lesson")
        c.no_doxygen_errors(page)
        c.snippets(page, lesson)
        c.check(len(lesson["snippets"]) > 0, f"{page.name}: shows no reference code")
        c.formulas(page, lesson["formulas"])
        c.diagrams(page, lesson["dotfiles"])
        text = page.text()
        if lesson["measured"]:
            c.check("reference GB/s" in text and "% of copy" in text,
                    f"{page.name}: results exist for lesson {n} but no bandwidth table is shown")
        else:
            c.check("Not measured yet" in text, f"{page.name}: neither a bandwidth table nor 'Not measured yet'")
        if os.path.isfile(os.path.join(args.root, "lessons", folder, "hints.md")):
            hints = c.page(f"lesson{n}_hints.html")
            if hints:
                c.check("Hint 1" in hints.text(), f"{hints.name}: no 'Hint 1'")
                c.check(f'href="lesson{n}_hints.html"' in page.contents,
                        f"{page.name}: does not link to its hints page")
                c.no_doxygen_errors(hints)
                c.formulas(hints, lesson.get("hints_formulas", 0))

    results = c.page("results.html")
    if results:
        c.no_doxygen_errors(results)

    if c.failures:
        print(f"docs_site: FAIL: {len(c.failures)} problem(s), {c.passes} check(s) passed:")
        for f in c.failures:
            print("  - " + f)
        return 1
    print(f"docs_site: PASS: {c.passes} checks over {len(on_disk)} lesson page(s); open {html_dir}/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
