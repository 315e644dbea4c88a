"""Vocabulary of the `vwt land` tests: worktrees with work of their own, and the command."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from conftest import Repo, Result, Vwt


class Lander:
    """Runs `vwt land ARGS`."""

    def __init__(self, vwt: Vwt) -> None:
        self.vwt = vwt

    def __call__(self, *args: str, code: int | None = None, **kw: Any) -> Result:
        result = self.vwt("land", *args, **kw)
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
        return self.vwt.spawn("land", *args, cwd=cwd, env_extra=env_extra,
                              new_session=new_session)


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
