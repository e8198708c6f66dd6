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


def prompt(lesson, minutes):
    """The interviewer's opening: the lesson's first paragraph, the contract, and the rules of the clock."""
    # Code blocks go first: a blank line inside one would otherwise make its second half a "paragraph".
    what = re.sub(r"```.*?```", "", _section(lesson, "What you build"), flags=re.S)
    prose = [p for p in re.split(r"\n\s*\n", what)
             if not p.lstrip().startswith(("```", "make ", "./grade", "    ")) and "exercises/" not in p
             and not p.rstrip().endswith(":")]
    first = " ".join(prose[0].split()) if prose else ""
    gpu = ("Correctness comes first; then your kernel is timed against the reference solution in the "
           "same process, and it must reach the lesson's share of the reference's bandwidth."
           if lesson.needs_gpu else "It is graded on the CPU for correctness.")
    return (f"Interviewer: implement this entry point. {first}\n\n{contract(lesson)}\n\n"
            f"Any valid input must work: think about sizes, tails, alignment and edge cases before you write code. "
            f"{gpu} You have {minutes} minutes; the clock is running. Run the cases I would run with you as "
            f"often as you like with ./grade interview check; ./grade interview submit is your final answer, "
            f"graded on every case with inputs you have not seen.")
