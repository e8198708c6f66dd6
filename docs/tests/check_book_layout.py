#!/usr/bin/env python3
"""CTest `docs_layout`: build the docs target, then check the book as a reader's browser shows it.

Without a browser (always):
  * the lesson map is an SVG inlined in the main page, as wide as the text column (width 100%, a
    viewBox, no fixed size), with a node for every lesson, each inside the viewBox and linked to its
    page; no fixed-size frame holds it;
  * the site is self-contained: html/mathjax is a folder of files, not a link, nothing under html/ is a
    symbolic link, and every file the main page loads is in html/.
With a headless browser (chromium-headless-shell or chromium, from Debian's packages), at 1024, 1280 and
1920 pixels wide:
  * every lesson's node of the map lies inside the window and inside the text column, large enough to
    read; every sidebar title is shown whole (wrapped, never cut at the sidebar's edge); MathJax (the
    copy in html/) rendered the main page's formulas;
  * a screenshot of each width is kept in <build>/docs/layout/ to look at.

Python 3 standard library only. Exit status: 0 pass, 1 fail, 77 skipped (no doxygen).
"""
import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SKIP = 77
WIDTHS = (1024, 1280, 1920)
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")

# Runs in the page once it has settled (the sidebar is built by script, MathJax typesets late), and
# writes what it measured into the page, where --dump-dom shows it.
PROBE = r"""
<script>
window.addEventListener("load", function () {
  setTimeout(function () {
    var out = {width: document.documentElement.clientWidth, nodes: {}, cut_titles: [], titles: 0,
               math: 0, math_errors: 0, svg: null};
    var content = document.getElementById("doc-content") || document.body;
    var box = content.getBoundingClientRect();
    var svg = document.querySelector("svg.lesson-map");
    if (svg) { var s = svg.getBoundingClientRect(); out.svg = {left: s.left, right: s.right, width: s.width}; }
    document.querySelectorAll("svg.lesson-map g.node").forEach(function (g) {
      var r = g.getBoundingClientRect();
      out.nodes[g.id] = {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width,
                         height: r.height, box_left: box.left, box_right: box.right};
    });
    var nav = document.getElementById("nav-tree");
    if (nav) {
      var edge = nav.getBoundingClientRect().right;
      nav.querySelectorAll(".item .label").forEach(function (label) {
        out.titles += 1;
        var r = label.getBoundingClientRect();
        var a = label.querySelector("a") || label;
        var t = a.getBoundingClientRect();
        if (label.scrollWidth > label.clientWidth + 1 || t.right > edge + 1 || r.right > edge + 1)
          out.cut_titles.push(label.textContent);
      });
    }
    out.math = document.querySelectorAll(".MathJax_SVG, .MathJax_SVG_Display, mjx-container").length;
    var text = document.body.innerText || "";
    out.math_errors = (text.match(/Math Processing Error|failed to load/gi) || []).length;
    var pre = document.createElement("pre");
    pre.id = "book-layout-probe";
    pre.textContent = JSON.stringify(out);
    document.body.appendChild(pre);
  }, 4000);
});
</script>
"""


class Checks:
    def __init__(self):
        self.failures, self.passes, self.notes = [], 0, []

    def check(self, ok, what):
        if ok:
            self.passes += 1
        else:
            self.failures.append(what)
        return ok


def path_points(d):
    """The coordinate pairs of an SVG path's data or a polygon's points (absolute commands, as graphviz writes)."""
    numbers = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", d)]
    return list(zip(numbers[0::2], numbers[1::2]))


