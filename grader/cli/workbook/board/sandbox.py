"""Running untrusted code (a student's compile and grading) in a sandbox with named limits.

The sandbox is bubblewrap: a new mount, PID, network, IPC, UTS and user namespace, the system folders
(/usr, /etc, /opt, /lib*, /sys) and the grader's sources, program and lesson libraries read-only and nothing else of the machine, a private empty writable folder at /tmp/sandbox, fresh /tmp, no network, only the GPU
device nodes CUDA needs, and nothing of other students, the result store or the exports (those
paths are covered by empty tmpfs mounts). When the board runs as root, bubblewrap itself is started as
the unprivileged user `nobody` where user namespaces allow it, so the submission holds no privilege at
all; otherwise it runs as root mapped to `nobody` with every capability dropped.

Limits are enforced from outside, by the board: wall-clock time, host memory (the resident size of
every process in the sandbox, summed), process count, output size (head and tail kept, bounded), and
file size (RLIMIT_FSIZE). When the first process of the sandbox ends, bubblewrap's PID namespace ends
and the kernel kills everything left in it, whatever it did to escape (setsid, double fork).

Where bubblewrap cannot be had, `Sandbox.detect` returns one with `isolated == False` and the reason;
the same limits still apply, and processes are tracked by a ticket in their environment and by the
board being their subreaper, so even an escaped process is found and killed.
"""
import collections
import ctypes
import os
import resource
import secrets
import shutil
import signal
import subprocess
import tempfile
import threading
import time

from .processes import SoloWatch, children_map, children_of, descendants, has_ticket, kill, process_table, resident

NOBODY = 65534
SANDBOX_HOME = "/tmp/sandbox"  # under the fresh /tmp, so the mount point can be made
# The system a build and a grading need, read-only; everything else on the machine (home folders,
# /work, /srv, /mnt, /tmp, other people's data wherever it lives) is simply not there.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/sys")
_SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run")


class Limits:
    """What one sandboxed run may use; each limit hit becomes a named status."""

    def __init__(self, seconds, memory_bytes, output_bytes, file_bytes, processes):
        self.seconds = seconds
        self.memory_bytes = memory_bytes
        self.output_bytes = output_bytes
        self.file_bytes = file_bytes
        self.processes = processes


class Outcome:
    """How a sandboxed run ended."""

    def __init__(self):
        self.code = None          # exit code, or None when killed or ended by a signal
        self.signal = None        # the signal that ended it, if any
        self.limit = None         # "time limit", "memory limit", "output limit", "process limit", "file size limit"
        self.head = b""           # the first bytes it printed
        self.tail = b""           # the last bytes it printed
        self.output_bytes = 0     # how much it printed in all
        self.report = b""         # what arrived on the report channel
        self.report_overflow = False
        self.peak_memory = 0      # peak summed resident size seen, bytes
        self.peak_processes = 0
        self.left_behind = []     # processes found alive after the run (all killed)
        self.cancelled = False    # ended by its caller (see Sandbox.run's `cancel`)
        self.started = 0.0        # time.monotonic() when the run started
        self.beside = []          # solo runs: every process seen beside the main one (Beside)
        self.ended = 0.0          # time.monotonic() when the main process was seen gone (or the run cancelled)

    def left_running(self):
        """Processes seen beside the main one that were still running when it ended."""
        return [b for b in self.beside if b.alive_at_end]

    def output(self):
        """Head and tail of what was printed, with a note where the middle was dropped."""
        text = self.head.decode("utf-8", "replace")
        if self.tail:
            skipped = self.output_bytes - len(self.head) - len(self.tail)
            text += f"\n[... {skipped} bytes not kept ...]\n" if skipped > 0 else ""
            text += self.tail.decode("utf-8", "replace")
        return text


