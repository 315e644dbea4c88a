"""An isolated temporary world per benchmark: HOME, git config, VIBE_HOME, fixtures."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

from benchmarks.proc import Run, measure, run

# Inherited variables that would make git or the tool look outside the sandbox.
_DROP_PREFIXES = ("GIT_", "VIBE_")


def find_tool(explicit: str | None = None) -> Path:
    """The `vwt` script next to the running interpreter, else the one on PATH."""
    if explicit:
        return Path(explicit).absolute()
    beside = Path(sys.executable).parent / "vwt"
    if beside.exists():
        return beside
    found = shutil.which("vwt")
    if found:
        return Path(found)
    return beside  # missing: every benchmark then reports the spawn failure


def base_env(user_home: Path, gitconfig: Path, vibe_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP_PREFIXES)}
    env.update(
        HOME=str(user_home),
        XDG_CONFIG_HOME=str(user_home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_TERMINAL_PROMPT="0",
        VIBE_HOME=str(vibe_home),
        LC_ALL="C",
    )
    return env


_GITCONFIG = """\
[user]
\tname = Bench User
\temail = bench@example.com
[init]
\tdefaultBranch = main
[advice]
\tdetachedHead = false
[gc]
\tauto = 0
"""


class Sandbox:
    """Temporary folder holding the fixture repositories, a user HOME and a VIBE_HOME."""

    def __init__(self, tag: str, tool: Path, keep: bool = False) -> None:
        self.tool = tool
        self.keep = keep
        self.root = Path(tempfile.mkdtemp(prefix=f"vwt-bench-{tag}-")).resolve()
        self.user_home = self.root / "home"
        self.user_home.mkdir()
        self.gitconfig = self.root / "gitconfig"
        self.gitconfig.write_text(_GITCONFIG, encoding="utf-8")
        self.vibe_home = self.root / "vibe-home"
        self.vibe_home.mkdir()
        self.env = self.env_for(self.vibe_home)

    def env_for(self, vibe_home: Path) -> dict[str, str]:
        return base_env(self.user_home, self.gitconfig, vibe_home)

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    def git(self, *args: str, cwd: Path, stdin: bytes | None = None) -> str:
        return run(["git", *args], cwd=cwd, env=self.env, stdin=stdin).stdout

    def vwt(
        self,
        args: Sequence[str],
        *,
        cwd: Path,
        env: dict[str, str] | None = None,
        check: bool = True,
        sync: bool = False,
    ) -> Run:
        if sync:
            os.sync()
        return measure([self.tool, *args], cwd=cwd, env=env or self.env, check=check)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.keep:
            print(f"  kept {self.root}", file=sys.stderr)
            return
        remove_tree(self.root)


def remove_tree(path: Path) -> None:
    """Delete a fixture tree; retry once, since a late tool child may still be deleting in it."""
    for _ in range(2):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.5)
