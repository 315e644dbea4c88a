"""A creator that waited on another's reservation must not act on what it read before."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from vibe_worktree.api import Worktrees
from vibe_worktree.core.records import read_record
from vibe_worktree.lifecycle.create import _resume_reservation


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    gitconfig = tmp_path / "gitconfig"
    gitconfig.write_text("[user]\n\tname = T\n\temail = t@example.com\n"
                         "[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(gitconfig))
    path = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "."], cwd=path, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=path, check=True)
    return path


def test_a_reservation_finished_meanwhile_is_not_torn_down(repo: Path, tmp_path: Path) -> None:
    """Parallel `new NAME`: B reads A's reservation, A finishes and releases `.starting`,
    B then takes `.starting`. B must see A's finished record and reuse the worktree, not
    take A's fresh (clean) checkout for a dead creator's and make it again (seen as two
    `created: true` in the concurrency test; a checkout already handed out to A's caller)."""
    wt = Worktrees(home=str(tmp_path / "vibe"), cwd=str(repo))
    made = wt.create("shared", fetch=False)
    claim = wt.repo.claim("shared")
    finished = read_record(claim.record_path, "shared")
    seen_before = finished._replace(base_commit=None)  # what B read while A was working
    inode = os.stat(made.path).st_ino

    outcome = _resume_reservation(wt.repo, claim, seen_before)

    assert os.stat(made.path).st_ino == inode, "A's finished checkout was torn down"
    assert read_record(claim.record_path, "shared") == finished
    assert not hasattr(outcome, "starting"), "B reserved a name A had finished"
