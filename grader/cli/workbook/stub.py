"""The shipped stub of each exercise: comparing with it, and restoring it with a backup."""
import os
import subprocess
import time

from . import exitcodes, progress
from .lessons import ROOT, UsageError
from .progress import STATE_DIR


def shipped_stub(lesson):
    """The exercise file as committed at HEAD, or None outside a git checkout."""
    rel = os.path.relpath(lesson.exercise, ROOT)
    proc = subprocess.run(["git", "-C", ROOT, "show", f"HEAD:{rel}"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL)
    return proc.stdout if proc.returncode == 0 else None


def is_untouched(lesson):
    stub = shipped_stub(lesson)
    if stub is None:
        return True
    with open(lesson.exercise, "rb") as f:
        return f.read() == stub


def is_shipped_stub(lesson):
    """True only when the exercise is byte for byte the stub committed at HEAD (never guessed)."""
    stub = shipped_stub(lesson)
    if stub is None:
        return False
    with open(lesson.exercise, "rb") as f:
        return f.read() == stub


def reset_exercise(lesson):
    stub = shipped_stub(lesson)
    if stub is None:
        raise UsageError("cannot find the shipped stub: --reset needs a git checkout of the workbook "
                         "(it restores the file as committed at HEAD)")
    with open(lesson.exercise, "rb") as f:
        current = f.read()
    rel = os.path.relpath(lesson.exercise, ROOT)
    if current == stub:
        print(f"{rel} is already the shipped stub; nothing to do.")
        return exitcodes.PASS
    backup_dir = os.path.join(STATE_DIR, "backups", lesson.slug)
    os.makedirs(backup_dir, exist_ok=True)
    name = os.path.basename(lesson.exercise)
    backup = os.path.join(backup_dir, f"{time.strftime('%Y%m%d-%H%M%S')}-{name}")
    with open(backup, "wb") as f:
        f.write(current)
    with open(lesson.exercise, "wb") as f:
        f.write(stub)
    progress.record_reset(lesson, os.path.relpath(backup, ROOT))
    print(f"restored {rel} to the shipped stub.\nyour version is saved as {os.path.relpath(backup, ROOT)}")
    return exitcodes.PASS