def _under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def become_subreaper():
    """Orphans of the board's children are re-parented to the board, so none escapes its tree."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _gpu_nodes():
    """The NVIDIA device nodes a GPU grading needs. Every GPU's node is bound: CUDA enumerates the GPUs
    through the driver and fails when a node it expects is missing; CUDA_VISIBLE_DEVICES picks the GPU."""
    nodes = [p for p in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools") if os.path.exists(p)]
    if os.path.isdir("/dev/nvidia-caps"):
        nodes.append("/dev/nvidia-caps")
    return nodes + sorted(f"/dev/{p}" for p in os.listdir("/dev") if p.startswith("nvidia") and p[6:].isdigit())


REPORT_CAP = 4 * 1024 * 1024  # the most of a report a grading keeps


def read_capped(fd, cap):
    """Everything written to `fd` until its writer closes it, kept up to `cap` bytes (the rest is read
    and dropped, so the writer never blocks): (the bytes kept, whether any were dropped)."""
    parts, size, dropped = [], 0, False
    with os.fdopen(fd, "rb") as f:
        while True:
            chunk = f.read(65536)
            if not chunk:
                break
            if size < cap:
                parts.append(chunk[:cap - size])
            dropped = dropped or size + len(chunk) > cap
            size += len(chunk)
    return b"".join(parts), dropped


def clean_environment():
    """The environment a submission gets: enough to run the tools, none of the board's own paths."""
    keep = ("PATH", "LANG", "LC_ALL", "TERM", "CUDA_HOME", "LD_LIBRARY_PATH")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update({"HOME": SANDBOX_HOME, "TMPDIR": "/tmp"})
    # CUDA numbers GPUs fastest first by default; nvidia-smi -i (the board's GPU checks) by PCI bus.
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    return env


