#!/usr/bin/env python3
"""Turn the workbook's lessons into Doxygen pages (Python 3 standard library only).

The lesson READMEs stay plain Markdown that reads well on GitHub and in a terminal. This
script writes a Doxygen flavoured copy of each one into the build directory and adds what
only the book needs:

  * a page label ``{#lessonN}`` on the title, previous / contents / next links at the top
    and bottom, and a table of contents;
  * the lesson's graphviz diagrams (``\\dotfile``) under its ASCII diagram;
  * a section "The reference code" with ``\\snippet`` blocks cut from the compiled
    solution, by the tags listed in its manifest's book entry (a tag that is not in the file is an
    error, so the pages cannot drift from the code);
  * the measured reference bandwidth table from docs/results/*.json, or "Not measured yet";
  * ```` ```math ```` blocks and ``$`...`$`` spans (GitHub's math syntax) as Doxygen
    formulas, rendered by MathJax;
  * relative links rewritten to page references or repository paths.

It also writes the main page (docs/mainpage.md with its placeholders filled in), a page of
hints per lesson, a page of all measured results, the namespace descriptions, the lesson
map (graphviz, generated from the lessons present, inlined in the main page as an SVG that scales
with the page) and manifest.json, which the site test
(docs/tests/check_site.py) reads to know what the HTML must contain.

Usage:
  build_pages.py --root REPO --out DIR [--config docs/book.json] [--results DIR] [--dot DOT]
  build_pages.py header IN OUT     add the doxygen-awesome scripts to a Doxygen header
  build_pages.py mathjax SRC DST   copy the part of MathJax the pages use into the site
Exit status: 0 done, 1 a lesson, mapping or results file is wrong (the message says which).
"""
import argparse
import glob
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import contract_tables  # noqa: E402  (beside this file)
from book_error import BookError  # noqa: E402
from book_map import lesson_map_block, lesson_map_dot, lesson_map_svg, wrap_label  # noqa: E402,F401
from book_results import (  # noqa: E402,F401
    RESULT_KEYS, ROW_KEYS, load_results, md_cell, results_table, targets_block, torch_block)

PLACEHOLDER_MEASURED = re.compile(r"^\s*See docs/results/.*filled in from the GPU run\.?\s*$")
TITLE = re.compile(r"^# Lesson (\d+) — (.+?)\s*$")
H1 = re.compile(r"^#\s+(.+?)\s*$")
H2 = re.compile(r"^##\s+(.+?)\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)\s*$")
LINK = re.compile(r"(!?)\[([^\]]+)\]\(([^)\s]+)\)")
INLINE_MATH = re.compile(r"\$`([^`]+)`\$")
# Doxygen 1.9.4 leaves **...** unrendered when the bold text starts with a code span.
BOLD_CODE_FIRST = re.compile(r"\*\*(`[^`]+`[^*]*?)\*\*")
MARKER = re.compile(r"^\s*///\s*\[([^\]\n]+)\]\s*$")


# ----------------------------------------------------------------------------- lessons

def find_lessons(root):
    """Lessons present: {N: (folder name, README path)} for every lessons/NN-slug/README.md."""
    found = {}
    for readme in sorted(glob.glob(os.path.join(root, "lessons", "*", "README.md"))):
        folder = os.path.basename(os.path.dirname(readme))
        m = re.match(r"^(\d\d)-[a-z0-9-]+$", folder)
        if not m:
            raise BookError(f"{readme}: lesson folders are named NN-slug (two digits, a dash, a slug)")
        n = int(m.group(1))
        if n in found:
            raise BookError(f"two lesson folders for lesson {n}: {found[n][0]} and {folder}")
        found[n] = (folder, readme)
    return found


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def parse_readme(path, n, required):
    """Split a lesson README into its title and its ## sections, checking the heading contract."""
    lines = read(path).splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        raise BookError(f"{path}: empty README")
    m = TITLE.match(lines[0])
    if not m:
        raise BookError(f"{path}:1: the first line must be '# Lesson {n} — <Title>' (with an em dash), "
                        f"found {lines[0]!r}")
    if int(m.group(1)) != n:
        raise BookError(f"{path}:1: the title says lesson {m.group(1)} but the folder is lesson {n}")
    title = m.group(2)
    sections, order, current, fence = {}, [], None, None
    for number, line in enumerate(lines[1:], start=2):
        f = FENCE.match(line)
        if f:
            marker = f.group(2)
            if fence is None:
                fence = marker[0] * len(marker)
            elif marker.startswith(fence) and not f.group(3):
                fence = None
        if fence is None and not f:
            h = H2.match(line)
            if h and not line.startswith("###"):
                current = h.group(1)
                order.append(current)
                sections[current] = []
                continue
            if H1.match(line) and not line.startswith("##"):
                raise BookError(f"{path}:{number}: only the title may be a level-1 heading")
        if current is None:
            if line.strip():
                sections.setdefault("", []).append(line)
            continue
        sections[current].append(line)
    if fence is not None:
        raise BookError(f"{path}: a fenced code block is not closed")
    if order != required:
        raise BookError(f"{path}: the ## headings must be exactly, in order:\n  " + "\n  ".join(required) +
                        "\nfound:\n  " + "\n  ".join(order))
    return title, sections


