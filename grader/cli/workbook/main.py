"""./grade: the workbook's one command.

  ./grade                      the lessons, with your progress
  ./grade lessonN              build your exercise (what is stale) and grade it
  ./grade lessonN --hint       the next hint (they escalate)
  ./grade lessonN --watch      re-grade every time you save the exercise
  ./grade lessonN --reset      restore the stub (your file is backed up first)
  ./grade lessonN --source F   grade any file written against the lesson's contract
  ./grade lessonN --profile    Nsight Compute: your kernel next to the reference's (explains the gate)

  ./grade interview lessonN|random [--minutes M]   a timed mock interview in stages, on a bare stub
  ./grade interview check | submit | questions [--answers FILE] [--end-coding] | status | report | history | abandon

  ./grade leaderboard lessonN DIR [--out DIR]   grade and rank every student's file in DIR
  ./grade leaderboard merge lessonN RESULTS     rank results collected by a Slurm job array
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time

from . import exitcodes, hints, live, profile, progress
from .build import BuildError, compile_source, grader_command, library
from .lessons import ROOT, UsageError, all_lessons, find_lesson
from . import emulated, interview, leaderboard, traffic
from .board.grading import BoardLimits
from .interview_state import StateError
from .stub import reset_exercise, is_untouched, is_shipped_stub


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message}. Run ./grade --help for the options.")


def _parser():
    p = _Parser(prog="./grade", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                epilog="Exit codes: 0 passed, 1 failed correctness, 2 failed the gate, 3 did not build, "
                       "4 no usable GPU (or another environment problem), 64 wrong usage.")
    p.add_argument("lesson", nargs="?", help="lesson1, lesson2, ... (./grade alone lists them)")
    p.add_argument("--source", metavar="FILE", help="grade FILE instead of the lesson's exercise")
    p.add_argument("--seed", help="reproduce a run's inputs (each run prints its seed)")
    p.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    p.add_argument("--no-bench", action="store_true", help="correctness only, skip the timing gate")
    p.add_argument("--cases", metavar="TEXT", help="run only the cases whose name contains TEXT (several: TEXT,TEXT; =NAME: exactly NAME)")
    p.add_argument("--fail-fast", action="store_true",
                   help="stop at the first failing case (the cases run smallest first); the rest are listed as not run")
    p.add_argument("--samples", type=int, help="timed samples per kernel and shape (default 15)")
    p.add_argument("--full-bench", action="store_true", help="time every shape of the seed table")
    p.add_argument("--hint", action="store_true", help="show the next hint for the lesson")
    p.add_argument("--watch", action="store_true", help="re-grade whenever the file is saved (Ctrl-C stops)")
    p.add_argument("--reset", action="store_true", help="restore the shipped stub, backing up your file")
    p.add_argument("--sanitize", action="store_true",
                   help="re-run the cases under compute-sanitizer (memcheck, racecheck, synccheck)")
    p.add_argument("--build-only", action="store_true", help="build the submission, do not grade it")
    p.add_argument("--profile", action="store_true",
                   help="profile your kernel and the reference's with Nsight Compute (ncu) at one benchmark shape "
                        "and show them side by side; the verdict is not changed")
    p.add_argument("--shape", metavar="SHAPE", help="with --profile: the benchmark shape, e.g. 32768x4096 or "
                                                    "32768x4096/bf16 (default: the gate shape that moves the most bytes)")
    p.add_argument("--clock-control", choices=("none", "base"), default="none",
                   help="with --profile: ncu's clock control (default none: the GPU's own clocks, as the gate is timed)")
    p.add_argument("--profile-raw", metavar="DIR", help=argparse.SUPPRESS)
    # Said by a caller that knows the file is a stub it wrote (the interview's bare stub), so the
    # grader's reason starts with "still the stub:" whatever the stub does.
    p.add_argument("--untouched-stub", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--emulate", action="store_true",
                   help="grade correctness on the CPU emulator even where a GPU is present (lessons 2-11; "
                        "without a GPU this is what happens anyway)")
    p.add_argument("--remote", action="store_true",
                   help="run your code in a process of its own, as the leaderboard grades it: outputs are "
                        "checked and timed from the grader's process (the checks that need your launches in "
                        "the grader's process, stream capture and the PDL chain, are not made)")
    p.add_argument("--watch-rounds", type=int, default=0, help=argparse.SUPPRESS)
    return p


def list_lessons():
    print("RMSNorm kernel workbook: the lessons\n")
    for lesson in all_lessons():
        st = progress.status(lesson)
        if st.get("passed") and st.get("reset") and is_untouched(lesson):
            # The pass was real, but the file it was earned with is in the backups now.
            state = f"passed earlier; the file was reset ({st['reset'].get('when', '')})"
        elif st.get("passed"):
            state = "passed"
        elif st.get("last") == "no-gpu":
            state = f"built, not graded: needs a GPU ({st.get('when', '')})"
        elif st.get("last"):
            state = f"{st['last']} ({st.get('when', '')})"
        elif not is_untouched(lesson):
            state = "in progress"
        else:
            state = "not started"
        where = "CPU" if not lesson.needs_gpu else "GPU"
        print(f"  {lesson.name:<8} {lesson.title:<44} {where}  {state}")
    todo = next((l for l in all_lessons() if not progress.status(l).get("passed")), None)
    if todo:
        print(f"\nNext: edit {os.path.relpath(todo.exercise, ROOT)}, then  make {todo.name} && ./grade {todo.name}")
    print("Help: ./grade --help   Hints: ./grade lessonN --hint")
    return exitcodes.PASS


def _write_build_failure(args, lesson, source, message):
    if not args.json:
        return
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump({"lesson": lesson.name, "source": source, "verdict": "fail-build", "reason": message,
                   "cases": [], "bench": [], "gpu": "", "seed": None}, f, indent=2)


def _sanitize(cmd):
    tool = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.path.exists(tool):
        print("compute-sanitizer was not found (it ships with the CUDA toolkit, in /usr/local/cuda/bin)")
        return exitcodes.NO_GPU
    worst = exitcodes.PASS
    for check in ("memcheck", "racecheck", "synccheck"):
        print(f"\n--- compute-sanitizer --tool {check} (small cases only, no timing) ---", flush=True)
        code = subprocess.call([tool, "--tool", check, "--error-exitcode", "86", "--print-limit", "10",
                                *cmd, "--no-bench", "--small", "--watchdog", "600"])
        if code == 86:
            print(f"{check}: found problems (listed above)")
            worst = exitcodes.FAIL_CORRECTNESS
        elif code != 0:
            worst = max(worst, code) if worst == exitcodes.PASS else worst
        else:
            print(f"{check}: clean")
    return worst


def _grade_emulated(lesson, args, source, shown):
    """Correctness on the CPU emulator: the learner's file compiled with g++, no GPU needed."""
    print(f"building {lesson.name} ({shown}) for the CPU emulator ...", flush=True)
    status = live.StatusLine()
    try:
        live.build_targets("wb-grader-emu", label="the CPU emulator's grader", status=status)
        with live.activity(f"compiling {shown} for the CPU emulator (g++; a minute the first time)", status):
            lib = emulated.compile_for_emulator(lesson, source, shown)
    except BuildError as e:
        print(f"\n{e}:\n\n{e.output}\n" if e.output else f"\n{e}\n")
        print(f"{lesson.name}: did not build. Fix the first error above, then run ./grade {lesson.name} again.")
        _write_build_failure(args, lesson, shown, f"{e}\n{e.output}")
        progress.record_result(lesson, "fail-build", shown)
        return exitcodes.FAIL_BUILD
    if args.build_only:
        print(f"built {lib}")
        return exitcodes.PASS
    if args.sanitize:
        print("--sanitize runs compute-sanitizer on a GPU; the emulator checks races, barriers and memory on every run")
    untouched = args.untouched_stub or (not args.source and is_shipped_stub(lesson))
    reference = traffic_file = None
    if emulated.wants_traffic(args) and lesson.solution:
        # The traffic report puts the reference's figures beside the submission's: the reference is
        # compiled for the emulator too (cached by its content, so once).
        try:
            with live.activity("compiling the reference for the traffic report (once)", status):
                reference = emulated.compile_for_emulator(lesson, lesson.solution, os.path.relpath(lesson.solution, ROOT))
            traffic_file = os.path.join(os.path.dirname(lib), f"traffic-{lesson.name}-{os.getpid()}.json")
        except BuildError:
            reference = None
    code = live.run_grader(emulated.grader_command(lesson, lib, shown, args, untouched, reference, traffic_file),
                           status)
    if traffic_file and os.path.exists(traffic_file):
        if code == exitcodes.PASS:
            traffic.report(traffic_file, args.json)
        os.remove(traffic_file)
    # A pass here is correctness only: the lesson counts as passed once the gate passes on a GPU.
    progress.record_result(lesson, "pass (CPU emulator; gate not run)" if code == exitcodes.PASS
                           else exitcodes.VERDICTS.get(code, "error"), shown)
    if code == exitcodes.FAIL_CORRECTNESS:
        print(f"\nStuck? ./grade {lesson.name} --hint shows the next hint; "
              f"lessons/{lesson.slug}/README.md explains the checks.")
    elif code == exitcodes.PASS:
        print(f"\n{lesson.name}: {emulated.LABEL}. On a machine with a CUDA GPU, ./grade {lesson.name} also runs the gate.")
    return code


