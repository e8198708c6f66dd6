#!/usr/bin/env python3
"""A class of submissions that tests the leaderboard's defences, and the check of a board run over it.

  grader/tests/hostile_class.py --lesson 1 --work DIR [--out DIR]

writes the class into DIR/submissions (honest, wrong and hostile files), grades it twice with
`./grade leaderboard` (the second time from the cache), and checks every row, that no process of any
submission is left, that nobody's files, the cache or the exports were touched, that nothing reached
the network, and that the board's own memory stayed bounded. Lesson 1 runs here on the CPU (the CI
test); lesson 4 on a GPU, with a GPU hog left behind and a kernel launched on a private stream.
Exit code 0 when every check holds; the table of checks is printed either way.

Every hostile payload runs in a static initialiser (when the grader loads the submission), so it
works the same for every lesson; a payload that finds it has escaped the sandbox aborts, which turns
its row from "correct" into a crash, and the check fails.
"""
import argparse
import atexit
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "grader", "cli"))
from workbook.board.ranking import summarise  # noqa: E402
from workbook.known_bad import catalogue  # noqa: E402
from workbook.lessons import find_lesson  # noqa: E402

HEADERS = """
#include <arpa/inet.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>
"""

# Folders a hostile submission searches for other people's files (plus the project, found from the
# grader's own path).
WALK = r"""
static std::vector<std::filesystem::path> wb_roots() {
    std::vector<std::filesystem::path> roots = {"/tmp", "/var/tmp", "/home", "/root", "/work", "/srv", "/opt"};
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) { exe[n] = 0; roots.push_back(std::filesystem::path(exe).parent_path().parent_path().parent_path()); }
    return roots;
}
template <typename F> static void wb_walk(F&& visit) {
    namespace fs = std::filesystem;
    for (const auto& root : wb_roots()) {
        std::error_code ec;
        fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
        for (; !ec && it != end; it.increment(ec)) {
            if (it.depth() > 9) { it.disable_recursion_pending(); continue; }
            const std::string p = it->path().string();
            if (p.rfind("/proc", 0) == 0 || p.rfind("/tmp/sandbox", 0) == 0) continue;
            std::error_code e2;
            if (it->is_regular_file(e2)) visit(it->path());
        }
    }
}
"""

