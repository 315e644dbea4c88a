"""Running one child process and measuring its wall time and peak memory."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TIMEOUT_S = 300.0


class BenchError(Exception):
    """A fixture step or a measured command failed; the benchmark cannot give a result."""


@dataclass(frozen=True)
class Run:
    argv: tuple[str, ...]
    returncode: int
    seconds: float
    peak_mib: float
    stdout: str
    stderr: str


def _maxrss_mib(ru_maxrss: int) -> float:
    # Linux reports KiB, macOS bytes.
    return ru_maxrss / (1024 * 1024) if sys.platform == "darwin" else ru_maxrss / 1024


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: bytes | None = None,
    check: bool = True,
) -> Run:
    """Run argv to completion; the wall time spans spawn to reap, the RSS comes from wait4."""
    args = tuple(os.fspath(a) for a in argv)
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=err,
        )
        timer = threading.Timer(TIMEOUT_S, proc.kill)
        timer.start()
        try:
            out = _communicate(proc, stdin)
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        errtext = err.read().decode("utf-8", "replace")
    result = Run(
        args,
        proc.returncode,
        seconds,
        _maxrss_mib(usage.ru_maxrss),
        out.decode("utf-8", "replace"),
        errtext,
    )
    if check and result.returncode != 0:
        raise BenchError(describe_failure(result))
    return result


def _communicate(proc: subprocess.Popen[bytes], stdin: bytes | None) -> bytes:
    """Feed stdin (from a thread, so a full pipe cannot deadlock) and read stdout to EOF."""
    assert proc.stdout is not None
    feeder: threading.Thread | None = None
    if stdin is not None:
        assert proc.stdin is not None
        pipe = proc.stdin

        def feed() -> None:
            try:
                pipe.write(stdin)
            finally:
                pipe.close()

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
    out = proc.stdout.read()
    proc.stdout.close()
    if feeder is not None:
        feeder.join()
    return out


def describe_failure(result: Run) -> str:
    tail = (result.stderr.strip() or result.stdout.strip())[-600:]
    return f"`{' '.join(result.argv)}` exited {result.returncode}: {tail}"


class Spawner:
    """Client of benchmarks/spawner.py: measured runs with an accurate peak RSS."""

    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="vwt-bench-spawner-"))
        self._out = self._dir / "stdout"
        self._err = self._dir / "stderr"
        script = Path(__file__).with_name("spawner.py")
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-S", str(script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._lock = threading.Lock()

    def _reply(self) -> dict[str, Any]:
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        if not line:
            raise BenchError("the measuring spawner process died")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(self, args: tuple[str, ...], cwd: Path, env: Mapping[str, str]) -> Run:
        request = {
            "argv": list(args),
            "cwd": str(cwd),
            "env": dict(env),
            "stdout": str(self._out),
            "stderr": str(self._err),
        }
        assert self._proc.stdin is not None
        with self._lock:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
            pid = int(self._reply()["pid"])
            timer = threading.Timer(TIMEOUT_S, _kill, (pid,))
            timer.start()
            try:
                done = self._reply()
            finally:
                timer.cancel()
            stdout = self._out.read_text("utf-8", "replace")
            stderr = self._err.read_text("utf-8", "replace")
        return Run(
            args,
            int(done["returncode"]),
            float(done["seconds"]),
            _maxrss_mib(int(done["maxrss"])),
            stdout,
            stderr,
        )

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=10)
        shutil.rmtree(self._dir, ignore_errors=True)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


_spawner: Spawner | None = None


def measure(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path,
    env: Mapping[str, str],
    check: bool = True,
) -> Run:
    """Run argv through the spawner: wall time from fork to reap, peak RSS of that child."""
    global _spawner
    if _spawner is None:
        _spawner = Spawner()
        atexit.register(_spawner.close)
    result = _spawner.run(tuple(os.fspath(a) for a in argv), cwd, env)
    if check and result.returncode != 0:
        raise BenchError(describe_failure(result))
    return result


class Var(str):
    """A shell variable set by an earlier `Script.capture`, used as one argument."""


class Script:
    """A baseline written as the raw script a person would write: /bin/sh runs its git
    commands one after another, and `run_script` measures that one process exactly as the
    tool is measured (through the spawner, fork to reap). Timing each raw command from here
    instead would add a round trip to this process per command, which the tool never pays.

    `mark(text)` prints a line `@@ text` on the script's stdout, so the output of the
    commands that follow can be told apart afterwards (`sections`)."""

    def __init__(self) -> None:
        self.lines = ["set -e"]

    def _command(self, argv: Sequence[str | os.PathLike[str]], cwd: Path,
                 env: Mapping[str, str] | None) -> str:
        words = [f'"${a}"' if isinstance(a, Var) else shlex.quote(os.fspath(a)) for a in argv]
        assigned = [f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()]
        return f"cd {shlex.quote(os.fspath(cwd))}; " + " ".join([*assigned, *words])

    def run(self, argv: Sequence[str | os.PathLike[str]], *, cwd: Path,
            env: Mapping[str, str] | None = None, check: bool = True) -> None:
        """One command; `env`: variables for it alone. Unchecked: its failure is ignored."""
        self.lines.append(self._command(argv, cwd, env) + ("" if check else " || true"))

    def capture(self, var: str, argv: Sequence[str | os.PathLike[str]], *, cwd: Path,
                env: Mapping[str, str] | None = None) -> Var:
        """Run a command and keep its output in shell variable `var`."""
        command = self._command(argv, cwd, env)
        where, _, rest = command.partition("; ")
        self.lines.append(f"{where}; {var}=$({rest})")
        return Var(var)

    def mark(self, text: str) -> None:
        self.lines.append(f"printf '\\n@@ %s\\n' {shlex.quote(text)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def run_script(script: Script, *, cwd: Path, env: Mapping[str, str]) -> Run:
    """Measure the whole script as one process, after flushing dirty pages (as the tool's
    timed runs are)."""
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False, encoding="utf-8") as fh:
        fh.write(script.text())
    try:
        os.sync()
        return measure(["/bin/sh", fh.name], cwd=cwd, env=env)
    finally:
        os.unlink(fh.name)


def sections(stdout: str) -> dict[str, str]:
    """The output of a script between its `mark` lines, by mark."""
    found: dict[str, str] = {}
    parts = ("\n" + stdout).split("\n@@ ")
    for part in parts[1:]:
        name, _, text = part.partition("\n")
        found[name] = text
    return found
