"""The catalogue of known-bad kernels: each is the lesson's reference with one bug, kept as the
edit that introduces it (grader/lessons/NN-slug/known_bad/NAME.bad), so the catalogue follows the
reference and every bug reads as a small diff.

A .bad file:

    expect: fail-correctness prime_cols      verdict the grader must give, and a word its report must contain
    bug: one sentence naming the bug
    --- find
    lines of the reference, exactly once in it
    --- replace
    what they become
    (more find/replace pairs)
"""
import os
import re

from .lessons import ROOT, UsageError

CATALOGUE = os.path.join(ROOT, "grader", "lessons")


class KnownBad:
    def __init__(self, path):
        self.path = path
        self.slug = os.path.basename(os.path.dirname(os.path.dirname(path)))
        self.lesson = int(self.slug[:2])
        self.name = os.path.splitext(os.path.basename(path))[0]
        with open(path, encoding="utf-8") as f:
            text = f.read()
        head, _, body = text.partition("\n--- find\n")
        fields = dict(re.findall(r"^(\w+):\s*(.*)$", head, flags=re.M))
        if "expect" not in fields or "bug" not in fields or not body:
            raise UsageError(f"{path}: needs 'expect:' and 'bug:' lines and at least one '--- find' block")
        self.expect = fields["expect"].strip()
        self.verdict, _, self.needle = self.expect.partition(" ")
        self.bug = fields["bug"].strip()
        self.edits = []
        for block in ("--- find\n" + body).split("--- find\n")[1:]:
            find, sep, replace = block.partition("--- replace\n")
            if not sep:
                raise UsageError(f"{path}: a '--- find' block has no '--- replace'")
            self.edits.append((find, replace))

    def solution(self):
        folder = os.path.join(ROOT, "solutions", self.slug)
        files = sorted(f for f in os.listdir(folder) if f.endswith((".cu", ".cpp")))
        return os.path.join(folder, files[0])

    def source(self):
        """The reference with the bug applied; UsageError when an edit no longer matches."""
        with open(self.solution(), encoding="utf-8") as f:
            text = f.read()
        for find, replace in self.edits:
            count = text.count(find)
            if count != 1:
                raise UsageError(f"{self.path}: a find block occurs {count} times in {self.solution()} "
                                 "(it must occur exactly once); update the .bad file to the reference")
            text = text.replace(find, replace)
        return f"// expect: {self.expect}\n// bug: {self.bug}\n{text}"

    def write(self, out_dir):
        folder = os.path.join(out_dir, self.slug)
        os.makedirs(folder, exist_ok=True)
        ext = os.path.splitext(self.solution())[1]
        path = os.path.join(folder, self.name + ext)
        text = self.source()
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old != text:  # unchanged files keep their time stamp, so builds stay cached
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return path


def catalogue():
    found = []
    for slug in sorted(os.listdir(CATALOGUE)):
        folder = os.path.join(CATALOGUE, slug, "known_bad")
        if os.path.isdir(folder):
            found += [KnownBad(os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".bad")]
    return found