class Sandbox:
    """Builds and runs sandboxed commands; `isolated` says whether a real sandbox is in use."""

    def __init__(self, mode, reason, visible, hidden, bwrap=None):
        self.mode = mode          # "unprivileged", "root-mapped" or "none"
        self.reason = reason      # why there is no (or a weaker) sandbox; "" when fully isolated
        self.visible = visible    # read-only trees re-exposed under hidden system folders (the project)
        self.hidden = hidden      # paths no submission may see (store, submissions, exports)
        self.bwrap = bwrap
        self._base = None

    @property
    def isolated(self):
        return self.mode != "none"

    def describe(self):
        if self.mode == "unprivileged":
            return "bubblewrap sandbox, run as the unprivileged user nobody"
        if self.mode == "root-mapped":
            return f"bubblewrap sandbox, root mapped to nobody with no capabilities ({self.reason})"
        return f"NO SANDBOX: {self.reason}; limits still apply, but a submission can read the project's files"

    @classmethod
    def detect(cls, visible, hidden, probe_paths=(), want=True):
        """The strongest sandbox this machine allows, checked by running a probe inside it."""
        visible = [os.path.realpath(p) for p in visible if p]
        hidden = [os.path.realpath(p) for p in hidden if p]
        bwrap = shutil.which("bwrap")
        if not want:
            return cls("none", "turned off with --no-sandbox", visible, hidden)
        if not bwrap:
            return cls("none", "bubblewrap is not installed (Debian and Ubuntu: apt install bubblewrap)",
                       visible, hidden)
        tries = (["unprivileged", "root-mapped"] if os.geteuid() == 0 else ["root-mapped"])
        why = ""
        for mode in tries:
            box = cls(mode, "", visible, hidden, bwrap)
            checks = " && ".join(f"test -r '{p}'" for p in probe_paths) or "true"
            out = box.run(["/bin/sh", "-c", f"{checks} && touch {SANDBOX_HOME}/probe"], box.workdir(),
                          Limits(60, 1 << 30, 1 << 16, 1 << 20, 64), report=False)
            box.close()
            if out.code == 0:
                if mode == "root-mapped" and os.geteuid() == 0:
                    box.reason = why or "user namespaces for unprivileged users are not available here"
                elif mode == "root-mapped":
                    box.mode, box.reason = "unprivileged", ""
                return box
            why = f"bubblewrap as nobody failed: {out.output().strip()[-200:]}"
        return cls("none", f"bubblewrap is installed but cannot start here ({out.output().strip()[-300:]})",
                   visible, hidden)

    def workdir(self):
        """A new private, empty folder for one run (owned by `nobody` when the sandbox drops to it)."""
        if self._base is None:
            self._base = tempfile.mkdtemp(prefix="workbook-board-")
            os.chmod(self._base, 0o711)  # `nobody` may enter its own folder, never list the others
        path = tempfile.mkdtemp(prefix="sub-", dir=self._base)
        if self.mode == "unprivileged" and os.geteuid() == 0:
            os.chown(path, NOBODY, NOBODY)
        return path

    def discard(self, path):
        shutil.rmtree(path, ignore_errors=True)

    def close(self):
        if self._base:
            shutil.rmtree(self._base, ignore_errors=True)
            self._base = None

    def inside(self, path, workdir):
        """Where a file of `workdir` appears to the sandboxed process."""
        if not self.isolated:
            return path
        return os.path.join(SANDBOX_HOME, os.path.relpath(path, workdir))

    def _command(self, argv, workdir, device, gpu):
        if not self.isolated:
            return list(argv)
        cmd = [self.bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL"]
        if self.mode == "root-mapped" and os.geteuid() == 0:
            cmd += ["--uid", str(NOBODY), "--gid", str(NOBODY)]
        for p in _SYSTEM:
            if os.path.islink(p):
                cmd += ["--symlink", os.readlink(p), p]
            elif os.path.isdir(p):
                cmd += ["--ro-bind", p, p]
        cmd += ["--dev", "/dev", "--proc", "/proc"]
        for p in _SCRATCH:
            cmd += ["--tmpfs", p]
        for p in self.visible:  # what a grading reads of the project (leaderboard._needed)
            if os.path.isdir(p) and not _under(p, _SYSTEM):
                cmd += ["--ro-bind", p, p]
        for p in self.hidden:  # inside what is visible: the store, submissions, exports
            if os.path.exists(p) and _under(p, self.visible + list(_SYSTEM)):
                cmd += ["--tmpfs", p] if os.path.isdir(p) else ["--ro-bind", "/dev/null", p]
        for node in _gpu_nodes() if gpu else ():
            cmd += ["--dev-bind", node, node]
        cmd += ["--bind", workdir, SANDBOX_HOME, "--chdir", SANDBOX_HOME,
                "--setenv", "HOME", SANDBOX_HOME, "--setenv", "TMPDIR", "/tmp", "--"]
        return cmd + list(argv)

    def run(self, argv, workdir, limits, env=None, device=None, report=True, gpu=False, share=None, cancel=None,
            solo=False):
        """Runs argv in the sandbox; returns an Outcome. With report=True the process gets a pipe
        whose write end is fd REPORT_FD's number (`report_fd` in the environment) for its report.
        `share`: one more open descriptor the process inherits (`{share_fd}` in argv names it).
        `cancel`: a threading.Event; once set, the run is ended at once, with everything it started (not a
        limit: its caller has the verdict).
        `solo`: the command never starts a process of its own (a grading, unlike a compile), so any process
        seen beside it was started by the submission's code: each is recorded in Outcome.beside."""
        outcome = Outcome()
        outcome.started = time.monotonic()
        drop = self.mode == "unprivileged" and os.geteuid() == 0
        ticket = secrets.token_hex(12)
        env = dict(env) if env is not None else clean_environment()
        env["WORKBOOK_BOARD_TICKET"] = ticket
        if not self.isolated:
            env["HOME"] = env["TMPDIR"] = workdir
        if device is not None:
            env["CUDA_VISIBLE_DEVICES"] = str(device)
        read_end = write_end = None
        pass_fds = ()
        if report:
            read_end, write_end = os.pipe()
            pass_fds = (write_end,)
        if share is not None:
            pass_fds = pass_fds + (share,)
        if report:
            if drop:  # /dev/fd/N re-opens the pipe, which checks its owner
                os.fchown(write_end, NOBODY, NOBODY)
            env["WORKBOOK_REPORT_FD"] = str(write_end)

        def preexec():
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
            if drop:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
                resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes * 4, limits.processes * 4))

        argv = [a.replace("{report_fd}", str(write_end)).replace("{share_fd}", str(share)) for a in argv]
        proc = subprocess.Popen(self._command(argv, workdir, device, gpu), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=workdir,
                                pass_fds=pass_fds, preexec_fn=preexec, start_new_session=True)
        if write_end is not None:
            os.close(write_end)
        if share is not None:
            os.close(share)  # handed over: the sandboxed process holds it now, and its end is seen as the end
        stop = threading.Event()
        pumps = [threading.Thread(target=self._pump_output, args=(proc.stdout, outcome, limits, proc, stop),
                                  daemon=True)]
        if read_end is not None:
            pumps.append(threading.Thread(target=self._pump_report, args=(read_end, outcome), daemon=True))
        for t in pumps:
            t.start()
        seen = set()
        deadline = time.monotonic() + limits.seconds
        watch = SoloWatch(proc.pid, self.isolated, ticket, outcome.started) if solo else None
        while proc.poll() is None:
            table = process_table()
            children = children_of(table)
            tree = descendants(proc.pid, children)
            seen.update(tree)
            if watch:
                seen.update(watch.poll(table, children, tree))
            rss = resident(proc.pid) + sum(resident(p) for p in tree)
            outcome.peak_memory = max(outcome.peak_memory, rss)
            outcome.peak_processes = max(outcome.peak_processes, len(tree))
            # The caller's verdict comes first: a limit that falls due after it is not the submission's.
            if cancel is not None and cancel.is_set():
                outcome.cancelled = True
                break
            if outcome.limit is None:
                if rss > limits.memory_bytes:
                    outcome.limit = "memory limit"
                elif len(tree) > limits.processes:
                    outcome.limit = "process limit"
                elif time.monotonic() > deadline:
                    outcome.limit = "time limit"
                elif stop.is_set():
                    outcome.limit = "output limit"
            if outcome.limit:
                break
            time.sleep(0.05)
        outcome.ended = time.monotonic()
        if outcome.limit or outcome.cancelled:
            self._end(proc, seen)
        code = proc.wait()
        # After a limit, everything was killed on purpose; what is still exiting is not "left behind".
        outcome.left_behind = self._sweep(proc.pid, seen, ticket, report=outcome.limit is None and not outcome.cancelled)
        if watch:
            outcome.beside = watch.finish(outcome.left_behind)
        for t in pumps:
            t.join(timeout=10)
        if outcome.limit is None and stop.is_set():
            outcome.limit = "output limit"
        if outcome.cancelled:
            return outcome
        if self.isolated and 128 < code < 128 + 65:
            code = -(code - 128)  # bubblewrap exits with 128 + N when what it ran died of signal N
        if code < 0:
            outcome.signal = -code
            if -code == signal.SIGXFSZ and outcome.limit is None:
                outcome.limit = "file size limit"
        elif outcome.limit is None:
            outcome.code = code
        return outcome

    @staticmethod
    def _end(proc, seen):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        kill([proc.pid, *seen])

    @staticmethod
    def _sweep(root, seen, ticket, report=True):
        """Kills whatever of this run is still alive; returns what was found (pids and names)."""
        found = []
        time.sleep(0.05)  # what the PID namespace's end just killed is given a moment to go
        for _ in range(3):
            children = children_map()
            alive = set(descendants(root, children))
            alive |= {p for p in seen if os.path.exists(f"/proc/{p}") and has_ticket(p, ticket.encode())}
            alive |= {p for p in descendants(os.getpid(), children) if has_ticket(p, ticket.encode())}
            if not alive:
                break
            for pid in alive:
                try:
                    with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
                        stat = f.read()
                except OSError:
                    continue
                name, state = stat[stat.find("(") + 1:stat.rfind(")")], stat[stat.rfind(")") + 2:][:1]
                if report and state not in ("Z", "X"):
                    found.append(f"{pid} ({name})")
            kill(alive)
            time.sleep(0.1)
        return sorted(set(found))

    @staticmethod
    def _pump_output(stream, outcome, limits, proc, stop):
        keep = 32 * 1024
        tail = collections.deque()
        tail_size = 0
        head = bytearray()
        while True:
            chunk = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not chunk:
                break
            outcome.output_bytes += len(chunk)
            if len(head) < keep:
                take = chunk[:keep - len(head)]
                head += take
                chunk = chunk[len(take):]
            if chunk:
                tail.append(chunk)
                tail_size += len(chunk)
                while tail_size - len(tail[0]) >= keep:
                    tail_size -= len(tail.popleft())
            if outcome.output_bytes > limits.output_bytes and not stop.is_set():
                stop.set()
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                kill([proc.pid])
        outcome.head = bytes(head)
        outcome.tail = b"".join(tail)[-keep:]

    @staticmethod
    def _pump_report(fd, outcome):
        outcome.report, outcome.report_overflow = read_capped(fd, REPORT_CAP)