def label_for(n, heading):
    return f"lesson{n}_" + re.sub(r"[^a-z0-9]+", "_", heading.lower()).strip("_")


# ----------------------------------------------------------------------------- markdown

def convert_markdown(lines, ctx):
    """GitHub Markdown -> Doxygen Markdown: math blocks, inline math, relative links."""
    out, fence, in_math = [], None, False
    for line in lines:
        f = FENCE.match(line)
        if in_math:
            if f and f.group(2).startswith(fence) and not f.group(3):
                out.append(f"{f.group(1)}\\f]")
                in_math, fence = False, None
            else:
                out.append(line)
            continue
        if f:
            if fence is None:
                fence = f.group(2)[0] * len(f.group(2))
                if f.group(3) == "math":
                    out.append(f"{f.group(1)}\\f[")
                    in_math = True
                    ctx["formulas"] += 1
                    continue
            elif f.group(2).startswith(fence) and not f.group(3):
                fence = None
            out.append(line)
            continue
        if fence is not None:
            out.append(line)
            continue
        line, count = INLINE_MATH.subn(lambda m: f"\\f${m.group(1)}\\f$", line)
        line = BOLD_CODE_FIRST.sub(lambda m: f"<b>{m.group(1)}</b>", line)
        ctx["formulas"] += count
        out.append(LINK.sub(lambda m: rewrite_link(m, ctx), line))
    return out


def rewrite_link(m, ctx):
    bang, text, target = m.groups()
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
        return m.group(0)
    if target.startswith("#"):
        return text  # GitHub's heading anchors are not Doxygen's
    path_part = target.split("#", 1)[0]
    resolved = os.path.normpath(os.path.join(ctx["dir"], path_part))
    rel = os.path.relpath(resolved, ctx["root"]).replace(os.sep, "/")
    page = ctx["pages_by_path"].get(rel)
    if page:
        return f'\\ref {page} "{escape_ref_text(text)}"'
    if bang:
        raise BookError(f"{ctx['source']}: image {target!r}: lesson pages draw pictures with graphviz "
                        "(docs/book.json 'diagrams'), not image files")
    plain = text.strip("`")
    if plain in (rel, os.path.basename(rel)):
        return text if "`" in text else f"`{plain}`"
    return f"{text} (`{rel}`)"


def escape_ref_text(text):
    return text.replace('"', "'")


# ----------------------------------------------------------------------------- snippets

def snippet_tags(path):
    """Tags of a solution file in order of first appearance, each checked to appear exactly twice."""
    counts, order = {}, []
    for line in read(path).splitlines():
        m = MARKER.match(line)
        if m:
            tag = m.group(1).strip()
            if tag not in counts:
                order.append(tag)
            counts[tag] = counts.get(tag, 0) + 1
    for tag, count in counts.items():
        if count != 2:
            raise BookError(f"{path}: the marker [{tag}] appears {count} times; a region needs exactly two")
    return order


def region_text(path, tag):
    """The lines between the two [tag] markers (what \\snippet will show)."""
    inside, out = False, []
    for line in read(path).splitlines():
        m = MARKER.match(line)
        if m and m.group(1).strip() == tag:
            if inside:
                return out
            inside = True
            continue
        if inside and not MARKER.match(line):
            out.append(line)
    return out


def caption_from_tag(tag):
    words = tag.replace("-", " ").replace("_", " ")
    return words[:1].upper() + words[1:]


