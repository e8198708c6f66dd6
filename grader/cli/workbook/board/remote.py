"""Grading a submission from outside its process: the verdict and the timings the board ranks.

The submission's code runs in the sandbox inside `wb-grader --serve`, which holds nothing but the
submission's library, the buffers it is sent and a socket. The grader itself runs outside the sandbox,
as the board's own trusted process: it fills the inputs, sends each call, checks every output in its
own memory and times the calls by its own clock, and writes its report to a pipe only the board reads.
Nothing the submission does can reach that process, so it cannot write, alter or end the verdict.
"""
import os
import secrets
import socket
import subprocess
import tempfile
import threading
import time

from .sandbox import REPORT_CAP, clean_environment, read_capped



class RemoteRun:
    """What one remote grading left: the grader's report and exit, and how the host process ended."""

    def __init__(self):
        self.seed = str(secrets.randbits(63))
        self.report = b""
        self.code = None
        self.timed_out = False
        self.grader_output = ""
        self.grader_ended = None  # time.monotonic() when the grader outside ended: the verdict was in
        self.host_gone = None     # time.monotonic() when the host's sandbox had ended, with all it started
        self.host = None  # the sandbox's Outcome for the host process

    def beside_before_verdict(self):
        """The processes the host's code started before the grader's verdict was in."""
        if self.host is None:
            return []
        end = self.grader_ended if self.grader_ended is not None else float("inf")
        return [b for b in self.host.beside if self.host.started + b.at < end]


def _read_all(fd, run):
    run.report, _ = read_capped(fd, REPORT_CAP)


def grade_remotely(sandbox, work, library_inside, grader, lesson, name, reference, limits, device, samples,
                   no_bench=False):
    """Runs the host in the sandbox and the grader outside it; returns a RemoteRun. `no_bench`: grade
    correctness only (a process the submission starts would run beside the timing)."""
    run = RemoteRun()
    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    host_fd = os.dup(theirs.fileno())  # inheritable; Sandbox.run closes it once the sandbox holds it
    theirs.close()
    host_cmd = [grader, "--serve", "{share_fd}", "--lesson", str(lesson.number), "--student", library_inside]
    done = threading.Event()
    box = {}

    def host():
        box["outcome"] = sandbox.run(host_cmd, work, limits, device=device, report=False, gpu=lesson.needs_gpu,
                                     share=host_fd, cancel=done, solo=True)

    host_thread = threading.Thread(target=host, daemon=True)
    host_thread.start()

    read_end, write_end = os.pipe()
    cmd = [grader, "--lesson", str(lesson.number), "--remote-student", str(mine.fileno()), "--source-name", name,
           "--seed", run.seed, "--json", f"/dev/fd/{write_end}"]
    if lesson.needs_gpu:
        cmd += ["--reference", reference]
    if samples:
        cmd += ["--samples", str(samples)]
    if no_bench:
        cmd.append("--no-bench")
    env = clean_environment()
    if device is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(device)
    if os.environ.get("WORKBOOK_REMOTE_CLOCK"):  # the board's own choice of clock (grouped when unset)
        env["WORKBOOK_REMOTE_CLOCK"] = os.environ["WORKBOOK_REMOTE_CLOCK"]
    reader = threading.Thread(target=_read_all, args=(read_end, run), daemon=True)
    reader.start()
    with tempfile.TemporaryFile() as log:  # unnamed, outside every sandbox
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                pass_fds=(mine.fileno(), write_end))
        os.close(write_end)
        mine.close()
        try:
            run.code = proc.wait(timeout=limits.seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            run.timed_out = True
        # The verdict is in: the host's whole sandbox ends now, whatever it started, and nothing waits for it.
        run.grader_ended = time.monotonic()
        done.set()
        log.seek(0, os.SEEK_END)
        log.seek(max(0, log.tell() - 4096))
        run.grader_output = log.read().decode("utf-8", "replace")
    reader.join(timeout=10)
    host_thread.join()
    run.host_gone = time.monotonic()
    run.host = box.get("outcome")
    return run
