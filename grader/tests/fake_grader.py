#!/usr/bin/env python3
"""A stand-in for wb-grader in the interview tests (./grade runs it when WORKBOOK_GRADER names it).

It grades nothing: it replays reports a test wrote to $FAKE_GRADER_SCRIPT, a JSON object
  {"check": REPORT, "submits": [REPORT, ...]}
A run with --no-bench (a check) answers with "check", keeping only the cases whose name contains one of
the --cases texts (comma-separated); any other run (a submit) takes the next of "submits". Each run's arguments are appended
to $FAKE_GRADER_SCRIPT.log, one JSON list per line, so a test can see the seeds and filters it was given.
It exits with the code the verdict stands for, like the real grader.
"""
import json
import os
import sys

CODES = {"pass": 0, "fail-correctness": 1, "fail-gate": 2, "fail-build": 3, "no-gpu": 4}


def option(args, name):
    return args[args.index(name) + 1] if name in args else None


def main(args):
    script_path = os.environ["FAKE_GRADER_SCRIPT"]
    with open(script_path + ".log", "a", encoding="utf-8") as f:
        f.write(json.dumps(args) + "\n")
    with open(script_path, encoding="utf-8") as f:
        script = json.load(f)
    if "--no-bench" in args and script["check"]["verdict"] == "no-gpu":
        report, code = dict(script["check"]), CODES["no-gpu"]
    elif "--no-bench" in args:
        report = dict(script["check"])
        wanted = option(args, "--cases") or ""
        parts = [p for p in wanted.split(",") if p] or [""]
        report["cases"] = [c for c in report.get("cases", []) if any(p in c["name"] for p in parts)]
        if not report["cases"]:
            report.update(verdict="fail-correctness", reason="no case matches --cases " + wanted)
            code = 64
        else:
            failed = [c for c in report["cases"] if not c["passed"]]
            if report.get("verdict") in ("pass", "fail-correctness"):
                report["verdict"] = "fail-correctness" if failed else "pass"
                report["reason"] = f"{failed[0]['name']}: {failed[0]['detail']}" if failed else ""
            code = CODES[report["verdict"]]
    else:
        submits = script["submits"]
        if not submits:
            print("fake grader: no submit report left in the script", file=sys.stderr)
            return 99
        report = submits.pop(0)
        with open(script_path, "w", encoding="utf-8") as f:
            json.dump(script, f)
        code = CODES[report["verdict"]]
    report["seed"] = int(option(args, "--seed") or 0)
    print(f"fake grader: lesson {option(args, '--lesson')}: {report['verdict']} {report.get('reason', '')}")
    for c in report.get("cases", []):
        print(f"  {'pass' if c['passed'] else 'FAIL'}  {c['name']}")
    if option(args, "--json"):
        with open(option(args, "--json"), "w", encoding="utf-8") as f:
            json.dump(report, f)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
