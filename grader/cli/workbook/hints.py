"""Hints that escalate: each `--hint` shows the next one of lessons/NN-slug/hints.md."""
import re

from . import progress
from .lessons import UsageError


def parse(path):
    """The hints of a hints.md, in order: the text under each `## Hint N` heading."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        raise UsageError(f"missing file: {path} (the lesson's hints)")
    parts = re.split(r"^##\s+Hint\s+\d+.*$", text, flags=re.M)
    return [p.strip() for p in parts[1:] if p.strip()]


def next_hint(lesson):
    """Returns (number, total, text) of the next hint, and remembers that it was shown."""
    hints = parse(lesson.hints_file)
    if not hints:
        raise UsageError(f"{lesson.hints_file} has no '## Hint N' sections")
    seen = progress.load("hints.json")
    shown = seen.get(lesson.name, 0)
    number = min(shown + 1, len(hints))
    seen[lesson.name] = number
    progress.save("hints.json", seen)
    return number, len(hints), hints[number - 1]