def _use_emulator(lesson, args):
    if not lesson.needs_gpu or args.profile:  # a profile reads the GPU's counters: there is nothing to emulate
        return False
    missing = emulated.missing_headers(lesson)
    if missing:  # built with nvcc; without a GPU the grader says the lesson needs one
        if args.emulate:
            raise UsageError(f"{lesson.name} cannot run on the CPU emulator: it needs {', '.join(missing)}, which "
                             "the emulator does not provide. Grade it on a machine with a CUDA GPU.")
        return False
    if args.emulate:
        return True
    return not emulated.gpu_present() and os.path.exists(emulated.CONFIG)


def _call_remote(cmd):
    """Runs the grader with the library in a second process (`wb-grader --serve`) behind a socket."""
    at = cmd.index("--student")
    lib = cmd[at + 1]
    lesson = cmd[cmd.index("--lesson") + 1]
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    host = subprocess.Popen([cmd[0], "--serve", str(theirs.fileno()), "--lesson", lesson, "--student", lib],
                            pass_fds=(theirs.fileno(),))
    theirs.close()
    grader = cmd[:at] + ["--remote-student", str(mine.fileno())] + cmd[at + 2:]
    try:
        code = subprocess.call(grader, pass_fds=(mine.fileno(),))
    finally:
        mine.close()
        try:
            host.wait(timeout=10)
        except subprocess.TimeoutExpired:
            host.kill()
            host.wait()
    return code