PAYLOADS = {
    "crash": "volatile char c = std::getenv(\"WB_NO_SUCH_VARIABLE\")[0]; (void)c;",
    "hang": "for (volatile unsigned long i = 0;; i = i + 1) {}",
    "exit0": "std::exit(0);",
    "flood": "std::string line(1023, 'x'); for (int i = 0; i < 400000; ++i) std::printf(\"%s\\n\", line.c_str());",
    "memory": "std::vector<char*> keep; for (;;) { char* p = static_cast<char*>(std::malloc(64 << 20)); "
              "if (!p) break; std::memset(p, 1, 64 << 20); keep.push_back(p); }",
    "fork_bomb": "for (int i = 0; i < 4000; ++i) { pid_t p = fork(); if (p == 0) { sleep(60); _exit(0); } "
                 "if (p < 0) break; } sleep(60);",
    "big_file": "FILE* f = std::fopen(\"big.bin\", \"wb\"); std::vector<char> b(1 << 20, 1); "
                "for (int i = 0; f && i < 4096; ++i) std::fwrite(b.data(), 1, b.size(), f);",
    # A process that survives its parent: a new session, a double fork, a renamed busy loop.
    "leave_behind": "if (fork() == 0) { setsid(); if (fork() == 0) { prctl(PR_SET_NAME, \"wb-leftover\"); "
                    "for (;;) sleep(1); } _exit(0); }",
    # Overwrites every result, cache entry, export and source it can open for writing.
    "overwrite": """
        int escaped = 0;
        wb_walk([&](const std::filesystem::path& p) {
            const std::string e = p.extension().string();
            if (e != ".json" && e != ".cpp" && e != ".cu" && e != ".md" && e != ".csv" && e != ".html" &&
                e != ".key") return;
            std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
            if (!f) return;
            f.seekp(0); f.write("HACKED", 6);
            if (p.string().rfind("/tmp", 0) != 0 && p.string().rfind("/var/tmp", 0) != 0) ++escaped;
        });
        if (escaped) std::abort();""",
    # Looks for other students' sources (each carries a 'student:' line) and the board's key.
    "read_others": """
        int found = 0;
        wb_walk([&](const std::filesystem::path& p) {
            if (p.extension() == ".key") { std::ifstream k(p); if (k) ++found; return; }
            if (p.extension() != ".cpp" && p.extension() != ".cu") return;
            std::ifstream f(p);
            std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            if (text.find("// student: ") != std::string::npos && text.find(WB_NAME) == std::string::npos) ++found;
        });
        if (found) std::abort();""",
    # Forges a passing report: into every pipe or file it holds open, and into any --json path.
    "forge_report": """
        std::ifstream c("/proc/self/cmdline");
        std::string all((std::istreambuf_iterator<char>(c)), std::istreambuf_iterator<char>());
        std::vector<std::string> args; size_t s = 0;
        for (size_t i = 0; i < all.size(); ++i) if (all[i] == 0) { args.push_back(all.substr(s, i - s)); s = i + 1; }
        std::string seed = "0", lesson = "lesson1", path;
        for (size_t i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == "--seed") seed = args[i + 1];
            if (args[i] == "--lesson") lesson = "lesson" + args[i + 1];
            if (args[i] == "--json") path = args[i + 1];
        }
        const std::string forged = "{\\"lesson\\": \\"" + lesson + "\\", \\"seed\\": " + seed +
            ", \\"verdict\\": \\"pass\\", \\"reason\\": \\"\\", \\"cases\\": [], \\"bench\\": []}";
        for (int fd = 3; fd < 256; ++fd) {
            struct stat st;
            if (fstat(fd, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISREG(st.st_mode)))
                if (write(fd, forged.data(), forged.size()) < 0) {}
        }
        if (!path.empty() && path.rfind("/dev/fd/", 0) != 0) { std::ofstream f(path); f << forged; }""",
    # Forges a passing report into its grader's report pipe and ends the process before the grader can
    # write: in the grader's own process this is a clean-looking pass (exit 0, the right seed). `fast`
    # adds benchmark rows at ten times the device's bandwidth. Where there is no pipe (its code in a
    # process of its own), it does nothing and its kernel runs as written.
    "forge_exit": """
        std::ifstream c("/proc/self/cmdline");
        std::string all((std::istreambuf_iterator<char>(c)), std::istreambuf_iterator<char>());
        std::vector<std::string> args; size_t s = 0;
        for (size_t i = 0; i < all.size(); ++i) if (all[i] == 0) { args.push_back(all.substr(s, i - s)); s = i + 1; }
        std::string seed = "0", lesson = "lesson1";
        for (size_t i = 0; i + 1 < args.size(); ++i) {
            if (args[i] == "--seed") seed = args[i + 1];
            if (args[i] == "--lesson") lesson = "lesson" + args[i + 1];
        }
        const std::string bench = WB_FAST ? "{\\"shape\\": \\"32768x4096\\", \\"dtype\\": \\"bf16\\", \\"student_gbps\\": 30000,"
            " \\"reference_gbps\\": 3000, \\"ratio\\": 10, \\"noise\\": 0.01, \\"verdict\\": \\"pass\\"}" : "";
        const std::string forged = "{\\"lesson\\": \\"" + lesson + "\\", \\"seed\\": " + seed +
            ", \\"verdict\\": \\"pass\\", \\"reason\\": \\"\\", \\"cases\\": [], \\"bench\\": [" + bench + "]}";
        bool forged_one = false;
        for (int fd = 3; fd < 256; ++fd) {
            struct stat st;
            if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
                if (write(fd, forged.data(), forged.size()) < 0) {}
                forged_one = true;
            }
        }
        if (forged_one) _exit(0);""",
    # Reaches for the network: a server the check runs on the loopback, and the outside world.
    "network": """
        auto reach = [](const char* host, int port) {
            int s = socket(AF_INET, SOCK_STREAM, 0);
            if (s < 0) return false;
            sockaddr_in a{}; a.sin_family = AF_INET; a.sin_port = htons(port);
            inet_pton(AF_INET, host, &a.sin_addr);
            bool ok = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
            close(s);
            return ok;
        };
        if (reach("127.0.0.1", WB_PORT) || reach("1.1.1.1", 53)) std::abort();""",
    # Leaves a process that keeps the GPU busy copying 1 GiB (GPU lessons).
    "gpu_hog": """
        if (fork() == 0) { setsid(); if (fork() == 0) {
            execlp("python3", "python3", "-c",
                   "import torch,sys\\nsys.argv[0]='wb-gpu-hog'\\na=torch.empty(1<<30,dtype=torch.uint8,device='cuda')\\n"
                   "b=torch.empty_like(a)\\nwhile True: b.copy_(a)", (char*)nullptr);
            for (;;) sleep(1); } _exit(0); }""",
}

