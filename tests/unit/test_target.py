"""The target branch rule of §8, on real repositories."""

from __future__ import annotations

import pytest

from vibe_worktree.core import git as g
from vibe_worktree.core import target
from vibe_worktree.core.errors import VwtError


def test_plain_repository_targets_main(repo) -> None:
    found = target.require(g.Git(str(repo.path)))
    assert (found.branch, found.remote, found.commit) == ("main", None, repo.rev("main"))


def test_remote_default_branch_names_the_target(origin_repo) -> None:
    origin_repo.git("branch", "trunk")
    origin_repo.git("symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    found = target.require(g.Git(str(origin_repo.path)))
    assert found.branch == "main"
    assert found.remote_name == "origin/main"
    assert found.remote_commit == origin_repo.rev("refs/remotes/origin/main")


def test_master_when_no_main(make_repo) -> None:
    r = make_repo("old")
    r.git("branch", "-m", "main", "master")
    assert target.require(g.Git(str(r.path))).branch == "master"


def test_no_target_branch_is_an_error_that_says_pass_into(make_repo) -> None:
    r = make_repo("odd")
    r.git("branch", "-m", "main", "trunk")
    assert target.resolve(g.Git(str(r.path))) is None
    with pytest.raises(VwtError, match="pass --into"):
        target.require(g.Git(str(r.path)))
    assert target.require(g.Git(str(r.path)), "trunk").branch == "trunk"


def test_unknown_into_branch_is_refused(repo) -> None:
    with pytest.raises(VwtError, match="does not exist"):
        target.require(g.Git(str(repo.path)), "nope")