def grade_once(lesson, args):
    source = os.path.abspath(args.source) if args.source else lesson.exercise
    shown = os.path.relpath(source, ROOT) if source.startswith(ROOT) else source
    status = live.StatusLine()
    live.configure(status)  # on the first run: the build's settings decide below whether the emulator grades
    if _use_emulator(lesson, args):
        return _grade_emulated(lesson, args, source, shown)
    print(f"building {lesson.name} ({shown}) ...", flush=True)
    try:
        if args.source:
            live.build_targets("wb-grader", f"{lesson.name}_reference", label=f"the grader and {lesson.name}'s reference",
                               status=status)
            compiler = "nvcc" if lesson.needs_gpu else "the C++ compiler"
            with live.activity(f"compiling {shown} with {compiler}", status):
                lib = compile_source(lesson, source)
        else:
            live.build_targets(lesson.name, label=lesson.name, status=status)
            lib = library(lesson, "exercise")
    except BuildError as e:
        print(f"\n{e}:\n\n{e.output}\n" if e.output else f"\n{e}\n")
        print(f"{lesson.name}: did not build. Fix the first error above, then run ./grade {lesson.name} again.")
        _write_build_failure(args, lesson, shown, f"{e}\n{e.output}")
        progress.record_result(lesson, "fail-build", shown)
        return exitcodes.FAIL_BUILD
    if args.build_only:
        print(f"built {lib}")
        return exitcodes.PASS
    if args.profile:
        cmd = grader_command(lesson, lib, shown)
        return profile.run(lesson, cmd, args.shape, args.clock_control, args.profile_raw)
    cmd = grader_command(lesson, lib, shown, seed=args.seed, json_path=args.json, cases=args.cases,
                         samples=args.samples, no_bench=args.no_bench, full_bench=args.full_bench,
                         fail_fast=args.fail_fast,
                         untouched_stub=args.untouched_stub or (not args.source and is_shipped_stub(lesson)))
    if args.sanitize:
        code = _sanitize(cmd)
    elif args.remote:
        code = _call_remote(cmd)
    else:
        code = live.run_grader(cmd, status)
    progress.record_result(lesson, exitcodes.VERDICTS.get(code, "error"), shown)
    if code in (exitcodes.FAIL_CORRECTNESS, exitcodes.FAIL_GATE):
        print(f"\nStuck? ./grade {lesson.name} --hint shows the next hint; "
              f"lessons/{lesson.slug}/README.md explains the checks.")
    elif code == exitcodes.PASS and not args.source:
        later = [l for l in all_lessons() if l.number > lesson.number]
        if later:
            print(f"\n{lesson.name} passed. Next: make {later[0].name} && ./grade {later[0].name}")
    return code


