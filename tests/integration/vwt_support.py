"""Helpers of the integration tests: real git, the real `vwt`, one sandbox per test.

``Box`` is the sandbox: its own HOME, VIBE_HOME and GIT_CONFIG_GLOBAL, a repository
``box.repo`` with one commit, and ``box.vwt(*args)`` running the installed
executable in it.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN_DIR = Path(sys.executable).parent
VWT = str(BIN_DIR / "vwt") if (BIN_DIR / "vwt").exists() else (shutil.which("vwt") or "vwt")
LEAKS = ("VIBE_HOME", "VIBE_WORKTREE_LIMIT", "VWT_HOLDER_ID", "GIT_DIR", "GIT_WORK_TREE",
         "GIT_INDEX_FILE", "NO_COLOR")


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Box:
    tmp: Path
    env: dict[str, str]
    repo: Path

    @property
    def vibe_home(self) -> Path:
        return Path(self.env["VIBE_HOME"])

    @property
    def home(self) -> Path:
        return Path(self.env["HOME"])

    def git(self, *args: str, cwd: Path | None = None) -> str:
        return subprocess.run(["git", *args], cwd=cwd or self.repo, env=self.env, check=True,
                              capture_output=True, text=True).stdout

    def vwt(self, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            input: str | None = None) -> Run:
        proc = subprocess.run([VWT, *args], cwd=cwd or self.repo, env={**self.env, **(env or {})},
                              input=input, capture_output=True, text=True, timeout=60,
                              stdin=None if input is not None else subprocess.DEVNULL)
        return Run(proc.returncode, proc.stdout, proc.stderr)

    def ok(self, *args: str, **kwargs: Any) -> Run:
        result = self.vwt(*args, **kwargs)
        assert result.code == 0, f"vwt {' '.join(args)}: {result.code}\n{result.err}"
        return result

    def new(self, name: str) -> dict[str, Any]:
        data: dict[str, Any] = self.ok("new", name, "--json").json()
        return data

    def write_config(self, text: str) -> None:
        self.vibe_home.mkdir(parents=True, exist_ok=True)
        (self.vibe_home / "config.toml").write_text(text)


def run_on_terminal(argv: list[str], cwd: Path, env: dict[str, str],
                    timeout: float = 30) -> tuple[int, str]:
    """Run with stdout and stderr on a pseudo-terminal; (exit code, everything it wrote)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=timeout), b"".join(chunks).decode(errors="replace")