def svg_geometry(c, page_text, lessons):
    """The map inline in the page: scaled to the column, a node per lesson, each inside the viewBox."""
    m = re.search(r"<svg\b[^>]*class=\"lesson-map\"[^>]*>.*?</svg>", page_text, re.S)
    if not c.check(m is not None, "index.html: no inline <svg class=\"lesson-map\"> (the lesson map)"):
        return
    c.check(not re.search(r"<iframe[^>]*lesson-map", page_text),
            "index.html: the lesson map is still in a fixed-size <iframe>")
    try:
        root = ET.fromstring(m.group(0))
    except ET.ParseError as e:
        c.check(False, f"index.html: the lesson map is not well-formed SVG ({e})")
        return
    c.check(root.get("width") == "100%", f"index.html: the map's width is {root.get('width')!r}, not 100%")
    c.check(root.get("height") is None, f"index.html: the map has a fixed height {root.get('height')!r}")
    view = root.get("viewBox")
    if not c.check(view is not None, "index.html: the map has no viewBox, so it cannot scale"):
        return
    vx, vy, vw, vh = (float(v) for v in view.split())
    ns = {"svg": "http://www.w3.org/2000/svg", "xlink": "http://www.w3.org/1999/xlink"}
    graph = root.find("svg:g", ns)
    tx, ty = 0.0, 0.0
    t = re.search(r"translate\(([-\d.]+)[ ,]+([-\d.]+)\)", graph.get("transform", "") if graph is not None else "")
    if t:
        tx, ty = float(t.group(1)), float(t.group(2))
    nodes = {g.get("id"): g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "node"}
    for n in lessons:
        node = nodes.get(f"lesson-map-l{n}")
        if not c.check(node is not None, f"index.html: the map has no node for lesson {n}"):
            continue
        points = []
        for shape in node.iter():
            if shape.tag.endswith("path"):
                points += path_points(shape.get("d", ""))
            elif shape.tag.endswith("polygon"):
                points += path_points(shape.get("points", ""))
        c.check(points, f"index.html: lesson {n}'s node has no outline")
        outside = [(x, y) for x, y in points
                   if not (vx - 0.5 <= x + tx <= vx + vw + 0.5 and vy - 0.5 <= y + ty <= vy + vh + 0.5)]
        c.check(not outside, f"index.html: lesson {n}'s node reaches outside the map's viewBox at {outside[:2]}")
        links = [a.get("{http://www.w3.org/1999/xlink}href") or a.get("href") for a in node.iter()
                 if a.tag.endswith("}a")]
        c.check(f"lesson{n}.html" in links, f"index.html: lesson {n}'s node does not link to lesson{n}.html")


def self_contained(c, html_dir, page_text):
    mathjax = os.path.join(html_dir, "mathjax")
    c.check(not os.path.islink(mathjax), f"{mathjax} is a symbolic link (to {os.path.realpath(mathjax)}), "
                                         "not a copy: the site loses its formulas away from this machine")
    c.check(os.path.isfile(os.path.join(mathjax, "MathJax.js")) and not os.path.islink(os.path.join(mathjax, "MathJax.js")),
            "html/mathjax/MathJax.js is missing or a link")
    links = []
    for where, dirs, names in os.walk(html_dir):
        links += [os.path.join(where, n) for n in dirs + names if os.path.islink(os.path.join(where, n))]
    c.check(not links, f"symbolic links under html/: {links[:3]}")
    for ref in re.findall(r'(?:src|href)="([^"#?]+)[^"]*"', page_text):
        if re.match(r"^[a-z]+:", ref) or ref.startswith(("/", "javascript")):
            continue
        c.check(os.path.exists(os.path.join(html_dir, ref)), f"index.html loads {ref}, which is not in html/")


