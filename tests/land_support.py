"""Vocabulary of the `vwt land` tests: worktrees with work of their own, and the command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from conftest import Repo, Result, Vwt

DRIVER = Path(__file__).resolve().parent / "land_driver.py"


class Lander:
    """Runs `vwt land ARGS` (until the command is wired: `tests/land_driver.py`)."""

    def __init__(self, vwt: Vwt, where: Path) -> None:
        self.vwt = vwt
        self.exe = where / "vwt-land"
        self.exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{DRIVER}" "$@"\n')
        self.exe.chmod(0o755)

    def __call__(self, *args: str, code: int | None = None, **kw: Any) -> Result:
        result = self.vwt(*args, exe=str(self.exe), **kw)
        if code is not None:
            assert result.code == code, str(result)
        return result

    def json(self, *args: str, code: int | None = None, **kw: Any) -> dict[str, Any]:
        result = self(*args, "--json", code=code, **kw)
        data: dict[str, Any] = json.loads(result.out)
        return data

    def spawn(self, *args: str, cwd: Path | None = None,
              env_extra: dict[str, str | None] | None = None,
              new_session: bool = False) -> subprocess.Popen[str]:
        proc = subprocess.Popen([str(self.exe), *args],
                                cwd=cwd or self.vwt.sandbox.default_cwd,
                                env=self.vwt.env(env_extra), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=new_session)
        self.vwt.started.append(proc)
        return proc


def with_work(repo: Repo, vwt: Vwt, name: str, files: dict[str, str] | None = None) -> Path:
    """A new worktree NAME with one commit of its own (by default a file named after it)."""
    path = Path(vwt.new(name, "--no-fetch")["path"])
    repo.commit(f"{name}: work", files or {f"{name}.txt": f"{name}'s work\n"}, cwd=path)
    return path


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {r["name"]: r["outcome"] for r in report["results"]}


def on_main(repo: Repo, rel: str) -> str | None:
    """The file `rel` as main has it (None when it has none)."""
    found = repo.sandbox.run_git("show", f"main:{rel}", cwd=repo.path, check=False)
    return found.stdout if found.returncode == 0 else None


def tickets(repo: Repo) -> list[Path]:
    folder = repo.layout.root / ".land" / repo.bucket / "tickets"
    return sorted(folder.glob("*.ticket")) if folder.is_dir() else []
