"""The processes of a sandboxed run, read from /proc: the tree under it, its memory, its ticket, and
what a solo run's code started beside its main process."""
import collections
import os
import signal
import time

_PAGE = os.sysconf("SC_PAGE_SIZE")


class Beside:
    """A process seen in a solo run's sandbox beside its main process: the submission started it."""

    def __init__(self, pid, name, at):
        self.pid, self.name = pid, name
        self.at = at                 # seconds after the run started that the board first saw it
        self.alive_at_end = False    # still there when the main process ended (or the run was ended)

    def describe(self):
        return f"pid {self.pid} ({self.name})"


def process_table():
    """{pid: (ppid, start time in clock ticks, name, state)} of every process on the machine, from /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        name = stat[stat.find(b"(") + 1:stat.rfind(b")")].decode("utf-8", "replace")
        table[int(entry)] = (int(fields[1]), int(fields[19]), name, fields[0].decode())
    return table


def children_of(table):
    children = collections.defaultdict(list)
    for pid, (ppid, *_rest) in table.items():
        children[ppid].append(pid)
    return children


def children_map():
    """{ppid: [pid, ...]} of every process on the machine, read from /proc."""
    return children_of(process_table())


def descendants(root, children):
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        for c in children.get(pid, ()):
            out.append(c)
            todo.append(c)
    return out


def resident(pid):
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def has_ticket(pid, ticket):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return ticket in f.read()
    except OSError:
        return False


def kill(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class SoloWatch:
    """Tells a solo run's main process from the processes its code starts beside it.

    In the sandbox the tree is bubblewrap, its init in the new PID namespace, and the command: the
    init's first child. Anything else under the init was started by the command's code (a process
    whose parent ended is re-parented to the init). Without a sandbox the command is the root, and a
    process that escaped its tree (setsid, double fork) is re-parented to the board, the subreaper,
    and known by the run's ticket."""

    def __init__(self, root, isolated, ticket, started):
        self.root, self.isolated, self.ticket, self.started = root, isolated, ticket.encode(), started
        self.main = None if isolated else root
        self.not_ours = set()  # the board's children known not to carry this run's ticket
        self.beside = {}       # pid -> Beside
        self.alive = set()     # beside processes alive at the latest poll

    def poll(self, table, children, tree):
        """Records what runs beside the main process now; returns the pids to end with the run."""
        if self.main is None:
            inits = children.get(self.root, [])
            kids = children.get(inits[0], []) if inits else []
            if kids:  # the command is the init's first child: started first, it is the oldest
                self.main = min(kids, key=lambda p: (table[p][1], p))
        if self.main is None:
            return []
        known = {self.root, self.main, *children.get(self.root, [])} if self.isolated else {self.root}
        found = [p for p in tree if p not in known]
        if not self.isolated:
            for p in children.get(os.getpid(), []):
                if p in known or p in self.not_ours or p in found:
                    continue
                if has_ticket(p, self.ticket):
                    found.append(p)
                else:
                    self.not_ours.add(p)
        now = time.monotonic() - self.started
        main = table.get(self.main)
        if main is None or main[3] in ("Z", "X"):
            return found  # the main process has ended: what ran beside it at the last look stays the answer
        self.alive = set()
        for p in found:
            entry = table.get(p)
            if entry is None or entry[3] in ("Z", "X"):
                continue
            self.alive.add(p)
            if p not in self.beside:
                self.beside[p] = Beside(p, entry[2], round(now, 2))
            self.beside[p].name = entry[2]  # the latest name: a process may rename itself once started
        return found

    def finish(self, swept):
        """The beside processes in the order they appeared, each marked if it outlived the main one."""
        still = {int(s.split()[0]) for s in swept}
        for pid, b in self.beside.items():
            b.alive_at_end = pid in self.alive or pid in still
        return sorted(self.beside.values(), key=lambda b: (b.at, b.pid))
