"""What a long command shows while it runs: the build's progress, the case being graded, the clock.

On a terminal, one status line at the bottom is redrawn in place ("building lesson1: 37% ...",
"grading case 5 of 12: prime_cols, 3 s") and erased before anything else is printed. Anywhere
else (a pipe, a file, CI, TERM=dumb, WORKBOOK_PROGRESS=plain) nothing is redrawn: the build's
own percentage lines are printed as plain lines, and the grader's output passes through as it is.

The case being graded comes from the grader's GoogleTest run: GoogleTest streams its test events
to the socket named by GTEST_STREAM_RESULT_TO (its --gtest_stream_result_to flag), one line per
event, and each case of a lesson is one GoogleTest test.
"""
import contextlib
import fcntl
import os
import re
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

from .build import BUILD_DIR, BuildError, configure as _configure

# "[ 37%] Building CXX object grader/CMakeFiles/wb-grader.dir/src/main.cpp.o" (Makefiles) or
# "[12/345] Building CUDA object ..." (Ninja).
PROGRESS = re.compile(r"^\s*\[\s*(?:(\d+)%|(\d+)/(\d+))\]\s*(.*)$")
OBJECT = re.compile(r"^Building (\w+) object (?:.*/)?CMakeFiles/([^/]+)\.dir/(.+?)\.o(?:bj)?$")
LINKING = re.compile(r"^Linking \w+ (?:shared |static |executable |shared module )*(?:library |module )?(.+)$")


def is_live(stream=None):
    """True when `stream` (stdout) is a terminal that can redraw a line."""
    mode = os.environ.get("WORKBOOK_PROGRESS", "")
    if mode == "plain":
        return False
    if mode == "live":
        return True
    stream = stream or sys.stdout
    try:
        return stream.isatty() and os.environ.get("TERM", "") != "dumb"
    except (AttributeError, ValueError):
        return False


def duration(seconds):
    seconds = int(round(seconds))
    return f"{seconds} s" if seconds < 60 else f"{seconds // 60} min {seconds % 60:02d} s"


class StatusLine:
    """One line at the bottom of a terminal, redrawn in place; on anything else it prints nothing."""

    def __init__(self, stream=None, live=None):
        self.stream = stream or sys.stdout
        self.live = is_live(self.stream) if live is None else live
        self.text = ""
        self.shown = False
        self.lock = threading.RLock()

    def _width(self):
        return max(20, shutil.get_terminal_size((100, 24)).columns - 1)

    def show(self, text):
        with self.lock:
            self.text = text
            if not self.live:
                return
            self.stream.write("\r\033[K" + text[:self._width()])
            self.stream.flush()
            self.shown = True

    def clear(self):
        with self.lock:
            if self.live and self.shown:
                self.stream.write("\r\033[K")
                self.stream.flush()
            self.shown = False

    def print(self, text="", end="\n"):
        """Prints `text` above the status line, which is drawn again under it."""
        with self.lock:
            was = self.shown
            self.clear()
            self.stream.write(text + end)
            self.stream.flush()
            if was and self.text:
                self.show(self.text)

    def done(self):
        with self.lock:
            self.clear()
            self.text = ""


@contextlib.contextmanager
def activity(what, status=None, report_after=5.0):
    """Shows `what` with a running clock on a terminal while the block runs; afterwards, when it took
    more than `report_after` seconds, one plain line says how long (on a terminal or not)."""
    line = status or StatusLine()
    start = time.monotonic()
    stop = threading.Event()

    def tick():
        while not stop.wait(0.5 if line.live else 3600):
            line.show(f"{what} ... {duration(time.monotonic() - start)}")

    if line.live:
        line.show(f"{what} ...")
    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield line
    finally:
        stop.set()
        ticker.join()
        line.done()
    took = time.monotonic() - start
    if took > report_after:
        line.print(f"{what}: done in {duration(took)}")


# ----------------------------------------------------------------------------------- the build

def describe(step):
    """'Building CXX object grader/CMakeFiles/wb-grader.dir/src/main.cpp.o' -> 'wb-grader: src/main.cpp'."""
    m = OBJECT.match(step)
    if m:
        source = m.group(3).replace("__/", "../")
        return f"{m.group(2)}: {source}"
    m = LINKING.match(step)
    if m:
        return f"linking {os.path.basename(m.group(1))}"
    return step


