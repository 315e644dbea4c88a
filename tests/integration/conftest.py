"""Fixtures of the integration tests; the helpers themselves live in `vwt_support`.

``box``: a sandbox with its own HOME, VIBE_HOME and GIT_CONFIG_GLOBAL and a repository
with one commit (see `vwt_support.Box`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .vwt_support import BIN_DIR, LEAKS, Box


@pytest.fixture
def box(tmp_path: Path) -> Box:
    tmp = tmp_path.resolve()
    (tmp / "home").mkdir()
    gitconfig = tmp / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Test\n\temail = t@example.com\n"
                         "[init]\n\tdefaultBranch = main\n")
    env = {k: v for k, v in os.environ.items() if k not in LEAKS}
    env.update(
        HOME=str(tmp / "home"), VIBE_HOME=str(tmp / "vibe"), GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1", GIT_CEILING_DIRECTORIES=str(tmp), GIT_TERMINAL_PROMPT="0",
        PATH=f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}", LC_ALL="C.UTF-8",
        SHELL="/bin/sh", TERM="xterm",
    )
    repo = tmp / "repo"
    repo.mkdir()
    b = Box(tmp, env, repo)
    b.git("init", "-q")
    (repo / "README.md").write_text("hello\n")
    b.git("add", ".")
    b.git("commit", "-qm", "first")
    return b
