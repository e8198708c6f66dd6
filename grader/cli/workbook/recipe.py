"""How a submission is compiled, the one recipe for the GPU (build.py) and the CPU emulator
(emulated.py); cmake/Submissions.cmake builds the exercises and references the same way.

A submission is included by an adapter (grader/adapters) that exports the lesson's table of entry
points; the lesson's table is declared in its own folder, grader/lessons/NN-slug/api.h.
"""
import os

from .lessons import ROOT

GRADER = os.path.join(ROOT, "grader")


def api_header(lesson):
    """The lesson's table of entry points, relative to the grader folder (the adapter includes it)."""
    return f"lessons/{lesson.slug}/api.h"


def flags(lesson, source):
    """Include folders and definitions every compile of a submission of `lesson` at `source` takes."""
    return ["-I", os.path.join(GRADER, "include"), "-I", GRADER, f"-DWORKBOOK_LESSON={lesson.number}",
            f'-DWORKBOOK_SOURCE="{source}"', f'-DWORKBOOK_LESSON_API="{api_header(lesson)}"']


def headers(lesson):
    """Every header a submission is compiled against: a change there changes the library's layout,
    so a cached build must not be reused."""
    found = []
    for folder in (os.path.join(GRADER, "include"), os.path.join(GRADER, "lessons", "common")):
        for d, _, names in os.walk(folder):
            found += [os.path.join(d, n) for n in names if n.endswith(".h")]
    found.append(os.path.join(GRADER, api_header(lesson)))
    return sorted(found)
