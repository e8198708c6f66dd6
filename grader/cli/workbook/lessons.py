"""Finding lessons and their files: `lessonN` on the command line, `NN-slug` on disk."""
import json
import os
import re
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


# A reference that reads the device's memory clock picks its plan by the memory's speed (lessons 4, 5, 9 and 11). The
# CPU emulator reports an H100's memory unless WBEMU_MEMORY names another, so such a reference is graded on
# these memories too (scripts/emulator-check, scripts/mutate).
OTHER_MEMORIES = ("h200",)
MEMORY_PLAN_MARK = "cudaDevAttrMemoryClockRate"


class UsageError(Exception):
    """Bad input from the user: the message says what is wrong and what to do."""


@dataclass
class Lesson:
    number: int
    slug: str

    @property
    def name(self):
        return f"lesson{self.number}"

    @property
    def readme(self):
        return os.path.join(ROOT, "lessons", self.slug, "README.md")

    @property
    def hints_file(self):
        return os.path.join(ROOT, "lessons", self.slug, "hints.md")

    def _only_file(self, folder):
        d = os.path.join(ROOT, folder, self.slug)
        files = sorted(f for f in os.listdir(d) if f.endswith((".cu", ".cpp"))) if os.path.isdir(d) else []
        return os.path.join(d, files[0]) if files else None

    @property
    def exercise(self):
        return self._only_file("exercises")

    @property
    def solution(self):
        return self._only_file("solutions")

    @property
    def other_memories(self):
        """The emulated memories (WBEMU_MEMORY) its reference is graded on besides the default: OTHER_MEMORIES
        when the reference picks its plan by the memory's speed, else none."""
        source = self.solution
        if not source:
            return ()
        with open(source, encoding="utf-8") as f:
            return OTHER_MEMORIES if MEMORY_PLAN_MARK in f.read() else ()

    @property
    def manifest_file(self):
        return os.path.join(ROOT, "lessons", self.slug, "lesson.json")

    @property
    def manifest(self):
        """The lesson's manifest (lessons/NN-slug/lesson.json): the one place a lesson declares itself."""
        try:
            with open(self.manifest_file, encoding="utf-8") as f:
                return json.load(f)
        except OSError as e:
            raise UsageError(f"{self.manifest_file} is missing ({e.strerror}): every lesson declares itself there; "
                             "copy one from another lesson (scripts/new-lesson does)") from None
        except ValueError as e:
            raise UsageError(f"{self.manifest_file} is not valid JSON: {e}") from None

    @property
    def title(self):
        return self.manifest.get("title", self.slug)

    @property
    def needs_gpu(self):
        return bool(self.manifest.get("needs_gpu", True))

    @property
    def emulated(self):
        return bool(self.manifest.get("emulated", False))

    @property
    def grader_dir(self):
        """The lesson's own grader code: case plan, table of entry points, remote proxies, known-bad kernels."""
        return os.path.join(ROOT, "grader", "lessons", self.slug)


def all_lessons():
    """Every lesson folder that has an exercise and a solution, in order."""
    found = []
    lessons_dir = os.path.join(ROOT, "lessons")
    for entry in sorted(os.listdir(lessons_dir)):
        m = re.match(r"^(\d\d)-[a-z0-9-]+$", entry)
        if not m or not os.path.isdir(os.path.join(lessons_dir, entry)):
            continue
        lesson = Lesson(int(m.group(1)), entry)
        if lesson.exercise and lesson.solution:
            found.append(lesson)
    return found


def find_lesson(name):
    """`lesson3` (or `3`, `03`, `03-block-reduce`) to a Lesson; UsageError listing the lessons otherwise."""
    lessons = all_lessons()
    m = re.match(r"^(?:lesson)?0*(\d+)(?:-[a-z0-9-]+)?$", name)
    if m:
        for lesson in lessons:
            if lesson.number == int(m.group(1)):
                return lesson
    listing = ", ".join(l.name for l in lessons)
    raise UsageError(f"unknown lesson '{name}'. The lessons are: {listing}. Run ./grade alone to see them with your progress.")