class BuildProgress:
    """Turns CMake's output into progress: a status line on a terminal, its percentage lines elsewhere."""

    def __init__(self, label, status=None):
        self.label = label
        self.status = status or StatusLine()
        self.percent = None
        self.worked = False  # something was compiled or linked (not only "Built target" lines)

    def feed(self, line):
        line = line.rstrip("\r\n")
        m = PROGRESS.match(line)
        if not m:
            if line.startswith("-- ") and self.status.live:  # CMake re-running its configure step
                self.status.show(f"building {self.label}: CMake is re-reading the project ...")
            return
        step = m.group(4)
        if step.startswith(("Built target", "Consolidate compiler generated dependencies", "Scanning dependencies")):
            return
        if m.group(1) is not None:
            self.percent = int(m.group(1))
        else:
            self.percent = 100 * int(m.group(2)) // max(1, int(m.group(3)))
        self.worked = True
        if self.status.live:
            self.status.show(f"building {self.label}: {self.percent:3d}%  {describe(step)}")
        else:
            self.status.print(line.strip())


_lock_depth = 0


@contextlib.contextmanager
def build_lock(status=None):
    """One build at a time per build tree (the same lock file as build.py's): parallel ./grade runs
    share it. A run that has to wait says so."""
    global _lock_depth
    if _lock_depth:
        yield
        return
    os.makedirs(BUILD_DIR, exist_ok=True)
    with open(os.path.join(BUILD_DIR, ".workbook-build.lock"), "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            line = status or StatusLine()
            line.print(f"waiting for another build of {BUILD_DIR} to finish ...")
            fcntl.flock(lock, fcntl.LOCK_EX)
        _lock_depth += 1
        try:
            yield
        finally:
            _lock_depth -= 1
            fcntl.flock(lock, fcntl.LOCK_UN)


def configure(status=None):
    """Configures the build tree the first time (CMake checks the compilers: half a minute or so)."""
    if os.path.exists(os.path.join(BUILD_DIR, "CMakeCache.txt")):
        return
    line = status or StatusLine()
    shown = os.path.relpath(BUILD_DIR) if not os.path.relpath(BUILD_DIR).startswith("..") else BUILD_DIR
    if not line.live:
        line.print(f"configuring {shown}/ with CMake (the first time only) ...")
    with build_lock(line), activity(f"configuring {shown}/ with CMake (the first time only)", line, report_after=0):
        _configure()


def compiler_lines(output):
    """The compiler's own lines, without the build tool's progress chatter."""
    keep = []
    for line in output.splitlines():
        if PROGRESS.match(line) or re.match(r"^g?make(\[\d+\])?:", line):
            continue
        if line.startswith(("Consolidate compiler generated dependencies", "Scanning dependencies")):
            continue
        keep.append(line)
    return "\n".join(keep).strip()


def build_targets(*targets, label=None, status=None):
    """Builds CMake targets (only what is stale), showing how far it is; BuildError on failure."""
    line = status or StatusLine()
    label = label or " ".join(targets)
    progress = BuildProgress(label, line)
    start = time.monotonic()
    configure(line)
    with build_lock(line):
        jobs = os.environ.get("WORKBOOK_BUILD_JOBS") or str(os.cpu_count() or 2)
        cmd = ["cmake", "--build", BUILD_DIR, "-j", jobs, "--target", *targets]
        if line.live:
            line.show(f"building {label}: checking what is stale ...")
        output = []
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                                errors="replace")
        try:
            for text in proc.stdout:
                output.append(text)
                progress.feed(text)
            code = proc.wait()
        except BaseException:
            proc.kill()
            proc.wait()
            line.done()
            raise
    line.done()
    took = time.monotonic() - start
    if code != 0:
        raise BuildError("the build failed", compiler_lines("".join(output)))
    if progress.worked and took > 2:
        line.print(f"built {label} in {duration(took)}")
    return progress.worked


# ----------------------------------------------------------------------------------- grading

