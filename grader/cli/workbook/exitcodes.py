"""Exit codes shared by ./grade and the grader binary (README.md documents them)."""
PASS = 0
FAIL_CORRECTNESS = 1
FAIL_GATE = 2
FAIL_BUILD = 3
NO_GPU = 4
USAGE = 64

VERDICTS = {
    PASS: "pass",
    FAIL_CORRECTNESS: "fail-correctness",
    FAIL_GATE: "fail-gate",
    FAIL_BUILD: "fail-build",
    NO_GPU: "no-gpu",
}
