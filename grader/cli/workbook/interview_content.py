"""What an interview on a lesson says and asks, read from the lesson's own files.

- README.md: the contract (first code block of "What you build"), the prompt's first paragraph, and the
  follow-up questions with model answers ("Interview questions", `**N. question**` then the answer);
- interview.md: the cases `check` runs, the follow-up stages (`## Stage: lessonN` and the interviewer's
  words), and the questions on the candidate's own numbers, whose `{placeholders}` are filled from the
  candidate's measured bandwidth.

Nothing here is lesson-specific code: a new lesson gets an interview by writing these two files.
"""
import math
import os
import re
from dataclasses import dataclass, field

from .lessons import UsageError, find_lesson


@dataclass
class Question:
    text: str
    model: str
    needs_numbers: bool = False


@dataclass
class Stage:
    """A follow-up stage: `lesson` is graded with its own cases; `prompt` is what the interviewer says."""
    lesson: str
    prompt: str


@dataclass
class InterviewPlan:
    check_cases: list = field(default_factory=list)
    stages: list = field(default_factory=list)
    number_questions: list = field(default_factory=list)


def _read(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise UsageError(f"cannot read {path} ({what}): {e.strerror}")


def _sections(text):
    """{heading: body} for every `## heading` of a Markdown text, in order."""
    parts = re.split(r"^## +(.+?)\s*$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def _section(lesson, heading):
    sections = _sections(_read(lesson.readme, "the lesson"))
    if heading not in sections:
        raise UsageError(f"{lesson.readme} has no '## {heading}' section")
    return sections[heading]


def contract(lesson):
    """The entry point's declaration: the first code block of the lesson's 'What you build'."""
    m = re.search(r"```(?:cpp|c\+\+|cuda)?\n(.*?)```", _section(lesson, "What you build"), flags=re.S)
    if not m:
        raise UsageError(f"{lesson.readme}: 'What you build' has no code block with the contract")
    return m.group(1).rstrip()


def _numbered_questions(body, needs_numbers=False):
    parts = re.split(r"^\*\*\d+\.\s*", body, flags=re.M)[1:]
    found = []
    for part in parts:
        q, sep, a = part.partition("**")
        if sep:
            found.append(Question(" ".join(q.split()), a.strip(), needs_numbers))
    return found


def readme_questions(lesson):
    """The lesson's 'Interview questions' with their model answers."""
    return _numbered_questions(_section(lesson, "Interview questions"))


def interview_file(lesson):
    return os.path.join(os.path.dirname(lesson.readme), "interview.md")


def plan(lesson):
    """The lesson's interview.md: check cases, stages and questions on the candidate's numbers."""
    path = interview_file(lesson)
    sections = _sections(_read(path, "the lesson's interview stages and questions"))
    result = InterviewPlan()
    result.check_cases = re.findall(r"`([A-Za-z0-9_]+)`", sections.get("Cases run by check", ""))
    if not result.check_cases:
        raise UsageError(f"{path}: '## Cases run by check' must list case names in backticks")
    for heading, body in sections.items():
        m = re.match(r"Stage:\s*(lesson\d+)$", heading)
        if m:
            stage_lesson = find_lesson(m.group(1))
            if stage_lesson.number == lesson.number:
                raise UsageError(f"{path}: a stage of {lesson.name} cannot be {lesson.name} itself")
            if not body:
                raise UsageError(f"{path}: '## {heading}' needs the interviewer's prompt under it")
            result.stages.append(Stage(stage_lesson.name, " ".join(body.split())))
        elif heading.startswith("Stage"):
            raise UsageError(f"{path}: '## {heading}' must read '## Stage: lessonN'")
    result.number_questions = _numbered_questions(sections.get("Questions on your numbers", ""), True)
    return result


def questions(lesson):
    """Every follow-up question of the lesson: the README's, then those on the candidate's numbers."""
    return readme_questions(lesson) + plan(lesson).number_questions


# ----------------------------------------------------------------------------- the candidate's numbers

PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def numbers(bench, copy_gbps):
    """Placeholder values from the grader's bench rows: the row furthest below the reference.

    That row is the one an interviewer would ask about ("why is it slower here?"). None when there
    are no timed rows (a CPU lesson, no GPU, an emulated run, or a failed submit).
    """
    rows = [b for b in bench or [] if b.get("student_gbps") and b.get("reference_gbps")]
    if not rows:
        return None
    row = min(rows, key=lambda b: b.get("ratio") or b["student_gbps"] / b["reference_gbps"])
    gbps = row["student_gbps"]
    ref = row["reference_gbps"]
    nbytes = row.get("bytes") or 0
    copy = copy_gbps or (gbps / row["copy_fraction"] if row.get("copy_fraction") else 0)
    ratios = [b.get("ratio") or b["student_gbps"] / b["reference_gbps"] for b in rows]
    geo = math.exp(sum(math.log(max(r, 1e-9)) for r in ratios) / len(ratios))
    us = lambda rate: f"{nbytes / (rate * 1e9) * 1e6:.1f}" if rate and nbytes else "?"
    return {
        "shape": row.get("shape", "?"),
        "dtype": row.get("dtype", "?"),
        "your_gbps": f"{gbps:.0f}",
        "ref_gbps": f"{ref:.0f}",
        "ratio": f"{row.get('ratio', gbps / ref):.2f}",
        "ratio_pct": f"{100 * row.get('ratio', gbps / ref):.0f}",
        "copy_gbps": f"{copy:.0f}" if copy else "?",
        "copy_pct": f"{100 * row.get('copy_fraction', 0):.0f}",
        "size_copy_pct": f"{100 * row.get('size_copy_fraction', 0):.0f}",
        "bytes_mib": f"{nbytes / 2**20:.1f}" if nbytes else "?",
        "bytes_gb": f"{nbytes / 1e9:.3f}" if nbytes else "?",
        "your_us": us(gbps),
        "ref_us": us(ref),
        "copy_us": us(copy),
        "shapes": str(len(rows)),
        "geomean_ratio": f"{geo:.2f}",
    }


PLACEHOLDERS = ("shape", "dtype", "your_gbps", "ref_gbps", "ratio", "ratio_pct", "copy_gbps", "copy_pct",
                "size_copy_pct", "bytes_mib", "bytes_gb", "your_us", "ref_us", "copy_us", "shapes", "geomean_ratio")


def fill(text, values):
    """`text` with every `{name}` of PLACEHOLDERS replaced; other braces (code) are left alone."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)) if m.group(1) in PLACEHOLDERS
                           else m.group(0), text)