# A compile that takes minutes and little memory: a thousand constant evaluations the compiler must
# finish, each small enough for both g++ and nvcc's front end to accept.
COMPILE_BOMB = ("constexpr unsigned long wb_step(unsigned long i) { unsigned long s = i; "
                "for (unsigned long a = 0; a < 200000; ++a) s += a ^ i; return s; }\n" +
                "\n".join(f"static_assert(wb_step({i}) != 1, \"\");" for i in range(1000)))


def _hostile(base, name, payload, port):
    fast = payload == "forge_fast"
    body = PAYLOADS["forge_exit" if fast else payload]
    helpers = WALK if "wb_walk" in body else ""
    code = (f"// student: {name}\n{HEADERS}\n{base}\n#define WB_NAME \"student: {name}\"\n#define WB_PORT {port}\n"
            f"#define WB_FAST {int(fast)}\n"
            f"namespace {{\n{helpers}int wb_payload() {{\n{body}\nreturn 0;\n}}\n")
    return code + "[[maybe_unused]] const int wb_run = wb_payload();\n}  // namespace\n"


def write_class(lesson, folder, port):
    """Writes the class into `folder`; returns {name: (expected status, what it tests)}."""
    ext = ".cpp" if lesson.number == 1 else ".cu"
    with open(lesson.solution, encoding="utf-8") as f:
        solution = f.read()
    with open(lesson.exercise, encoding="utf-8") as f:
        stub = f.read()
    os.makedirs(folder, exist_ok=True)
    expected = {}

    def put(name, text, status, what, subfolder=False, marked=True):
        path = os.path.join(folder, name, "mine" + ext) if subfolder else os.path.join(folder, name + ext)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if marked and not text.startswith("// student: "):
            text = f"// student: {name}\n" + text
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        expected[name] = (status, what)

    put("ann", solution, "correct", "honest: the reference")
    put("ben", solution + "\n// a second honest copy, graded on its own\n", "correct", "honest: the reference again")
    with open(os.path.join(folder, "ann" + ext), encoding="utf-8") as f:
        put("cleo", f.read(), "correct", "honest, a folder, same bytes as ann (cached in the same run)", True)
    put("dan", stub, "still the stub", "wrong: the stub as handed out", marked=False)
    if lesson.number == 1:
        wrong = solution.replace("sum / static_cast<float>(cols) + eps)", "sum / static_cast<float>(cols)) + eps")
        assert wrong != solution, "the lesson 1 solution changed: update the eps-outside-sqrt edit"
    else:
        bad = next(b for b in catalogue() if b.lesson == lesson.number and b.name == "no_tail_handling")
        wrong = bad.source()
    put("eve", wrong, "wrong answer at", "wrong: a plausible bug")
    put("kim", COMPILE_BOMB + "\n" + solution, "compile time limit", "hostile: a compile that never ends")
    for name, payload, status in [
            ("fay", "crash", "crashed (signal 11, SIGSEGV)"), ("gus", "hang", "time limit"),
            ("hal", "exit0", "exited during grading"), ("ivy", "flood", "output limit"),
            ("jon", "memory", "memory limit"), ("lea", "leave_behind", "left a process running"),
            ("max", "overwrite", "correct"), ("ned", "read_others", "correct"),
            ("oli", "forge_report", "report tampered"), ("pam", "network", "correct"),
            ("quin", "fork_bomb", "process limit"), ("ray", "big_file", "file size limit"),
            ("uma", "forge_exit", "wrong answer at")]:
        base = wrong if payload.startswith("forge") else solution  # a forged pass for a wrong kernel
        put(name, _hostile(base, name, payload, port), status, f"hostile: {payload.replace('_', ' ')}")
    if lesson.number != 1:
        put("vic", _hostile(solution, "vic", "forge_fast", port), "correct",
            "hostile: a forged pass with ten times the bandwidth, for a correct kernel")
        put("sam", _hostile(solution, "sam", "gpu_hog", port), "left a process running",
            "hostile: a GPU hog left behind")
        private = solution.replace(", 0, stream>>>", ", 0, wb_private_stream()>>>")
        assert private != solution, "the reference's launches changed: update the private-stream edit"
        private = ("#include <cuda_runtime.h>\nstatic cudaStream_t wb_private_stream() { static cudaStream_t s = [] {"
                   " cudaStream_t t; cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking); return t; }(); return s; }\n"
                   + private)
        put("tom", private, "wrong stream at", "wrong: launches on its own stream")
    return expected


