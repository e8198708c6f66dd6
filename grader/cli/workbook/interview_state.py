"""Where a running interview is kept, and its clock.

`.workbook/interview/current.json` names the running interview's workspace; the workspace's
`interview.json` holds everything else (start, limit, stages, every attempt, the answers). Both are
written atomically. A damaged or missing state file is an error that names the candidate's code
files, which are never touched.

The clock is the wall clock, or `WORKBOOK_NOW` (seconds since the epoch) where a test sets it.
"""
import glob
import json
import os
import time

from .lessons import ROOT
from .progress import STATE_DIR

INTERVIEW_DIR = os.path.join(STATE_DIR, "interview")
CURRENT = os.path.join(INTERVIEW_DIR, "current.json")
HISTORY = os.path.join(INTERVIEW_DIR, "history.jsonl")
STATE_NAME = "interview.json"
VERSION = 2


class StateError(Exception):
    """The interview's state cannot be read; the message names the file and the candidate's code."""


def now():
    fake = os.environ.get("WORKBOOK_NOW")
    if fake:
        try:
            return float(fake)
        except ValueError:
            raise StateError(f"WORKBOOK_NOW must be seconds since the epoch, not '{fake}'")
    return time.time()


def show(path):
    """A path as the candidate would type it: relative inside the workbook, absolute outside."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel


def write_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def code_files(workspace=None):
    """The candidate's code in one workspace, or in every workspace when none is known."""
    pattern = os.path.join(workspace or os.path.join(INTERVIEW_DIR, "*"), "*.c[up]*")
    return sorted(p for p in glob.glob(pattern) if p.endswith((".cu", ".cpp")))


def _damaged(path, why, workspace=None):
    files = code_files(workspace)
    where = ("Your code is untouched: " + ", ".join(show(f) for f in files) + "."
             if files else "No code file was found beside it.")
    return StateError(f"the interview's state file {show(path)} {why}. {where} "
                      f"Drop the broken interview with ./grade interview abandon (your files stay where they are), "
                      f"then start a new one; your code can be pasted into its file.")


def running():
    """The running interview's state, None when none is running; StateError when it cannot be read."""
    if not os.path.exists(CURRENT):
        return None
    try:
        with open(CURRENT, encoding="utf-8") as f:
            pointer = json.load(f)
        workspace = pointer["workspace"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise _damaged(CURRENT, f"is damaged ({type(e).__name__}: {e})")
    path = os.path.join(workspace, STATE_NAME)
    if not os.path.exists(path):
        raise _damaged(path, "is missing", workspace if os.path.isdir(workspace) else None)
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
        for key in ("lesson", "minutes", "started", "stages", "attempts", "phase"):
            state[key]
    except (OSError, ValueError, KeyError, TypeError) as e:
        why = f"lacks '{e.args[0]}'" if isinstance(e, KeyError) else f"is damaged ({type(e).__name__}: {e})"
        raise _damaged(path, why, workspace)
    state["workspace"] = workspace
    return state


def save(state):
    write_json(os.path.join(state["workspace"], STATE_NAME), state)


def set_running(workspace):
    write_json(CURRENT, {"workspace": workspace})


def clear_running():
    if os.path.exists(CURRENT):
        os.remove(CURRENT)


def set_aside_damaged():
    """Moves a damaged current.json out of the way (kept, renamed) so a new interview can start."""
    aside = f"{CURRENT}.damaged-{time.strftime('%Y%m%d-%H%M%S')}"
    os.replace(CURRENT, aside)
    return aside


def elapsed(state, at=None):
    return (now() if at is None else at) - state["started"]


def left(state, at=None):
    return state["minutes"] * 60 - elapsed(state, at)


def fmt(seconds):
    sign = "-" if seconds < 0 else ""
    seconds = abs(int(round(seconds)))
    return f"{sign}{seconds // 60}:{seconds % 60:02d}"


def clock_line(state):
    """The clock, shown by every command: elapsed, left, and a warning near or past the end."""
    e, l = elapsed(state), left(state)
    head = f"[{state['lesson']} interview: {fmt(e)} of {state['minutes']}:00"
    if l < 0:
        return f"{head}; OVER TIME by {fmt(-l)}]"
    if l <= 300:
        return f"{head}; only {fmt(l)} left]"
    return f"{head}; {fmt(l)} left]"


def history():
    """(entries, number of damaged lines): one damaged line must not hide the others."""
    try:
        with open(HISTORY, encoding="utf-8") as f:
            lines = [line for line in f if line.strip()]
    except OSError:
        return [], 0
    entries, damaged = [], 0
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            entry = None
        if isinstance(entry, dict) and "lesson" in entry:
            entries.append(entry)
        else:
            damaged += 1
    return entries, damaged


def append_history(entry):
    os.makedirs(INTERVIEW_DIR, exist_ok=True)
    with open(HISTORY, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")
