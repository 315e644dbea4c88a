"""`vwt new --pr N`: a worktree on pull request N of the remote, in branch `pr-N`.

GitHub, Gitea and Forgejo publish a pull request's head as `refs/pull/N/head`, GitLab a
merge request's as `refs/merge-requests/N/head`; the first that exists is fetched (as the
user would, credentials and all) into `refs/vibe/pull/N`, and the new branch starts there.
"""

from __future__ import annotations

from ..core import git as g
from ..core.errors import NotFound, VwtError
from ..core.layout import Root
from .worktrees import load_entry, open_repo

PULL_FETCH_TIMEOUT = 120.0
HEADS = ("refs/pull/{n}/head", "refs/merge-requests/{n}/head")


def branch_for(number: int) -> str:
    return f"pr-{number}"


def check_number(number: object) -> int:
    if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
        raise VwtError(f"--pr needs a pull request number, not {number!r}", 2)
    return number


def _remote(git: g.Git) -> str:
    remotes = g.remotes(git)
    if "origin" in remotes:
        return "origin"
    if len(remotes) == 1:
        return remotes[0]
    raise VwtError("no remote to fetch the pull request from (add origin)" if not remotes
                   else "several remotes and no origin; cannot tell where the pull request is")


def start_of(root: Root, cwd: str, number: int, name: str) -> str | None:
    """The commit the worktree of pull request `number` starts from, fetched now; None when
    NAME is already a managed worktree (it is reused, nothing fetched). NotFound when the
    remote has no such pull request: nothing is created."""
    repo = open_repo(root, cwd)
    entry = load_entry(repo.claim(name))
    if entry is not None and entry.record is not None:
        return None
    remote = _remote(repo.git)
    user_git = g.Git(repo.info.repo_root, housekeeping=False)
    local = f"refs/vibe/pull/{number}"
    for head in HEADS:
        if g.fetch_ref(user_git, remote, head.format(n=number), local, PULL_FETCH_TIMEOUT):
            commit = g.commit_of(repo.git, local)
            if commit is not None:
                return commit
    raise NotFound(f"no pull request {number} on {remote}")