def plan_snippets(n, folder, entry, root):
    solution = entry.get("solution")
    if not solution:
        raise BookError(f"lessons/{folder}/lesson.json: lesson {n}'s book entry names no solution file")
    rel = f"{folder}/{solution}"
    path = os.path.join(root, "solutions", folder, solution)
    if not os.path.isfile(path):
        raise BookError(f"lesson {n} has a README but no solution file solutions/{rel}: "
                        "its page shows code cut from that file")
    tags = snippet_tags(path)
    wanted = entry.get("snippets", "all")
    if wanted == "all":
        if not tags:
            raise BookError(f"solutions/{rel} marks no snippet regions (/// [tag] ... /// [tag]); "
                            "the lesson page needs at least one")
        wanted = [{"tag": t, "caption": caption_from_tag(t)} for t in tags]
    out = []
    for item in wanted:
        tag = item["tag"]
        if tag not in tags:
            raise BookError(f"lessons/{folder}/lesson.json: lesson {n} shows snippet [{tag}] but solutions/{rel} has no "
                            f"region with that tag (it has: {', '.join(tags) or 'none'})")
        body = [l for l in region_text(path, tag) if l.strip()]
        if not body:
            raise BookError(f"solutions/{rel}: the region [{tag}] is empty")
        out.append({"file": rel, "path": os.path.relpath(path, root).replace(os.sep, "/"), "tag": tag,
                    "caption": item.get("caption") or caption_from_tag(tag), "lines": body})
    documented = re.search(r"[@\\]file\b", read(path)) is not None
    return solution, rel, out, documented


def manifest_entries(root):
    """Each lesson's book entry (solution file, snippets, diagrams): the `book` key of its manifest,
    lessons/NN-slug/lesson.json, so a new lesson needs no edit outside its folders."""
    entries = {}
    for path in sorted(glob.glob(os.path.join(root, "lessons", "[0-9][0-9]-*", "lesson.json"))):
        try:
            manifest = json.loads(read(path))
        except ValueError as e:
            raise BookError(f"{path}: not valid JSON ({e})")
        if "book" in manifest:
            entries[str(int(os.path.basename(os.path.dirname(path))[:2]))] = manifest["book"]
    return entries


def check_mapping(root, config, lessons):
    """Every mapped tag exists in its solution, for every solution present, README or not."""
    for key, entry in sorted(config["lessons"].items(), key=lambda kv: int(kv[0])):
        n = int(key)
        matches = glob.glob(os.path.join(root, "solutions", f"{n:02d}-*", entry.get("solution", "")))
        if n in lessons or not matches or not entry.get("solution"):
            continue  # lessons with a README are checked in full when their page is written
        folder = os.path.basename(os.path.dirname(matches[0]))
        plan_snippets(n, folder, entry, root)


# ----------------------------------------------------------------------------- pages

def nav_line(n, lessons, titles):
    numbers = sorted(lessons)
    i = numbers.index(n)
    parts = []
    if i > 0:
        p = numbers[i - 1]
        parts.append(f'\\ref lesson{p} "← Lesson {p}: {escape_ref_text(titles[p])}"')
    parts.append('\\ref index "Contents"')
    if i + 1 < len(numbers):
        q = numbers[i + 1]
        parts.append(f'\\ref lesson{q} "Lesson {q}: {escape_ref_text(titles[q])} →"')
    return "<div class=\"lesson-nav\">" + " &nbsp;·&nbsp; ".join(parts) + "</div>"


def lesson_page(n, folder, title, sections, entry, snippets, solution_info, results, lessons, titles, ctx):
    solution, rel, documented = solution_info
    out = [f"# Lesson {n} — {title} {{#lesson{n}}}", "", nav_line(n, lessons, titles), "", "[TOC]", ""]
    if sections.get(""):
        out += convert_markdown(sections[""], ctx) + [""]
    for heading, body in sections.items():
        if heading == "":
            continue
        out.append(f"## {heading} {{#{label_for(n, heading)}}}")
        if heading == "Measured reference bandwidth":
            body = [l for l in body if not PLACEHOLDER_MEASURED.match(l)]
        text = convert_markdown(body, ctx)
        while text and not text[-1].strip():
            text.pop()
        out += text + [""]
        if heading == "What the grader checks":
            # The rule table sits under this section: one heading level down.
            out += [re.sub(r"^## ", "### ", contract_tables.render(folder), flags=re.M), ""]
        if heading == "The diagram":
            for d in entry.get("diagrams", []):
                out += [f'\\dotfile {d["file"]} "{escape_ref_text(d["caption"])}"', ""]
                ctx["dotfiles"].append(d["file"])
            out += reference_code(n, rel, solution, snippets, documented, ctx)
        if heading == "Measured reference bandwidth":
            out += [results_table(results, n), ""]
        if heading == "Where to look next" and ctx.get("has_hints"):
            out += [f'Stuck on the exercise? The hints, one step at a time: \\subpage lesson{n}_hints "Hints for lesson {n}".', ""]
    out += ["<hr>", "", nav_line(n, lessons, titles), ""]
    return "\n".join(out)