def watch(lesson, args):
    path = os.path.abspath(args.source) if args.source else lesson.exercise
    last, rounds, code = None, 0, exitcodes.PASS
    try:
        while True:
            try:
                stamp = os.stat(path).st_mtime_ns
            except OSError:
                raise UsageError(f"missing file: {path}")
            if stamp != last:
                last = stamp
                print(f"\n=== {time.strftime('%H:%M:%S')}  grading {lesson.name} ===")
                code = grade_once(lesson, args)
                rounds += 1
                if args.watch_rounds and rounds >= args.watch_rounds:
                    return code
                print(f"\nwatching {os.path.relpath(path, ROOT)}: save it to grade again, Ctrl-C to stop")
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\nstopped watching")
        return code


def _interview_parser():
    p = _Parser(prog="./grade interview", description=interview.__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", help="lessonN or random to start one; check, submit, questions, status, report, "
                                "history, abandon")
    p.add_argument("--minutes", type=int, default=45, help="time limit of a new interview (default 45)")
    p.add_argument("--answers", metavar="FILE",
                   help="submit, questions: the answers (and self-scores) to the follow-up questions; the "
                        "file's first answer goes to the first question not yet answered")
    p.add_argument("--end-coding", action="store_true",
                   help="questions: end the coding part while a stage is still open, without being asked")
    return p


def run_interview(argv):
    args = _interview_parser().parse_args(argv)
    commands = {"status": interview.status, "history": interview.history, "abandon": interview.abandon,
                "report": interview.report, "check": interview.check}
    if args.what in ("submit", "questions"):
        if args.answers and not os.path.isfile(args.answers):
            raise UsageError(f"no such file: {args.answers} (the answers to the follow-up questions)")
        if args.what == "submit":
            if args.end_coding:
                raise UsageError("--end-coding goes with ./grade interview questions")
            return interview.submit(args.answers)
        return interview.questions(args.answers, args.end_coding)
    if args.answers:
        raise UsageError("--answers goes with ./grade interview submit or ./grade interview questions")
    if args.end_coding:
        raise UsageError("--end-coding goes with ./grade interview questions")
    if args.what in commands:
        return commands[args.what]()
    return interview.start(args.what, args.minutes)


