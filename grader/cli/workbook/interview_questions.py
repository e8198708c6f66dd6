"""The question round: one question at a time, the candidate's answer, the model answer, a 0-2 self-score.

Answers and scores come from the keyboard, or from a file: blocks separated by lines of `---`, one per
question in order, each optionally ending with a line `score: 0`, `score: 1` or `score: 2`. A file's first
block answers the first question not yet answered.
"""
import re
import sys

from .lessons import UsageError

SCORE_LINE = re.compile(r"^\s*score\s*:\s*(\S*)\s*$", flags=re.I)


def read_answers_file(path):
    """[(answer, score or None)] from an answers file; UsageError naming the block of a bad score."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"cannot read the answers file {path}: {e.strerror}")
    blocks = re.split(r"^---\s*$", text, flags=re.M)
    if blocks and not blocks[-1].strip():
        blocks = blocks[:-1]  # a trailing --- ends the last block, it does not start an empty one
    found = []
    for i, block in enumerate(blocks, 1):
        lines = block.strip().splitlines()
        score = None
        if lines:
            m = SCORE_LINE.match(lines[-1])
            if m:
                if m.group(1) not in ("0", "1", "2"):
                    raise UsageError(f"{path}, answer {i}: the score must be 0, 1 or 2, not '{m.group(1)}'")
                score = int(m.group(1))
                lines = lines[:-1]
        found.append(("\n".join(lines).strip(), score))
    return found


def _read_typed_answer(stream):
    lines = []
    for line in iter(stream.readline, ""):
        if not line.strip():
            break
        lines.append(line.rstrip("\n"))
    return "\n".join(lines)


def _read_typed_score(stream):
    while True:
        print("Your score: 0 missed it, 1 partly, 2 fully (Enter to leave it unscored): ", end="", flush=True)
        line = stream.readline()
        if not line:
            return None  # end of input
        raw = line.strip()
        if raw == "":
            return None
        if raw in ("0", "1", "2"):
            return int(raw)
        print(f"'{raw}' is not a score; type 0, 1 or 2.")


def first_answer_for(answers, done):
    """The index of the question an answers file's first answer goes to.

    Normally the first question not yet answered: the candidate may have answered some at the keyboard.
    A file whose first answers are exactly those already recorded is the same file again, after an
    interrupted round: it answers every question from the first.
    """
    start = len(done)
    if start and len(answers) > start and all(answers[j][0] == (done[j].get("answer") or "") for j in range(start)):
        return 0
    return start


def ask(questions, done, record, answers=None, stream=None):
    """Asks questions[len(done):], calling record(entry) after each, so an interrupted round resumes.

    `answers` (from read_answers_file) replaces the keyboard. Its first answer goes to the first question
    not yet answered (the candidate may have answered some at the keyboard; see first_answer_for), and the
    round stops when the file runs out, leaving the rest for later.
    """
    stream = stream or sys.stdin
    total = len(questions)
    offset = first_answer_for(answers, done) if answers is not None else 0
    for i in range(len(done), total):
        q = questions[i]
        if answers is not None and i - offset >= len(answers):
            return
        print(f"\nQ{i + 1} of {total}: {q.text}")
        if answers is not None:
            given, score = answers[i - offset]
            print(f"Your answer: {given or '(left empty in the answers file)'}")
        else:
            print("Your answer (finish with an empty line):")
            given = _read_typed_answer(stream)
            score = None
        print(f"\nModel answer:\n{q.model}\n")
        if answers is None:
            score = _read_typed_score(stream)
        else:
            print(f"Your score: {'not given' if score is None else score}")
        record({"question": q.text, "model": q.model, "answer": given, "score": score,
                "needs_numbers": q.needs_numbers})
