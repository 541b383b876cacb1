"""Processes and files of one safety run, and their removal even when the run is killed.

Every process the run starts is its child with PR_SET_PDEATHSIG(SIGKILL): the kernel kills it
when the run dies, even by SIGKILL. As a second line, the run records each child's pid and start
time in /tmp/redlease-safety/run-<run pid>.pids; the next run's sweep() kills those of a dead
run (checked by start time, so a recycled pid is never hit) and removes the run's directory.
"""

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
from typing import Callable, List, Optional

ROOT = "/tmp/redlease-safety"
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def start_time(pid: int) -> Optional[str]:
    """The process's start time in clock ticks (field 22 of /proc/pid/stat), None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    return start_time(pid) is not None


def _child_setup(uid: Optional[int], gid: Optional[int]) -> Callable[[], None]:
    def setup() -> None:
        if gid is not None:
            os.setgroups([])
            os.setgid(gid)
        if uid is not None:
            os.setuid(uid)
        # after the uid change: changing credentials clears the parent-death signal
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() == 1:  # the run died before the prctl
            os._exit(1)
    return setup


class Run:
    """The run's directory and children. close() stops every child and removes the directory."""

    def __init__(self) -> None:
        os.makedirs(ROOT, exist_ok=True)
        self.pid = os.getpid()
        self.dir = tempfile.mkdtemp(prefix=f"run-{self.pid}-", dir=ROOT)
        os.chmod(self.dir, 0o755)
        self.pids_file = os.path.join(ROOT, f"run-{self.pid}.pids")
        with open(self.pids_file, "w") as f:
            f.write(self.dir + "\n")
        self.children: List[subprocess.Popen] = []

    def spawn(self, argv: List[str], *, uid: Optional[int] = None, gid: Optional[int] = None,
              **kw) -> subprocess.Popen:
        p = subprocess.Popen(argv, preexec_fn=_child_setup(uid, gid), **kw)
        self.children.append(p)
        with open(self.pids_file, "a") as f:
            f.write(f"{p.pid} {start_time(p.pid)}\n")
        return p

    def stop(self, p: subprocess.Popen) -> None:
        if p.poll() is None:
            try:
                p.send_signal(signal.SIGCONT)  # a stopped child
                p.kill()
            except ProcessLookupError:
                pass
        p.wait()

    def close(self) -> None:
        for p in reversed(self.children):
            self.stop(p)
        self.children = []
        shutil.rmtree(self.dir, ignore_errors=True)
        try:
            os.unlink(self.pids_file)
        except FileNotFoundError:
            pass


def sweep() -> List[str]:
    """Removes what runs that are no longer alive left behind; answers what it removed."""
    removed: List[str] = []
    if not os.path.isdir(ROOT):
        return removed
    for name in os.listdir(ROOT):
        if not (name.startswith("run-") and name.endswith(".pids")):
            continue
        run_pid = int(name[4:-5])
        if alive(run_pid):
            continue
        path = os.path.join(ROOT, name)
        with open(path) as f:
            lines = f.read().splitlines()
        run_dir, children = lines[0], lines[1:]
        for line in children:
            pid_s, started = line.split()
            pid = int(pid_s)
            if start_time(pid) == started:
                try:
                    os.kill(pid, signal.SIGKILL)
                    removed.append(f"process {pid}")
                except ProcessLookupError:
                    pass
        _remove_shared_memory(run_dir)
        shutil.rmtree(run_dir, ignore_errors=True)
        os.unlink(path)
        removed.append(f"run {run_pid} ({run_dir})")
    return removed


def _remove_shared_memory(run_dir: str) -> None:
    """A PostgreSQL killed by SIGKILL leaves its SysV segment (its id is in postmaster.pid)."""
    pidfile = os.path.join(run_dir, "pg", "data", "postmaster.pid")
    try:
        with open(pidfile) as f:
            fields = f.read().splitlines()[6].split()
        subprocess.run(["ipcrm", "-m", fields[1]], stderr=subprocess.DEVNULL, check=False)
    except (OSError, IndexError):
        pass