def find_browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_run(browser, args, timeout=120):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--allow-file-access-from-files", "--virtual-time-budget=15000", *args]
    home = tempfile.mkdtemp(prefix="book-layout-browser-")
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                              env=dict(os.environ, HOME=home), cwd=home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def in_browser(c, browser, html_dir, shots_dir, lessons):
    with open(os.path.join(html_dir, "index.html"), encoding="utf-8") as f:
        page = f.read()
    probe = os.path.join(html_dir, "_layout_probe.html")  # beside index.html, so its relative links hold
    with open(probe, "w", encoding="utf-8") as f:
        f.write(page.replace("</body>", PROBE + "</body>", 1))
    os.makedirs(shots_dir, exist_ok=True)
    try:
        for width in WIDTHS:
            url = "file://" + probe
            shot = os.path.join(shots_dir, f"index-{width}.png")
            run = browser_run(browser, [f"--window-size={width},2600", f"--screenshot={shot}",
                                        "file://" + os.path.join(html_dir, "index.html")])
            c.check(os.path.isfile(shot), f"{width} px: no screenshot ({run.stderr.strip()[-300:]})")
            run = browser_run(browser, [f"--window-size={width},1200", "--dump-dom", url])
            m = re.search(r'<pre id="book-layout-probe">(.*?)</pre>', run.stdout, re.S)
            if not c.check(m is not None, f"{width} px: the page did not report its layout "
                                          f"(browser exit {run.returncode}: {run.stderr.strip()[-300:]})"):
                continue
            data = json.loads(html.unescape(m.group(1)))
            view = data["width"]
            for n in lessons:
                r = data["nodes"].get(f"lesson-map-l{n}")
                if not c.check(r is not None, f"{width} px: lesson {n}'s map node is not on the page"):
                    continue
                inside = r["left"] >= -0.5 and r["right"] <= view + 0.5
                column = r["left"] >= r["box_left"] - 0.5 and r["right"] <= r["box_right"] + 0.5
                c.check(inside, f"{width} px: lesson {n}'s map node spans x {r['left']:.0f}..{r['right']:.0f}, "
                                f"outside the {view} px window")
                c.check(column, f"{width} px: lesson {n}'s map node spans x {r['left']:.0f}..{r['right']:.0f}, "
                                f"outside the text column {r['box_left']:.0f}..{r['box_right']:.0f}")
                c.check(r["width"] >= 60 and r["height"] >= 20,
                        f"{width} px: lesson {n}'s map node is {r['width']:.0f}x{r['height']:.0f} px, too small to read")
            c.check(data["titles"] > len(lessons), f"{width} px: the sidebar shows {data['titles']} titles")
            c.check(not data["cut_titles"], f"{width} px: sidebar titles cut at the edge: {data['cut_titles'][:3]}")
            c.check(data["math"] > 0, f"{width} px: MathJax rendered no formula on the main page")
            c.check(data["math_errors"] == 0, f"{width} px: MathJax reported {data['math_errors']} error(s)")
            c.notes.append(f"{width} px: map {data['svg']['width']:.0f} px wide, {len(data['nodes'])} nodes inside, "
                           f"{data['titles']} sidebar titles whole, {data['math']} formulas; screenshot {shot}"
                           if data.get("svg") else f"{width} px: no map")
    finally:
        os.remove(probe)


def build_docs(build_dir):
    cmd = ["cmake", "--build", build_dir, "--target", "docs"]
    print("docs_layout: " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout)
        print(f"docs_layout: FAIL: the docs target failed (exit {proc.returncode})")
        return False
    return True


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", required=True, help="the CMake build directory holding the docs target")
    ap.add_argument("--out", required=True, help="<build>/docs")
    ap.add_argument("--doxygen", default="", help="the doxygen CMake found (empty or *-NOTFOUND: skip)")
    ap.add_argument("--no-build", action="store_true", help="check an already built site")
    ap.add_argument("--browser", default=None, help="a headless Chromium (default: found on PATH)")
    args = ap.parse_args(argv)
    if not args.doxygen or args.doxygen.endswith("NOTFOUND"):
        print("docs_layout: SKIP: doxygen was not found when CMake configured this build")
        return SKIP
    if not args.no_build and not build_docs(args.build_dir):
        return 1
    html_dir = os.path.join(args.out, "html")
    with open(os.path.join(args.out, "manifest.json"), encoding="utf-8") as f:
        lessons = [l["n"] for l in json.load(f)["lessons"]]
    with open(os.path.join(html_dir, "index.html"), encoding="utf-8") as f:
        page = f.read()
    c = Checks()
    svg_geometry(c, page, lessons)
    self_contained(c, html_dir, page)
    browser = args.browser or find_browser()
    if browser:
        in_browser(c, browser, html_dir, os.path.join(args.out, "layout"), lessons)
    else:
        c.notes.append("no headless browser here (Debian: chromium-headless-shell): checked the map's SVG "
                       "geometry and the files only, not the rendered page")
    for note in c.notes:
        print("docs_layout: " + note)
    if c.failures:
        print(f"docs_layout: FAIL: {len(c.failures)} problem(s), {c.passes} check(s) passed:")
        for f in c.failures:
            print("  - " + f)
        return 1
    print(f"docs_layout: PASS: {c.passes} checks over {len(lessons)} lessons")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