def _listen():
    """A loopback server that counts connections (none may arrive)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    hits = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            hits.append(1)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return server, hits


def _snapshot(*folders):
    out = {}
    for folder in folders:
        for dirpath, _, files in os.walk(folder):
            for f in files:
                p = os.path.join(dirpath, f)
                with open(p, "rb") as fh:
                    out[p] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _ticketed():
    """Processes still carrying a board ticket in their environment (a submission's)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if b"WORKBOOK_BOARD_TICKET=" in f.read():
                    with open(f"/proc/{pid}/cmdline", "rb") as c:
                        command = c.read().replace(b"\0", b" ").decode(errors="replace")[:80]
                    found.append(f"{pid}: {command}")
        except OSError:
            pass
    return found


def _board(args, env, lesson, subs, out, extra, log_path):
    """Runs the board; its output goes to `log_path` as it comes (kept should this run be stopped)."""
    cmd = [sys.executable, os.path.join(ROOT, "grade"), "leaderboard", lesson.name, subs, "--out", out, *extra]
    start = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        code = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True,
                              timeout=args.board_timeout).returncode
    with open(log_path, encoding="utf-8") as log:
        return code, log.read(), time.monotonic() - start


def run(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lesson", default="lesson1")
    p.add_argument("--work", required=True, help="a folder for the class, the board's state and exports")
    p.add_argument("--timeout", default="30", help="the board's grading time limit per submission")
    p.add_argument("--compile-timeout", default="30")
    p.add_argument("--memory-limit", default="2048")
    p.add_argument("--board-timeout", type=int, default=1500)
    p.add_argument("--gpus", help="passed to the board")
    p.add_argument("--samples", help="timing samples per shape, passed to the board")
    p.add_argument("--only", help="grade only these submissions of the class (comma-separated names)")
    p.add_argument("--alone", help="the grader's JSON report of the reference graded on its own: the honest "
                                   "rows' bandwidth must match it within the noise")
    p.add_argument("--one-process", help="the grader's JSON report of the reference graded in one process "
                                         "(./grade's timing): the honest rows' bandwidth is printed against it on "
                                         "every shape of 64 MiB or more. DEV=PATH,DEV=PATH gives one per GPU slot")
    args = p.parse_args(argv)
    lesson = find_lesson(args.lesson)
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    subs, state, out = (os.path.join(work, d) for d in ("submissions", "state", "board"))
    server, hits = _listen()
    expected = write_class(lesson, subs, server.getsockname()[1])
    if args.only:
        keep = set(args.only.split(","))
        for name in set(expected) - keep:
            target = os.path.join(subs, name)
            shutil.rmtree(target) if os.path.isdir(target) else os.remove(next(
                os.path.join(subs, f) for f in os.listdir(subs) if os.path.splitext(f)[0] == name))
            del expected[name]
    env = dict(os.environ, WORKBOOK_STATE_DIR=state, WORKBOOK_BOARD_MEMORY="1", PYTHONUNBUFFERED="1")
    extra = ["--timeout", args.timeout, "--compile-timeout", args.compile_timeout, "--memory-limit",
             args.memory_limit, "--file-size-limit", "64"] + (["--gpus", args.gpus] if args.gpus else []) + \
        (["--samples", args.samples] if args.samples else [])
    checks = []

    def check(name, ok, detail=""):
        checks.append((name, bool(ok), detail))

    # Another class graded earlier from the same build folder (as a second section's board would be):
    # its sources and its board's key must stay out of this class's sandboxes (`ned` looks for them).
    decoy = os.path.join(os.environ.get("WORKBOOK_BUILD_DIR", os.path.join(ROOT, "build")),
                         f"other-class-{os.getpid()}")
    os.makedirs(os.path.join(decoy, "submissions"), exist_ok=True)
    with open(os.path.join(decoy, "submissions", "zed.cu"), "w", encoding="utf-8") as f:
        f.write("// student: zed\n")
    with open(os.path.join(decoy, "board.key"), "w", encoding="utf-8") as f:
        f.write("not for students\n")
    atexit.register(shutil.rmtree, decoy, True)
    before = _snapshot(subs)
    runs = []
    for attempt in ("first run", "second run (cache)"):
        code, text, seconds = _board(args, env, lesson, subs, out, extra,
                                     os.path.join(work, f"{attempt.split()[0]}-run.log"))
        print(f"{attempt}: board run {seconds:.1f} s", flush=True)
        check(f"{attempt}: the board exits 0", code == 0, f"exit {code}")
        try:
            with open(os.path.join(out, "leaderboard.json"), encoding="utf-8") as f:
                board = json.load(f)
        except (OSError, ValueError) as e:
            check(f"{attempt}: the board wrote its JSON", False, str(e))
            break
        rows = {r["name"]: r for group in board["boards"].values() for r in group}
        runs.append(rows)
        if board.get("run"):
            print(f"{attempt}: {board['run']['text']}", flush=True)
        for name, (status, what) in sorted(expected.items()):
            got = rows.get(name, {}).get("status", "(missing)")
            ok = got.startswith(status) if status.endswith(" at") else got == status
            check(f"{attempt}: {name} ({what}) is '{status}'", ok, f"got '{got}': {rows.get(name, {}).get('detail', '')}")
        for name, (status, _) in sorted(expected.items()):
            if status == "left a process running" and name in rows:
                detail = rows[name].get("detail", "")
                check(f"{attempt}: {name}'s row names the process it left", re.search(r"pid \d+ \(", detail), detail)
                if attempt.startswith("first"):
                    print(f"{name}: the sandbox had ended {rows[name].get('verdict_to_end_s')} s after the verdict "
                          "of the grading from outside", flush=True)
        ranked = sorted(n for n, r in rows.items() if r.get("rank") is not None)
        check(f"{attempt}: exactly the honest and harmless-hostile rows are ranked",
              ranked == sorted(n for n, (s, _) in expected.items() if s == "correct"), ", ".join(ranked))
        check(f"{attempt}: the board is isolated", board.get("isolated"), board.get("sandbox", ""))
        m = re.search(r"board peak memory: (\d+) MiB", text)
        check(f"{attempt}: the board's own memory stays under 300 MiB", m and int(m.group(1)) < 300,
              m.group(0) if m else "not reported")
        time.sleep(1)
        left = _ticketed()
        check(f"{attempt}: no process of any submission is left", not left, "; ".join(left[:3]))
        if attempt.startswith("first"):
            check("first run: every row's GPU check ran (or there is no GPU)",
                  all(r.get("gpu_check", "checked") == "checked" for r in rows.values()),
                  "; ".join(sorted({r.get('gpu_check', '') for r in rows.values()}))[:200])
        time.sleep(0.5)
    if lesson.needs_gpu and runs and "vic" in expected:
        vic, ann = runs[0].get("vic", {}).get("gbps", 0), runs[0].get("ann", {}).get("gbps", 0)
        check("first run: the forged bandwidth is not what the board ranks (vic within 10% of ann)",
              ann > 0 and vic <= 1.1 * ann, f"vic {vic:.0f} GB/s, ann {ann:.0f} GB/s")
    if args.alone and runs:
        with open(args.alone, encoding="utf-8") as f:
            alone = summarise(json.load(f).get("bench", []))
        for name in [n for n in ("ann", "ben") if n in expected]:
            gbps, band = runs[0].get(name, {}).get("gbps", 0), max(3 * alone["noise"], 0.03)
            check(f"first run: {name}'s bandwidth matches the reference graded alone (within {100 * band:.1f}%)",
                  alone["gbps"] > 0 and abs(gbps / alone["gbps"] - 1) <= band,
                  f"{gbps:.0f} GB/s on the board, {alone['gbps']:.0f} alone")
    if args.one_process and runs:
        reports = {}
        for part in args.one_process.split(","):
            device, _, path = part.rpartition("=")
            with open(path, encoding="utf-8") as f:
                reports[device] = {(b["shape"], b["dtype"]): b for b in json.load(f).get("bench", [])}
        for name in [n for n in ("ann", "ben", "cleo") if n in expected]:
            row = runs[0].get(name, {})
            one = reports.get(row.get("device", ""), reports.get("", next(iter(reports.values()))))
            large = [(b, one.get((b["shape"], b["dtype"]))) for b in row.get("bench", [])
                     if b.get("bytes", 0) >= 64 * 1024 * 1024]
            ratios = [(b["shape"], b["student_gbps"] / o["student_gbps"]) for b, o in large
                      if o and o.get("student_gbps")]
            # A measurement, not a check: the board's clock is not yet within 3% of ./grade's (docs/design.md).
            print(f"first run: {name} on GPU {row.get('device', '?')}, board / one-process bandwidth, shapes of "
                  "64 MiB or more: " + ", ".join(f"{s} {r:.3f}" for s, r in ratios), flush=True)
    if len(runs) == 2:
        cached = [n for n, r in runs[1].items() if r.get("cached")]
        check("second run: every row comes from the cache", len(cached) == len(expected),
              f"{len(cached)} of {len(expected)}")
        same = [n for n in expected if runs[0].get(n, {}).get("status") == runs[1].get(n, {}).get("status")]
        check("second run: every row is as in the first", len(same) == len(expected),
              ", ".join(sorted(set(expected) - set(same))))
    check("nobody's source was changed", _snapshot(subs) == before)
    check("no connection reached the loopback server", not hits, f"{len(hits)} connection(s)")
    server.close()
    if lesson.needs_gpu:
        apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,process_name", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.strip()
        check("no process is left on the GPU", not apps, apps)
    width = max(len(c[0]) for c in checks)
    failed = [c for c in checks if not c[1]]
    for name, ok, detail in checks:
        shown = detail if not ok or "bandwidth" in name else ""
        print(f"{'ok  ' if ok else 'FAIL'}  {name.ljust(width)}  {shown}".rstrip())
    print(f"\n{len(checks) - len(failed)} of {len(checks)} checks hold")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(run())
