"""The files a candidate edits: the bare stub of the first stage, and each follow-up stage's file
(the candidate's passing code carried over, with the next lesson's entry point added, empty)."""
import re

from .interview_content import contract, _section


def _includes(lesson):
    if lesson.needs_gpu:
        return ["#include <cuda_runtime.h>", "#include <cuda_fp16.h>", "#include <cuda_bf16.h>", "#include <cstdint>"]
    return ["#include <cstdint>", "#include <cmath>"]


def _body(statement):
    """An empty body for the declaration `statement` (its text up to the closing parenthesis)."""
    if re.search(r"\bvoid\s+\w+\s*\($", statement.split("(")[0] + "(", flags=re.M):
        return " {\n    // Your implementation.\n}"
    if re.search(r"\bcudaError_t\s+\w+\s*\($", statement.split("(")[0] + "(", flags=re.M):
        return " {\n    // Your implementation.\n    return cudaErrorNotYetImplemented;\n}"
    return " {\n    // Your implementation.\n    return {};\n}"


def entry_point_stub(lesson):
    """The contract with empty bodies: it compiles and fails every case.

    Every function declared in the contract gets a body (lesson 9 declares three); the last one
    also closes the namespace.
    """
    decl = contract(lesson).rstrip() + "\n"
    ends = [m for m in re.finditer(r"\);[ \t]*(//[^\n]*)?(?=\n)", decl)]
    out, pos = [], 0
    for i, m in enumerate(ends):
        start = max(decl.rfind(ch, 0, m.start()) for ch in ";{}") + 1
        body = _body(decl[start:m.start() + 1])
        out.append(decl[pos:m.start()] + ")" + body)
        pos = m.end()
        if i == len(ends) - 1:
            rest = decl[pos:]
            if re.fullmatch(r"\s*\n\}\s*", rest):
                out.append("\n\n}  // namespace")
                pos = len(decl)
    out.append(decl[pos:])
    return "".join(out)


def extension(lesson):
    return ".cu" if lesson.needs_gpu else ".cpp"


def bare_stub(lesson, minutes):
    return (f"// Mock interview: {lesson.name}, {lesson.title}. You have {minutes} minutes.\n"
            f"// Edit this file. Try it: ./grade interview check    Final answer: ./grade interview submit\n"
            + "\n".join(_includes(lesson)) + "\n\n" + entry_point_stub(lesson) + "\n")


def stage_file(number, lesson, previous_code):
    """Stage `number`'s file: the code that passed the previous stage, then the new entry point.

    The earlier code stays so its helpers (reductions, vector loads) can be reused; it lives in its
    own lesson's namespace, so it never collides with the new entry point.
    """
    return (f"// Mock interview, stage {number}: {lesson.name}, {lesson.title}.\n"
            f"// Your code from the previous stage is kept below; the new entry point is at the end.\n"
            f"// Try it: ./grade interview check    Final answer: ./grade interview submit\n\n"
            + previous_code.rstrip() + "\n\n"
            f"// ---- stage {number}: the new entry point ----\n"
            + "\n".join(_includes(lesson)) + "\n\n" + entry_point_stub(lesson) + "\n")


# What an interviewer says first, whatever the lesson: the operator and its formula. Every lesson is
# this operator (lesson 9 adds LayerNorm, lesson 10 is its backward pass, lesson 11 quantises its output);
# the lesson's own statement of the task follows.
OPERATOR = ("Interviewer: the operator is RMSNorm, the normalisation in front of nearly every block of a "
            "transformer. For every row r of an input x with n = cols columns, and a weight w shared by all rows:")
FORMULA = "    y[r, c] = x[r, c] / sqrt((x[r, 0]^2 + x[r, 1]^2 + ... + x[r, n-1]^2) / n + eps) * w[c]"


def _blocks(text):
    """A Markdown text as [(kind, text)]: ("code", body) for fenced blocks, ("prose", paragraph) otherwise."""
    out = []
    for i, part in enumerate(re.split(r"^```[^\n]*\n(.*?)^```[ \t]*$", text, flags=re.S | re.M)):
        if i % 2:
            out.append(("code", part.rstrip()))
        else:
            out += [("prose", " ".join(p.split())) for p in re.split(r"\n\s*\n", part) if p.strip()]
    return out


def _without_file_names(paragraph):
    """The lesson's sentence about where the task lives, without the exercise file (the candidate's
    file is the interview's own); a header the contract comes from is named in a sentence of its own."""
    header = re.search(r"against the header (`[^`]+`)", paragraph)
    text = re.sub(r",?\s*\b[Ii]n `exercises/[^`]*`(?:, the only file you edit)?(?:,?\s*against the header `[^`]*`)?,?",
                  "", paragraph)
    text = re.sub(r"\s+([,.:])", r"\1", text).strip()
    if header:
        colon = text.endswith(":")
        text = text.rstrip(":").rstrip(".") + f". The contract is declared in {header.group(1)}" + (":" if colon else ".")
    return text


def task(lesson):
    """The lesson's 'What you build' up to its `make` line, as the interviewer states it: the prose and
    the formula blocks, without the contract (shown on its own) and without file names."""
    contract_text = contract(lesson)
    out, pending = [], ""
    blocks = _blocks(_section(lesson, "What you build"))
    for i, (kind, text) in enumerate(blocks):
        if kind == "code":
            if text.lstrip().startswith(("make ", "./grade")):
                break  # how to build and grade the lesson: the interview has its own commands
            if text.strip() == contract_text.strip():
                continue
            out.append("\n".join("    " + l if l.strip() else "" for l in text.splitlines()))
            continue
        text = _without_file_names(text)
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        if text.endswith(":") and not (following and following[0] == "code"
                                       and following[1].strip() != contract_text.strip()):
            # It introduced the contract, which comes later: it opens the next paragraph instead.
            pending = (pending + " " + text[:-1].rstrip() + ".").strip()
            continue
        if text:
            out.append((pending + " " + text).strip())
            pending = ""
    if pending:
        out.append(pending)
    if out and not out[0].startswith("    "):
        first = out[0]
        word = first.split(" ", 1)[0]
        if word[1:].islower() or len(word) == 1:
            first = first[0].lower() + first[1:]  # "One C++ function" -> "one C++ function"; "RMSNorm" stays
        out[0] = "Your task: " + first
    return "\n\n".join(out)


def prompt(lesson, minutes):
    """The interviewer's opening: the operator and its formula, the task, the contract, and the rules."""
    gpu = ("Correctness comes first; then your kernel is timed against the reference solution in the "
           "same process, and it must reach the lesson's share of the reference's bandwidth."
           if lesson.needs_gpu else "It is graded on the CPU for correctness.")
    return (f"{OPERATOR}\n\n{FORMULA}\n\n{task(lesson)}\n\n"
            f"The contract (your file declares it, with empty bodies):\n\n{contract(lesson)}\n\n"
            f"Any valid input must work: think about sizes, tails, alignment and edge cases before you write code. "
            f"{gpu} You have {minutes} minutes; the clock is running. Run the cases I would run with you as "
            f"often as you like with ./grade interview check; ./grade interview submit is your final answer, "
            f"graded on every case with inputs you have not seen.")
