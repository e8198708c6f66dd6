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


def _detail(r):
    notes = []
    if not r["status"].startswith("correct"):
        notes.append(r.get("detail") or "")
    if r.get("clean") is False:
        notes.append("not ranked: timed next to another GPU process: " + "; ".join(r.get("foreign_gpu", [])))
    if r.get("left_behind"):
        notes.append("left processes behind (killed): " + ", ".join(r["left_behind"][:3]))
    return " | ".join(n for n in notes if n)[:160]


def row(r):
    timed = r.get("gbps", 0) > 0
    return [rank_text(r), r["name"], r["status"], f"{r['gbps']:.0f}" if timed else "",
            f"{100 * r['of_reference']:.0f}%" if timed else "", f"{100 * r['of_copy']:.0f}%" if timed else "",
            _detail(r)]


def _heading(gpu, rows):
    info = rows[0] if rows else {}
    if gpu == "no GPU":
        return "graded without a GPU"
    return (f"on {gpu} (driver {info.get('driver', '')}, CUDA {info.get('cuda', '')}, "
            f"SM clock {info.get('sm_clock', '')})")


def to_text(ranked, lesson, meta):
    out = io.StringIO()
    out.write(banner(meta) + "\n")
    for gpu, rows in ranked.items():
        out.write(f"\n{lesson.name} leaderboard {_heading(gpu, rows)}\n")
        table = [COLUMNS] + [row(r) for r in rows]
        widths = [max(len(str(line[i])) for line in table) for i in range(len(COLUMNS) - 1)]
        for line in table:
            out.write("  " + "  ".join(str(c).ljust(w) for c, w in zip(line, widths)) + "  " + line[-1] + "\n")
    return out.getvalue()


def to_markdown(ranked, lesson, meta):
    lines = [f"# {lesson.name} leaderboard", "", f"> {banner(meta)}", ""]
    for gpu, rows in ranked.items():
        lines += [f"## {_heading(gpu, rows)}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row(r)) + " |" for r in rows]
        lines.append("")
    return "\n".join(lines)


def to_csv(ranked, meta):
    out = io.StringIO()
    out.write(f"# {banner(meta)}\n")
    writer = csv.writer(out)
    writer.writerow(["gpu"] + COLUMNS)
    for gpu, rows in ranked.items():
        for r in rows:
            writer.writerow([gpu] + row(r))
    return out.getvalue()


def to_json(ranked, lesson, meta):
    return json.dumps({"lesson": lesson.name, "sandbox": meta["sandbox"], "isolated": meta["isolated"],
                       "boards": ranked}, indent=2)


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
             "td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}"
             ".fail{color:#a00}.warn{background:#fee;padding:.5em;border:1px solid #a00}</style></head><body>",
             f"<h1>{html.escape(lesson.name)} leaderboard</h1>", f"<p{warn}>{html.escape(banner(meta))}</p>"]
    for gpu, rows in ranked.items():
        parts.append(f"<h2>{html.escape(_heading(gpu, rows))}</h2>")
        parts.append(_chart(rows))
        parts.append("<table><tr>" + "".join(f"<th>{c}</th>" for c in COLUMNS) + "</tr>")
        for r in rows:
            cls = "" if r.get("rank") is not None else " class='fail'"
            parts.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in row(r)) + "</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def export(ranked, lesson, meta, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    files = {"leaderboard.md": to_markdown(ranked, lesson, meta), "leaderboard.csv": to_csv(ranked, meta),
             "leaderboard.json": to_json(ranked, lesson, meta), "leaderboard.html": to_html(ranked, lesson, meta)}
    for name, text in files.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.write(text)
    return [os.path.join(out_dir, n) for n in files]