class GradingProgress:
    """The grader's position: the case running (from GoogleTest's event stream) and the phase (from
    its output), as one status line."""

    CASES = re.compile(r"^correctness: (\d+) case")
    TIMING = re.compile(r"^timing (\d+) shape")

    def __init__(self, status):
        self.status = status
        self.total = None
        self.started = 0
        self.case = None
        self.case_start = None
        self.phase = None
        self.phase_start = None

    DONE = re.compile(r"^\s*(?:pass|FAIL|SKIP)\s+(\S+)")
    SUMMARY = re.compile(r"case\(s\) (?:passed|failed)|^gate: ")

    def output_line(self, text):
        m = self.CASES.match(text)
        if m:
            self.total = int(m.group(1))
        m = self.DONE.match(text)
        if m and m.group(1) == self.case:
            self.case = None  # its line is out: the end event may still be on its way
        if self.SUMMARY.search(text):
            self.case = self.phase = None
        m = self.TIMING.match(text)
        if m:
            self.case = None
            self.phase = f"timing {m.group(1)} shape(s), your kernel and the reference alternately"
            self.phase_start = time.monotonic()

    def event(self, text):
        fields = dict(urllib.parse.parse_qsl(text.strip(), keep_blank_values=True))
        kind = fields.get("event")
        if kind == "TestStart":
            self.started += 1
            self.case = fields.get("name", "?")
            self.case_start = time.monotonic()
        elif kind == "TestEnd":
            self.case = None

    def text(self):
        now = time.monotonic()
        if self.case:
            of = f" of {self.total}" if self.total else ""
            return f"grading case {self.started}{of}: {self.case} ... {duration(now - self.case_start)}"
        if self.phase:
            return f"{self.phase} ... {duration(now - self.phase_start)}"
        return ""

    def redraw(self):
        text = self.text()
        if text:
            self.status.show(text)
        else:
            self.status.clear()


def run_grader(cmd, status=None):
    """Runs the grader; returns its exit status. On a terminal its output goes through a pseudo-terminal
    (so it behaves exactly as on the terminal itself) under a status line naming the case being graded."""
    line = status or StatusLine()
    if not line.live:
        return subprocess.call(cmd)
    try:
        import pty
        master, slave = pty.openpty()
    except (ImportError, OSError):
        return subprocess.call(cmd)
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    env = dict(os.environ, GTEST_STREAM_RESULT_TO=f"127.0.0.1:{server.getsockname()[1]}")
    progress = GradingProgress(line)
    try:
        proc = subprocess.Popen(cmd, stdout=slave, stderr=slave, env=env)
    except BaseException:
        os.close(master)
        os.close(slave)
        server.close()
        raise
    os.close(slave)
    conn, events, out = None, b"", b""
    open_fds = {master: "out", server.fileno(): "server"}
    try:
        while master in open_fds:
            ready, _, _ = select.select(list(open_fds), [], [], 0.5)
            for fd in ready:
                kind = open_fds[fd]
                if kind == "server":
                    conn, _ = server.accept()
                    open_fds[conn.fileno()] = "events"
                    del open_fds[server.fileno()]
                elif kind == "events":
                    data = conn.recv(4096)
                    if not data:
                        del open_fds[fd]
                        continue
                    events += data
                    *done, events = events.split(b"\n")
                    for e in done:
                        progress.event(e.decode("utf-8", "replace"))
                else:
                    try:
                        data = os.read(master, 4096)
                    except OSError:  # EIO: the grader and everything it started have closed the terminal
                        data = b""
                    if not data:
                        del open_fds[fd]
                        continue
                    out += data.replace(b"\r\n", b"\n")
                    *done, out = out.split(b"\n")
                    for text in done:
                        decoded = text.decode("utf-8", "replace")
                        progress.output_line(decoded)
                        line.print(decoded)
            progress.redraw()
        if out:
            line.clear()
            line.stream.write(out.decode("utf-8", "replace"))
            line.stream.flush()
        return proc.wait()
    except KeyboardInterrupt:
        line.done()
        proc.wait()
        raise
    finally:
        line.done()
        os.close(master)
        if conn is not None:
            conn.close()
        server.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