def reference_code(n, rel, solution, snippets, documented, ctx):
    file_ref = f'\\ref {solution} "solutions/{rel}"' if documented else f"`solutions/{rel}`"
    out = [f"## The reference code {{#lesson{n}_the_reference_code}}", "",
           f"Cut from {file_ref}, the reference solution the grader measures you against; it is "
           "compiled with every build, so what you read here is code that passes the grader. "
           f"Your file is `exercises/{rel}`: same name, same entry point.", ""]
    for s in snippets:
        out += [f"**{s['caption']}**", "", f"\\snippet {s['file']} {s['tag']}", ""]
        ctx["snippets"].append({k: s[k] for k in ("file", "path", "tag", "lines")})
    return out


def hints_page(n, title, path, ctx):
    lines = read(path).splitlines()
    while lines and not lines[0].strip():
        lines.pop(0)
    if lines and H1.match(lines[0]) and not lines[0].startswith("##"):
        lines.pop(0)
    hint_heads = [l for l in lines if H2.match(l) and not l.startswith("###")]
    if not hint_heads:
        raise BookError(f"{path}: hints are '## Hint 1', '## Hint 2', ... sections")
    out = [f"# Hints for lesson {n} {{#lesson{n}_hints}}", "",
           f'<div class="lesson-nav">\\ref lesson{n} "← Back to lesson {n}" &nbsp;·&nbsp; \\ref index "Contents"</div>', "",
           f"Hints for *{title}*. Each gives away a little more than the one before it. In a terminal, "
           f"`./grade lesson{n} --hint` shows them one at a time.", ""]
    out += convert_markdown(lines, ctx)
    return "\n".join(out) + "\n"


def main_page(template, lessons, titles, config, ctx, dot_exe=None):
    items = []
    for n in sorted(lessons):
        items.append(f"{n}. \\subpage lesson{n} — `make lesson{n} && ./grade lesson{n}`")
    text = template.replace("@LESSON_LIST@", "\n".join(items) if items else "No lessons yet.")
    if dot_exe:
        ctx["map_svg"] = lesson_map_svg(lesson_map_dot(lessons, titles, config, html_links=True), dot_exe)
        map_text = "@LESSON_MAP_BLOCK@"
    else:  # no graphviz to draw it here: Doxygen draws it (at a fixed size)
        map_text = '\\dotfile lesson-map.dot "The lessons and what each builds on; click one to open it."'
        ctx["dotfiles"].append("lesson-map.dot")
    text = text.replace("@LESSON_MAP@", map_text)
    if "@RESULTS_PAGE@" in text:
        text = text.replace("@RESULTS_PAGE@", '\\subpage results "Measured reference bandwidth, all lessons"')
    text = "\n".join(convert_markdown(text.splitlines(), ctx)) + "\n"
    if dot_exe:
        text = text.replace("@LESSON_MAP_BLOCK@", lesson_map_block(ctx["map_svg"]))
    return text


def namespaces_dox(lessons, titles):
    out = ["/**", " * \\namespace workbook",
           " * \\brief Everything the workbook's lessons define; one nested namespace per lesson.", " */"]
    for n in sorted(lessons):
        out += ["/**", f" * \\namespace workbook::lesson{n}",
                f" * \\brief Lesson {n}, {titles[n]}: the entry points the grader calls. The lesson: \\ref lesson{n}.",
                " */"]
    return "\n".join(out) + "\n"


