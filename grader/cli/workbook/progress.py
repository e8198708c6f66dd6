"""The learner's progress and hint counters, kept in .workbook/ (git-ignored)."""
import json
import os
import time

from .lessons import ROOT

STATE_DIR = os.environ.get("WORKBOOK_STATE_DIR", os.path.join(ROOT, ".workbook"))


def _path(name):
    return os.path.join(STATE_DIR, name)


def load(name):
    try:
        with open(_path(name), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def save(name, data):
    os.makedirs(STATE_DIR, exist_ok=True)
    tmp = _path(name) + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
    os.replace(tmp, _path(name))


def record_result(lesson, verdict, source):
    data = load("progress.json")
    entry = data.get(lesson.name, {})
    entry.update({"last": verdict, "when": time.strftime("%Y-%m-%d %H:%M"), "source": source})
    if verdict == "pass":
        entry["passed"] = True
        entry["passed_when"] = entry["when"]
        entry.pop("reset", None)
    data[lesson.name] = entry
    save("progress.json", data)


def record_reset(lesson, backup):
    """--reset put the stub back; `backup` is where the learner's version went."""
    data = load("progress.json")
    entry = data.get(lesson.name, {})
    entry["reset"] = {"when": time.strftime("%Y-%m-%d %H:%M"), "backup": backup}
    data[lesson.name] = entry
    save("progress.json", data)


def status(lesson):
    return load("progress.json").get(lesson.name, {})
