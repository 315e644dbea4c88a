"""Real processes for the runtime tests: sleepers and servers started inside folders,
a process that ignores SIGTERM, a "nested agent" whose parent has exited. Every one of
them is killed when its test ends."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Vwt

IGNORES_TERM = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('ready', flush=True); time.sleep(120)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serving(port: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return True
        time.sleep(0.05)
    return False


def alive(pid: int) -> bool:
    """Still running (a zombie, dead but not yet reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state != b"Z"


class Procs:
    """Starts processes and kills whatever of them is left at the end."""

    def __init__(self) -> None:
        self.pids: list[int] = []
        self.children: list[subprocess.Popen[bytes]] = []

    def start(self, argv: list[str], cwd: Path, wait_line: bool = False) -> int:
        child = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE if wait_line else subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)
        self.children.append(child)
        self.pids.append(child.pid)
        if wait_line:
            assert child.stdout is not None
            child.stdout.readline()  # it has set up its signal handling
        return child.pid

    def sleeper(self, cwd: Path) -> int:
        return self.start(["sleep", "120"], cwd)

    def ignoring_term(self, cwd: Path) -> int:
        return self.start([sys.executable, "-c", IGNORES_TERM], cwd, wait_line=True)

    def server(self, cwd: Path, port: int) -> int:
        """`python -m http.server PORT` with its current directory in `cwd`, serving."""
        pid = self.start([sys.executable, "-m", "http.server", str(port), "--bind",
                          "127.0.0.1"], cwd)
        assert serving(port), f"http.server on {port} did not start"
        assert self.children[-1].poll() is None, f"port {port} was taken by someone else"
        return pid

    def orphan(self, cwd: Path) -> int:
        """A `sleep` started inside `cwd` by a shell that exits at once: the nested agent
        that outlived its parent (the init process, or a subreaper, adopts it)."""
        out = subprocess.run(["sh", "-c", "sleep 120 >/dev/null 2>&1 & echo $!"], cwd=cwd,
                             capture_output=True, text=True, check=True,
                             start_new_session=True)
        pid = int(out.stdout)
        self.pids.append(pid)
        return pid

    def reap(self) -> None:
        """Collect the exit status of the children that ended (so they are not zombies)."""
        for child in self.children:
            child.poll()

    def cleanup(self) -> None:
        for pid in self.pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for child in self.children:
            with contextlib.suppress(Exception):
                child.wait(timeout=10)


@pytest.fixture
def procs() -> Iterator[Procs]:
    started = Procs()
    yield started
    started.cleanup()


def leased_port(vwt: Vwt, name: str) -> int:
    """The first port of NAME's lease, as `vwt port` says it."""
    return int(vwt.ok("port", name, "--json").json()["port"])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path.resolve() / "folder"
    path.mkdir()
    return path
