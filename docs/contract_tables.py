"""A lesson's contract, rule by rule, as a Markdown section for the book (standard library only).

Each lesson keeps its contract as a table beside its cases, grader/lessons/NN-slug/contract_rules.json:

    {"lesson": N, "contract": "where the contract is written",
     "rules": [{"id": "kebab-id", "area": "sizes", "rule": "one sentence", "cases": ["name", "prefix_*"]}]}

`render("04-vectorized")` turns it into the section "What the grader checks, rule by rule": one table
row per rule (area, rule, the cases that check it), grouped by area in a fixed order. A lesson without
the file renders as "" so a page can ask for every lesson.
"""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADING = "What the grader checks, rule by rule"
# The areas in the order a reader meets them; an area not listed here comes after, by name.
AREA_ORDER = ("sizes", "strides", "alignment", "aliasing", "scalars", "numerics", "stream", "launch", "repeat",
              "descriptor", "workspace", "determinism")


def rules_file(lesson_slug, root=ROOT):
    return os.path.join(root, "grader", "lessons", lesson_slug, "contract_rules.json")


def md_cell(text):
    """Text safe inside a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "\\|")


def case_cell(entries):
    """The cases as code spans; a prefix keeps its `*`."""
    return ", ".join(f"`{md_cell(e)}`" for e in entries)


def render(lesson_slug, root=ROOT, anchor=True):
    """The Markdown section for grader/lessons/<lesson_slug>/contract_rules.json ("" when there is none).

    `anchor` adds a Doxygen label to the heading, {#lessonN_contract_rules}, as the book's pages do.
    Raises ValueError when the file is not a table of rules.
    """
    path = rules_file(lesson_slug, root)
    if not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    rules = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, list) or not rules:
        raise ValueError(f"{path}: no rules")
    for i, r in enumerate(rules):
        if not isinstance(r, dict) or not all(k in r for k in ("id", "area", "rule", "cases")):
            raise ValueError(f"{path}: rules[{i}] needs id, area, rule and cases")

    def order(r):
        area = r["area"]
        return (AREA_ORDER.index(area) if area in AREA_ORDER else len(AREA_ORDER), area)

    ordered = sorted(rules, key=order)  # stable: the file's order inside an area
    label = f" {{#lesson{int(data['lesson'])}_contract_rules}}" if anchor and "lesson" in data else ""
    contract = data.get("contract", "")
    lines = [f"## {HEADING}{label}", ""]
    intro = (f"The contract ({md_cell(contract)}) as {len(rules)} rules, each with the cases that check it. "
             if contract else f"The contract as {len(rules)} rules, each with the cases that check it. ")
    if any(e.endswith("*") for r in rules for e in r["cases"]):
        intro += "A name ending in `*` stands for every case whose name starts so. "
    lines += [intro + f"The table is `grader/lessons/{lesson_slug}/contract_rules.json`; the test suite fails "
              "when a rule names no case, or a case the grader does not have.", ""]
    lines += ["| area | rule | cases |", "|---|---|---|"]
    for r in ordered:
        lines.append(f"| {md_cell(r['area'])} | {md_cell(r['rule'])} | {case_cell(r['cases'])} |")
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    for slug in sys.argv[1:] or ["04-vectorized"]:
        print(render(slug))
