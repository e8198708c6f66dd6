#!/usr/bin/env python3
"""The board's remote timing against the one-process figure, on one GPU, for one lesson's reference.

  python3 bench/remote_timing.py --lesson 4 --out DIR [--rounds 2] [--samples 5] [--clocks grouped,stream,wall]

Each round grades the reference against itself three ways, one after the other on the same GPU:
in one process (`./grade`'s timing: CUDA events around the launch), and from outside as the board
does (the reference's code in a `wb-grader --serve` process) with each remote clock asked for:
`grouped` (the board's: the grader's own events around each of the one-process timing's groups of
launches, the other process gated on the GPU, less the gate's own time), `stream` (the same events
around the whole batch, nothing taken off: the clock before the groups) and `wall` (the grader's wall
clock from sending a batch to its answer, the clock before issue 32). Only the gate's timing runs
(one small case, then the benchmark shapes). Writes DIR/remote-timing.md and .json: per shape, the
median GB/s of each way over the rounds and the ratio to the one-process figure; the clocks NVML
read while timing; and, from the gated clocks' diagnostic lines, where a batch's time goes.
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIB = 1024 * 1024
DIAG = re.compile(r"remote-diag side=(\d+) calls=(\d+) groups=(\d+) clock_ms=([\d.]+) their_events_ms=([\d.]+) "
                  r"gate_ms=([\d.]+) own_ms=([\d.]+) send_to_done_ms=([\d.]+)")


def _grader_and_library(build, lesson_name):
    with open(os.path.join(build, "workbook_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    return cfg["grader"], os.path.join(cfg["lib_dir"], f"{lesson_name}_reference.so")


def call_limits(timeout):
    """(call timeout, batch phase seconds) for a run killed after `timeout` s: a hung call, and then the
    batch watchdog's phase after it, end the run with their message well before the kill."""
    call = max(5, min(30, (timeout - 20) // 4))
    return call, call + 5


def _env(device, clock=None, trace=True, timeout=300):
    env = dict(os.environ, CUDA_DEVICE_ORDER="PCI_BUS_ID")
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(device)
    if clock:
        env["WORKBOOK_REMOTE_CLOCK"] = clock
        env["WORKBOOK_REMOTE_DIAG"] = "1"
        # Both processes print each phase of a timed batch (stderr, kept in the run's log).
        if trace:
            env["WORKBOOK_REMOTE_TRACE"] = "1"
        env["WORKBOOK_REMOTE_PHASE_SECONDS"] = str(call_limits(timeout)[1])
    return env


def one_process(grader, lib, lesson, args, path, log):
    cmd = [grader, "--lesson", str(lesson), "--student", lib, "--reference", lib, "--cases", args.cases,
           "--samples", str(args.samples), "--json", path]
    return subprocess.run(cmd, env=_env(args.device), stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout).returncode


def remote(grader, lib, lesson, args, clock, path, log):
    """As `./grade --remote` does: the library served by a second process behind a socket."""
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    env = _env(args.device, clock, trace=args.trace, timeout=args.timeout)
    host = subprocess.Popen([grader, "--serve", str(theirs.fileno()), "--lesson", str(lesson), "--student", lib],
                            pass_fds=(theirs.fileno(),), env=env, stdout=log, stderr=subprocess.STDOUT)
    theirs.close()
    cmd = [grader, "--lesson", str(lesson), "--remote-student", str(mine.fileno()), "--reference", lib, "--cases",
           args.cases, "--samples", str(args.samples), "--watchdog", str(call_limits(args.timeout)[0]), "--json", path]
    try:
        return subprocess.run(cmd, env=env, pass_fds=(mine.fileno(),), stdout=log, stderr=subprocess.STDOUT,
                              timeout=args.timeout).returncode
    finally:
        mine.close()
        try:
            host.wait(timeout=10)
        except subprocess.TimeoutExpired:
            host.kill()
            host.wait()


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _diag(log_path):
    """{calls: [(groups, clock, their events, gate, own, send to done) ms, ...]} from a stream run's log."""
    out = {}
    with open(log_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = DIAG.search(line)
            if m and m.group(1) == "0":  # the student side (the reference served as a student)
                out.setdefault(int(m.group(2)), []).append(tuple(float(m.group(i)) for i in range(3, 9)))
    return out


def run(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lesson", default="4")
    p.add_argument("--out", required=True)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--samples", type=int, default=5)
    p.add_argument("--clocks", default="grouped,stream")
    p.add_argument("--device", help="the GPU (CUDA_VISIBLE_DEVICES, PCI order)")
    p.add_argument("--cases", default="bench_128x4096", help="the correctness cases run first (--cases of the grader)")
    p.add_argument("--timeout", type=int, default=300,
                   help="seconds before a run is killed; the grader's call timeout and batch watchdog end a hang "
                        "well before it")
    p.add_argument("--no-trace", dest="trace", action="store_false",
                   help="no WORKBOOK_REMOTE_TRACE lines from the remote runs (on by default)")
    p.add_argument("--build", default=os.environ.get("WORKBOOK_BUILD_DIR", os.path.join(ROOT, "build")))
    args = p.parse_args(argv)
    lesson = int(args.lesson.replace("lesson", ""))
    grader, lib = _grader_and_library(args.build, f"lesson{lesson}")
    os.makedirs(args.out, exist_ok=True)
    ways = ["one-process"] + [f"remote-{c}" for c in args.clocks.split(",") if c]
    reports = {w: [] for w in ways}
    diags = {}
    seconds = {w: [] for w in ways}
    for r in range(1, args.rounds + 1):
        for way in ways:
            path = os.path.join(args.out, f"{way}-r{r}.json")
            log_path = os.path.join(args.out, f"{way}-r{r}.log")
            start = time.monotonic()
            with open(log_path, "w", encoding="utf-8") as log:
                try:
                    code = one_process(grader, lib, lesson, args, path, log) if way == "one-process" else \
                        remote(grader, lib, lesson, args, way.split("-", 1)[1], path, log)
                except subprocess.TimeoutExpired:  # the grader was killed; the other ways still run
                    code = f"killed after --timeout {args.timeout} s"
            seconds[way].append(time.monotonic() - start)
            report = _read(path)
            print(f"round {r}, {way}: exit {code}, {seconds[way][-1]:.1f} s"
                  + (f", {report.get('verdict')}" if report else ", no report"), flush=True)
            if report:
                reports[way].append(report)
            if way in ("remote-grouped", "remote-stream"):
                for calls, rows in _diag(log_path).items():
                    diags.setdefault(way, {}).setdefault(calls, []).extend(rows)
    table = summarise(reports, ways)
    data = {"lesson": lesson, "rounds": args.rounds, "samples": args.samples, "ways": ways, "rows": table,
            "clocks": {w: [rep.get("clocks") for rep in reports[w]] for w in ways},
            "remote_clock": {w: [rep.get("remote_clock") for rep in reports[w]] for w in ways},
            "seconds": seconds, "diag": {w: {str(k): v for k, v in d.items()} for w, d in diags.items()},
            "gpu": next((rep.get("gpu") for w in ways for rep in reports[w]), "")}
    with open(os.path.join(args.out, "remote-timing.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
    text = markdown(data, diags)
    with open(os.path.join(args.out, "remote-timing.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 0 if all(reports[w] for w in ways) else 1


def summarise(reports, ways):
    """Per shape: the median GB/s of each way over its rounds, and each remote way's ratio to one process."""
    rows = {}
    for way in ways:
        for rep in reports[way]:
            for b in rep.get("bench", []):
                key = (b["shape"], b["dtype"])
                row = rows.setdefault(key, {"shape": b["shape"], "dtype": b["dtype"], "mib": b.get("bytes", 0) / MIB})
                row.setdefault(way, []).append(b["student_gbps"])
    out = []
    for row in rows.values():
        for way in ways:
            row[way] = statistics.median(row[way]) if row.get(way) else 0.0
        for way in ways[1:]:
            row[f"{way}/one"] = row[way] / row["one-process"] if row["one-process"] else 0.0
        out.append(row)
    return sorted(out, key=lambda r: -r["mib"])


def _geomean(values):
    values = [v for v in values if v > 0]
    return statistics.geometric_mean(values) if values else 0.0


def markdown(data, diags):
    ways = data["ways"]
    lines = [f"# Remote timing against one process: lesson {data['lesson']}'s reference, {data['gpu']}", "",
             f"{data['rounds']} round(s), {data['samples']} samples a shape; the median of the rounds. "
             "Ratios are remote / one-process GB/s.", "",
             "| " + " | ".join(["shape", "dtype", "MiB moved"] + [f"{w} GB/s" for w in ways]
                               + [f"{w} / one" for w in ways[1:]]) + " |",
             "|---|---|---:|" + "---:|" * (2 * len(ways) - 1)]
    for r in data["rows"]:
        lines.append("| " + " | ".join([r["shape"], r["dtype"], f"{r['mib']:.0f}"] + [f"{r[w]:.0f}" for w in ways]
                                       + [f"{r[w + '/one']:.3f}" for w in ways[1:]]) + " |")
    large = [r for r in data["rows"] if r["mib"] >= 64]
    for w in ways[1:]:
        ratios = [r[w + "/one"] for r in large]
        if ratios:
            worst = max(ratios, key=lambda x: abs(x - 1))
            lines.append(f"\n{w}, shapes of 64 MiB or more: geometric mean {_geomean(ratios):.3f} of the one-process "
                         f"figure, the farthest {worst:.3f} ({len(ratios)} shapes).")
    lines.append("\nClocks while timing (NVML, median SM / memory MHz per run):")
    for w in ways:
        shown = [f"{c['sm_mhz']:.0f}/{c['mem_mhz']:.0f}" if c and c.get("samples") else (c or {}).get("note", "none")
                 for c in data["clocks"][w]]
        lines.append(f"- {w}: " + ", ".join(shown))
    for way, per_calls in sorted(diags.items()):
        lines += ["", f"Where a {way} batch's time goes (medians per batch, ms): the grader's clocks summed over the "
                  "batch's groups; the gate's own time taken off them (measured by empty groups through the "
                  "reference's process; none for remote-stream); the serving process's own events around its "
                  "launches (not trusted, a diagnostic); the grader's own work between the clocks (L2 clears); and "
                  "the wall time from sending the batch to its last answer.", "",
                  "| launches a batch | groups | batches | clocks | gate | clocks − gate | their events | own work "
                  "| send to done |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for calls in sorted(per_calls):
            rows = per_calls[calls]
            med = [statistics.median(x[i] for x in rows) for i in range(6)]
            net = statistics.median(x[1] - x[3] for x in rows)
            lines.append(f"| {calls} | {med[0]:.0f} | {len(rows)} | {med[1]:.3f} | {med[3]:.3f} | {net:.3f} | "
                         f"{med[2]:.3f} | {med[4]:.3f} | {med[5]:.3f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(run())
