"""Processes a submission starts beside its grading: named in the row, never waited for.

A grading's own processes (the grader in the sandbox, the host of the remote grading) start none, so
any other process in the sandbox was started by the submission's code. The sandbox ends it with the
grading as soon as the verdict is in. Its row says so (`left a process running`) and keeps the verdict
it had; figures are kept only when nothing ran beside the timing, and only such a row is ranked.
"""

LEFT = "left a process running"

# Statuses that say why a grading was stopped: everything in it was ended on purpose, and that is the name.
_STOPPED = ("time limit", "memory limit", "output limit", "file size limit", "process limit", "crashed",
            "exited during grading", "report tampered", "board error", "compile")


def _names(processes, limit=3):
    shown = ", ".join(p.describe() for p in processes[:limit])
    return shown + (f" and {len(processes) - limit} more" if len(processes) > limit else "")


def _when(processes):
    first = min(p.at for p in processes)
    return f"{first:.1f} s into the grading"


def name_leftovers(result, first, remote=(), timing="none", after=()):
    """Updates a row (`result`) for the processes seen beside its gradings.

    `first`: what ran beside the first grading (the submission's code in the grader's process);
    `remote`: what the host's code started before the remote grading's verdict; `timing`: "taken" when
    the remote grading timed the kernel, "skipped" when it left the timing out because of `first`,
    "none" when nothing is timed (lesson 1, or no remote grading); `after`: what the host's code
    started once that verdict was in (the verdict and figures stand). Returns the row."""
    beside = list(first) + list(remote)
    if not beside and after:
        result["beside"] = [{"process": p.describe(), "at_s": p.at, "left_running": True} for p in after]
        result["status"] = f"{result.get('status', '')}, {LEFT}"
        result["detail"] = (f"{_names(list(after))} started after the verdict and was ended with the sandbox"
                            + (f" | {result['detail']}" if result.get("detail") else ""))
        return result
    if not beside:
        return result
    left = [p for p in beside if p.alive_at_end]
    result["beside"] = [{"process": p.describe(), "at_s": p.at, "left_running": p.alive_at_end} for p in beside]
    if timing == "taken" and remote:
        # Its process ran while the clock did: the figures are not the kernel's alone.
        result["bench"] = []
        result["clean"] = False
        result["not_timed"] = "its timing is not kept: a process it started ran beside it"
    elif timing == "skipped":
        result["clean"] = False
        result["not_timed"] = "not timed: the process it started would have run beside the timing"
    status = result.get("status", "")
    if status.startswith(_STOPPED):
        result["detail"] = (result.get("detail") or "") + f" | processes it started: {_names(beside)}"
        return result
    if not left:
        note = f"a process it started ran beside the grading ({_names(beside)}, from {_when(beside)})"
        result["detail"] = note + (f" | {result['detail']}" if result.get("detail") else "")
        return result
    verdict = status if status.startswith("correct") or not result.get("detail") else \
        f"{status}: {result['detail']}"
    result["status"] = LEFT
    result["detail"] = (f"{_names(left)}, started {_when(left)}, was still running at the verdict and was ended "
                        f"with the sandbox. The grading's verdict: {verdict}"
                        + (f" ({result['not_timed']})" if result.get("not_timed") else ""))
    return result