def _leaderboard_parser():
    p = _Parser(prog="./grade leaderboard", description=leaderboard.__doc__,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("lesson", help="lessonN, or 'merge' followed by lessonN and a results folder")
    p.add_argument("folder", help="the submissions (or, after merge lessonN, the results folder)")
    p.add_argument("extra", nargs="?", help=argparse.SUPPRESS)
    p.add_argument("--out", metavar="DIR", help="write leaderboard.md, .csv, .json and .html there")
    p.add_argument("--timeout", type=int, default=900, help="grading seconds per submission (default 900)")
    p.add_argument("--compile-timeout", type=int, default=300, help="compile seconds per submission (default 300)")
    p.add_argument("--memory-limit", type=int, default=16384, metavar="MIB",
                   help="host memory of one submission's processes together, MiB (default 16384)")
    p.add_argument("--output-limit", type=int, default=8, metavar="MIB",
                   help="what one submission may print, MiB (default 8; head and tail are kept)")
    p.add_argument("--file-size-limit", type=int, default=1024, metavar="MIB",
                   help="largest file a submission may write, MiB (default 1024)")
    p.add_argument("--process-limit", type=int, default=256, metavar="N",
                   help="processes one submission may run at once (default 256)")
    p.add_argument("--samples", type=int, metavar="N", help="timing samples per shape (default: the grader's)")
    p.add_argument("--no-sandbox", action="store_true",
                   help="grade without bubblewrap (only for trusted code; every export says so)")
    p.add_argument("--gpus", help="grade in parallel, one submission per GPU: --gpus 0,1,2,3")
    p.add_argument("--no-cache", action="store_true", help="grade again even if the file was graded before")
    p.add_argument("--only", type=int, metavar="I", help="grade only the I-th submission (a Slurm array task)")
    p.add_argument("--result-dir", metavar="DIR", help="also store each result as DIR/NAME.json")
    p.add_argument("--slurm", metavar="FILE", help="write a Slurm job-array script instead of grading")
    return p


def run_leaderboard(argv):
    args = _leaderboard_parser().parse_args(argv)
    if args.lesson == "merge":
        if not args.extra:
            raise UsageError("usage: ./grade leaderboard merge lessonN RESULTS_DIR [--out DIR]")
        return leaderboard.merge(args.folder, args.extra, args.out)
    gpus = None
    if args.gpus:
        try:
            gpus = [int(g) for g in args.gpus.split(",") if g.strip()]
        except ValueError:
            raise UsageError(f"--gpus takes device numbers like 0,1,2, not '{args.gpus}'")
    limits = BoardLimits(args.timeout, args.compile_timeout, args.memory_limit, args.output_limit,
                         args.file_size_limit, args.process_limit, args.samples)
    return leaderboard.run(args.lesson, args.folder, args.out, limits, gpus, not args.no_cache, args.only,
                           args.result_dir, args.slurm, not args.no_sandbox)


def main(argv):
    try:
        if argv and argv[0] == "interview":
            return run_interview(argv[1:])
        if argv and argv[0] == "leaderboard":
            return run_leaderboard(argv[1:])
        args = _parser().parse_args(argv)
        if args.lesson is None:
            if any((args.hint, args.watch, args.reset, args.source)):
                raise UsageError("name a lesson, e.g. ./grade lesson3 --hint")
            return list_lessons()
        lesson = find_lesson(args.lesson)
        if args.hint:
            number, total, text = hints.next_hint(lesson)
            print(f"{lesson.name}, hint {number} of {total}:\n\n{text}\n")
            if number < total:
                print(f"(./grade {lesson.name} --hint again for hint {number + 1})")
            return exitcodes.PASS
        if args.reset:
            return reset_exercise(lesson)
        if args.shape and not args.profile:
            raise UsageError("--shape goes with --profile: ./grade lessonN --profile --shape 32768x4096")
        if args.profile and (args.watch or args.sanitize):
            raise UsageError("--profile runs once: leave out --watch and --sanitize")
        if args.watch:
            return watch(lesson, args)
        return grade_once(lesson, args)
    except UsageError as e:
        print(f"./grade: {e}", file=sys.stderr)
        return exitcodes.USAGE
    except BuildError as e:
        print(f"./grade: {e}\n{e.output}", file=sys.stderr)
        return exitcodes.FAIL_BUILD
    except StateError as e:
        print(f"./grade: {e}", file=sys.stderr)
        return exitcodes.NO_GPU
