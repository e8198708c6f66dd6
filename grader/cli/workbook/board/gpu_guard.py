"""Is anything else using the GPU? A timing taken next to another process is not a clean one."""
import subprocess
import time


def gpu_identity(device=None):
    """Name, driver and SM clock of the GPU a grading process will see; 'no GPU' without one. The clock is
    read before the grading, mostly the idle one: the clocks shown are those the grader reads while timing."""
    cmd = ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm", "--format=csv,noheader"]
    if device is not None:
        cmd += ["-i", str(device)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            name, driver, clock = [p.strip() for p in out.stdout.strip().splitlines()[0].split(",")]
            return {"gpu": name, "driver": driver, "idle_sm_clock": clock}
    except (OSError, subprocess.TimeoutExpired, ValueError):
        pass
    return {"gpu": "no GPU", "driver": "", "idle_sm_clock": ""}


def foreign_processes(device=None):
    """(processes, note): the compute processes nvidia-smi lists on `device` ("pid (name, MiB)"),
    and a note when that could not be checked (None when it was)."""
    cmd = ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv,noheader,nounits"]
    if device is not None:
        cmd += ["-i", str(device)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return [], f"could not ask nvidia-smi for the GPU's processes ({type(e).__name__})"
    if out.returncode != 0:
        return [], f"nvidia-smi could not list the GPU's processes: {out.stdout.strip() or out.stderr.strip()}"
    found = []
    for line in out.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 3 and parts[0].isdigit():
            found.append(f"pid {parts[0]} ({parts[1]}, {parts[2]} MiB)")
    return found, None


def settled_foreign_processes(device=None, wait=15.0, poll=0.5, query=None):
    """foreign_processes once the GPU has settled: a grading's processes that the sandbox has
    just killed stay on nvidia-smi's list while the driver tears their contexts down (seconds
    under gVisor), and they are not another user. Only a process still listed after `wait`
    seconds counts."""
    query = query or foreign_processes
    deadline = time.monotonic() + wait
    found, note = query(device)
    while found and note is None and time.monotonic() < deadline:
        time.sleep(poll)
        found, note = query(device)
    return found, note