def build(root, out_dir, config_path, results_dir, dot_exe=None):
    config = json.loads(read(config_path))
    config.setdefault("lessons", {}).update(manifest_entries(root))
    required = config["required_headings"]
    lessons = find_lessons(root)
    titles, parsed = {}, {}
    for n, (folder, readme) in lessons.items():
        title, sections = parse_readme(readme, n, required)
        titles[n], parsed[n] = title, sections
    results = load_results(results_dir)

    pages_dir = os.path.join(out_dir, "pages")
    dot_dir = os.path.join(out_dir, "dot")
    os.makedirs(pages_dir, exist_ok=True)
    os.makedirs(dot_dir, exist_ok=True)
    for old in glob.glob(os.path.join(pages_dir, "*")):
        os.remove(old)

    pages_by_path = {"docs/results": "results"}
    for n, (folder, _) in lessons.items():
        pages_by_path[f"lessons/{folder}/README.md"] = f"lesson{n}"
        pages_by_path[f"lessons/{folder}"] = f"lesson{n}"
        if os.path.isfile(os.path.join(root, "lessons", folder, "hints.md")):
            pages_by_path[f"lessons/{folder}/hints.md"] = f"lesson{n}_hints"

    diagrams_dir = os.path.join(root, "docs", "diagrams")
    check_mapping(root, config, lessons)
    manifest = {"lessons": [], "main": {}, "results_files": [r["_slug"] for r in results]}
    for n in sorted(lessons):
        folder, readme = lessons[n]
        entry = config["lessons"].get(str(n))
        if entry is None:
            raise BookError(f"lessons/{folder}/lesson.json has no \"book\" entry: name the lesson's solution file, "
                            "snippets and diagrams there (another lesson's manifest shows how)")
        for d in entry.get("diagrams", []):
            if not os.path.isfile(os.path.join(diagrams_dir, d["file"])):
                raise BookError(f"lessons/{folder}/lesson.json: lesson {n} draws docs/diagrams/{d['file']}, which does not exist")
        solution, rel, snippets, documented = plan_snippets(n, folder, entry, root)
        hints = os.path.join(root, "lessons", folder, "hints.md")
        ctx = {"root": root, "dir": os.path.dirname(readme), "source": readme, "pages_by_path": pages_by_path,
               "formulas": 0, "snippets": [], "dotfiles": [], "has_hints": os.path.isfile(hints)}
        page = lesson_page(n, folder, titles[n], parsed[n], entry, snippets, (solution, rel, documented),
                           results, lessons, titles, ctx)
        write(os.path.join(pages_dir, f"lesson{n}.md"), page)
        record = {"n": n, "folder": folder, "title": titles[n], "page": f"lesson{n}.html",
                  "formulas": count_formulas(page), "snippets": ctx["snippets"], "dotfiles": ctx["dotfiles"],
                  "measured": any(int(r["lesson"]) == n for d in results for r in d["rows"])}
        if ctx["has_hints"]:
            hctx = dict(ctx, dir=os.path.dirname(hints), source=hints, formulas=0)
            hpage = hints_page(n, titles[n], hints, hctx)
            write(os.path.join(pages_dir, f"lesson{n}_hints.md"), hpage)
            record["hints_page"] = f"lesson{n}_hints.html"
            record["hints_formulas"] = count_formulas(hpage)
        manifest["lessons"].append(record)

    mctx = {"root": root, "dir": os.path.join(root, "docs"), "source": "docs/mainpage.md",
            "pages_by_path": pages_by_path, "formulas": 0, "snippets": [], "dotfiles": []}
    main = main_page(read(os.path.join(root, "docs", "mainpage.md")), lessons, titles, config, mctx, dot_exe)
    write(os.path.join(pages_dir, "mainpage.md"), main)
    manifest["main"] = {"page": "index.html", "formulas": count_formulas(main), "dotfiles": mctx["dotfiles"]}
    if mctx.get("map_svg"):
        write(os.path.join(dot_dir, "lesson-map.svg"), mctx["map_svg"])
        manifest["main"]["lesson_map"] = {"inline_svg": True, "nodes": [f"lesson-map-l{n}" for n in sorted(lessons)],
                                          "links": [f"lesson{n}.html" for n in sorted(lessons)]}

    results_md = ["# Measured reference bandwidth {#results}", "",
                  "Every reference solution timed by `make bench` on a named GPU: bytes moved (each input read "
                  "once, each output written once, weight included) divided by the median time, in GB/s "
                  "(10^9 bytes per second), and the same figure as a share of the device's own "
                  "device-to-device copy bandwidth measured in the same run.", "",
                  results_table(results, None), ""]
    write(os.path.join(pages_dir, "results.md"), "\n".join(results_md))
    write(os.path.join(pages_dir, "namespaces.dox"), namespaces_dox(lessons, titles))
    write(os.path.join(dot_dir, "lesson-map.dot"), lesson_map_dot(lessons, titles, config,
                                                                   html_links=bool(mctx.get("map_svg"))))
    write(os.path.join(out_dir, "manifest.json"), json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def count_formulas(text):
    """Formulas in a generated page: display blocks plus pairs of inline delimiters."""
    return text.count("\\f[") + text.count("\\f$") // 2


def write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- header

AWESOME_SCRIPTS = """<script type="text/javascript" src="$relpath^doxygen-awesome-darkmode-toggle.js"></script>
<script type="text/javascript" src="$relpath^doxygen-awesome-fragment-copy-button.js"></script>
<script type="text/javascript" src="$relpath^doxygen-awesome-interactive-toc.js"></script>
<script type="text/javascript">
  DoxygenAwesomeDarkModeToggle.init()
  DoxygenAwesomeFragmentCopyButton.init()
  DoxygenAwesomeInteractiveToc.init()
</script>
"""


def patch_header(src, dst):
    """Add the doxygen-awesome extension scripts to the header `doxygen -w html` wrote."""
    text = read(src)
    if "</head>" not in text:
        raise BookError(f"{src}: no </head> in Doxygen's default header")
    write(dst, text.replace("</head>", AWESOME_SCRIPTS + "</head>", 1))


# ----------------------------------------------------------------------------- MathJax

# What the pages use of MathJax 2 (Doxyfile: TeX input with AMSmath and AMSsymbols, SVG output in its TeX
# font): about 2.5 MB of the 50 MB a system copy holds.
MATHJAX_PARTS = ("MathJax.js", "extensions", "jax/input/TeX", "jax/element", "jax/output/SVG/config.js",
                 "jax/output/SVG/jax.js", "jax/output/SVG/autoload", "jax/output/SVG/fonts/TeX", "localization/en")


def copy_mathjax(src, dst):
    """Copies the MathJax the pages load into the site (files, never links: the site must travel)."""
    if not os.path.isfile(os.path.join(src, "MathJax.js")):
        raise BookError(f"{src} holds no MathJax.js (MathJax 2; Debian: libjs-mathjax)")
    if os.path.islink(dst) or os.path.isfile(dst):
        os.remove(dst)
    elif os.path.isdir(dst):
        shutil.rmtree(dst)
    count = 0
    for part in MATHJAX_PARTS:
        a, b = os.path.join(src, part), os.path.join(dst, part)
        if os.path.isdir(a):
            shutil.copytree(a, b, symlinks=False)
            count += sum(len(files) for _, _, files in os.walk(b))
        elif os.path.isfile(a):
            os.makedirs(os.path.dirname(b), exist_ok=True)
            shutil.copyfile(a, b)
            count += 1
        elif part == "MathJax.js":
            raise BookError(f"{a} is missing")
    return count


def main(argv):
    if len(argv) >= 1 and argv[0] == "mathjax":
        if len(argv) != 3:
            sys.stderr.write("usage: build_pages.py mathjax MATHJAX_DIR HTML_DIR/mathjax\n")
            return 64
        try:
            count = copy_mathjax(argv[1], argv[2])
        except (BookError, OSError) as e:
            sys.stderr.write(f"docs: {e}\n")
            return 1
        print(f"docs: MathJax copied into {argv[2]} ({count} files)")
        return 0
    if len(argv) >= 1 and argv[0] == "header":
        if len(argv) != 3:
            sys.stderr.write("usage: build_pages.py header IN OUT\n")
            return 64
        try:
            patch_header(argv[1], argv[2])
        except BookError as e:
            sys.stderr.write(f"docs: {e}\n")
            return 1
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description="Write the workbook's Doxygen pages into a build directory.")
    ap.add_argument("--root", default=os.path.dirname(here), help="the repository root")
    ap.add_argument("--out", required=True, help="where the pages, generated diagrams and manifest go")
    ap.add_argument("--config", default=None, help="the lesson mapping (default: ROOT/docs/book.json)")
    ap.add_argument("--results", default=None, help="the measured results (default: ROOT/docs/results)")
    ap.add_argument("--dot", default=None,
                    help="graphviz dot, to draw the lesson map inline in the main page (default: dot on PATH; "
                         "without one, Doxygen draws it at a fixed size)")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.root)
    config = args.config or os.path.join(root, "docs", "book.json")
    results = args.results if args.results is not None else os.path.join(root, "docs", "results")
    try:
        manifest = build(root, os.path.abspath(args.out), config, results, args.dot or shutil.which("dot"))
    except BookError as e:
        sys.stderr.write(f"docs: {e}\n")
        return 1
    n = len(manifest["lessons"])
    s = sum(len(l["snippets"]) for l in manifest["lessons"])
    print(f"docs: {n} lesson page(s), {s} snippet(s), {len(manifest['results_files'])} results file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
