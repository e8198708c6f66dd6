"""The board as a terminal table, Markdown, CSV, JSON and one self-contained HTML page with an SVG chart.

Every export opens with how the submissions were isolated; a board graded without a sandbox says so
first, in every format."""
import csv
import html
import io
import json
import os

from .ranking import rank_text

COLUMNS = ["rank", "name", "status", "GB/s", "% of ref", "% of copy", "detail"]


def banner(meta):
    """The line every export starts with: how the submissions were isolated."""
    if meta.get("isolated"):
        return f"Graded in a {meta['sandbox']}."
    return f"WARNING: {meta['sandbox']}."


# The terminal table keeps each row on one line; the files keep the whole detail.
TEXT_DETAIL_LIMIT = 160


def shorten(text, limit):
    """`text` cut to at most `limit` characters at a word boundary, with an ellipsis when cut."""
    if limit is None or len(text) <= limit:
        return text
    cut = text[:limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:|(") + "…"


def _detail(r, limit=None):
    notes = []
    if not r["status"].startswith("correct") or r.get("beside"):
        notes.append(r.get("detail") or "")
    if r.get("foreign_gpu"):
        notes.append("not ranked: timed next to another GPU process: " + "; ".join(r.get("foreign_gpu", [])))
    if r.get("left_behind"):
        notes.append("left processes behind (killed): " + ", ".join(r["left_behind"][:3]))
    return shorten(" | ".join(n for n in notes if n), limit)


def row(r, detail_limit=None):
    timed = r.get("gbps", 0) > 0
    return [rank_text(r), r["name"], r["status"], f"{r['gbps']:.0f}" if timed else "",
            f"{100 * r['of_reference']:.0f}%" if timed else "", f"{100 * r['of_copy']:.0f}%" if timed else "",
            _detail(r, detail_limit)]


def cpu_note(lesson):
    """Why the bandwidth columns are empty on a lesson graded on the CPU (lesson 1); None otherwise."""
    if getattr(lesson, "needs_gpu", True):
        return None
    return (f"{lesson.name} is a CPU lesson: it is graded for correctness only, nothing is timed, so the "
            "GB/s, % of ref and % of copy columns stay empty.")


def _median(values):
    values = sorted(values)
    n = len(values)
    return (values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])) if n else 0


def clocks_text(rows):
    """The GPU's clocks while the rows were timed (NVML during the timed samples), not the idle clock."""
    read = [r["clocks"] for r in rows if (r.get("clocks") or {}).get("samples")]
    if not read:
        return "clocks not measured while timing"
    sm, mem = _median([c["sm_mhz"] for c in read]), _median([c["mem_mhz"] for c in read])
    low, high = min(c["sm_min_mhz"] for c in read), max(c["sm_max_mhz"] for c in read)
    return f"while timing: SM clock {sm:.0f} MHz ({low:.0f}–{high:.0f}), memory clock {mem:.0f} MHz"


def _heading(gpu, rows):
    info = rows[0] if rows else {}
    if gpu == "no GPU":
        return "graded without a GPU"
    return f"on {gpu} (driver {info.get('driver', '')}, CUDA {info.get('cuda', '')}; {clocks_text(rows)})"


def to_text(ranked, lesson, meta):
    out = io.StringIO()
    out.write(banner(meta) + "\n")
    note = cpu_note(lesson)
    for gpu, rows in ranked.items():
        out.write(f"\n{lesson.name} leaderboard {_heading(gpu, rows)}\n")
        if note:
            out.write(f"({note})\n")
        table = [COLUMNS] + [row(r, TEXT_DETAIL_LIMIT) for r in rows]
        widths = [max(len(str(line[i])) for line in table) for i in range(len(COLUMNS) - 1)]
        for line in table:
            out.write("  " + "  ".join(str(c).ljust(w) for c, w in zip(line, widths)) + "  " + line[-1] + "\n")
    return out.getvalue()


def to_markdown(ranked, lesson, meta):
    lines = [f"# {lesson.name} leaderboard", "", f"> {banner(meta)}", ""]
    note = cpu_note(lesson)
    for gpu, rows in ranked.items():
        lines += [f"## {_heading(gpu, rows)}", ""] + ([f"*{note}*", ""] if note else [])
        lines += ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row(r)) + " |" for r in rows]
        lines.append("")
    return "\n".join(lines)


def to_csv(ranked, meta, lesson=None):
    out = io.StringIO()
    out.write(f"# {banner(meta)}\n")
    note = cpu_note(lesson)
    if note:
        out.write(f"# {note}\n")
    writer = csv.writer(out)
    writer.writerow(["gpu"] + COLUMNS)
    for gpu, rows in ranked.items():
        for r in rows:
            writer.writerow([gpu] + row(r))
    return out.getvalue()


def to_json(ranked, lesson, meta):
    data = {"lesson": lesson.name, "sandbox": meta["sandbox"], "isolated": meta["isolated"], "boards": ranked}
    if meta.get("run"):
        data["run"] = meta["run"]
    note = cpu_note(lesson)
    if note:
        data["note"] = note
    return json.dumps(data, indent=2)


def _chart(rows):
    timed = [r for r in rows if r.get("gbps", 0) > 0 and r.get("rank") is not None]
    if not timed:
        return ""
    top = max(r["gbps"] for r in timed)
    bar_h, width = 22, 640
    svg = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width + 260}' height='{bar_h * len(timed) + 10}'>"]
    for i, r in enumerate(timed):
        w = max(1, int(width * r["gbps"] / top))
        y = 5 + i * bar_h
        svg.append(f"<text x='0' y='{y + 15}' font-size='13'>{html.escape(r['name'])}</text>"
                   f"<rect x='160' y='{y}' width='{w}' height='{bar_h - 6}' fill='#4a7bd0'/>"
                   f"<text x='{165 + w}' y='{y + 15}' font-size='12'>{r['gbps']:.0f} GB/s</text>")
    svg.append("</svg>")
    return "".join(svg)


def to_html(ranked, lesson, meta):
    warn = "" if meta.get("isolated") else " class='warn'"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{lesson.name} leaderboard</title>",
             "<style>body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse}"
             "td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}"
             "td.detail{min-width:20em;max-width:48em;white-space:normal;overflow-wrap:break-word;"
             "word-break:normal;hyphens:none}"
             ".note{color:#555;font-style:italic}"
             ".fail{color:#a00}.warn{background:#fee;padding:.5em;border:1px solid #a00}</style></head><body>",
             f"<h1>{html.escape(lesson.name)} leaderboard</h1>", f"<p{warn}>{html.escape(banner(meta))}</p>"]
    note = cpu_note(lesson)
    for gpu, rows in ranked.items():
        parts.append(f"<h2>{html.escape(_heading(gpu, rows))}</h2>")
        if note:
            parts.append(f"<p class='note'>{html.escape(note)}</p>")
        parts.append(_chart(rows))
        parts.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in COLUMNS) + "</tr>")
        for r in rows:
            cls = "" if r.get("rank") is not None else " class='fail'"
            cells = row(r)  # the whole detail: the page wraps it between words
            parts.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells[:-1])
                         + f"<td class='detail'>{html.escape(cells[-1])}</td></tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def export(ranked, lesson, meta, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    files = {"leaderboard.md": to_markdown(ranked, lesson, meta), "leaderboard.csv": to_csv(ranked, meta, lesson),
             "leaderboard.json": to_json(ranked, lesson, meta), "leaderboard.html": to_html(ranked, lesson, meta)}
    for name, text in files.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(text)
    return [os.path.join(out_dir, n) for n in files]
