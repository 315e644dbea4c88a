"""The target branch of a repository (SPEC §8): where landed work goes.

Shared by integration detection, `merge`, `sync` and `conflicts`. One git call reads
every branch name the rule can need, so a listing asks it once per repository.
"""

from __future__ import annotations

from . import git as g
from .errors import VwtError
from .light import NamedTuple


class Target(NamedTuple):
    """The target branch T and, where it exists, its remote-tracking branch."""

    branch: str  # short name, such as "main"
    commit: str | None  # T's tip (None only for an --into branch that does not exist yet)
    remote: str | None  # the remote whose `<remote>/T` exists, else None
    remote_commit: str | None

    @property
    def ref(self) -> str:
        return f"refs/heads/{self.branch}"

    @property
    def remote_ref(self) -> str | None:
        return f"refs/remotes/{self.remote}/{self.branch}" if self.remote else None

    @property
    def remote_name(self) -> str | None:
        """`origin/main`: the short name of the remote-tracking branch."""
        return f"{self.remote}/{self.branch}" if self.remote else None

    def tips(self) -> list[str]:
        """T's tip, then `<remote>/T`'s when it differs: the order integration tries them."""
        found = [c for c in (self.commit, self.remote_commit) if c]
        return list(dict.fromkeys(found))


def _read_refs(git: g.Git) -> tuple[dict[str, str], dict[str, str]]:
    """(refname -> commit for local and remote branches, remote -> default branch)."""
    out = git.out("for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)",
                  "refs/heads/", "refs/remotes/")
    tips, remote_heads = g.parse_refs(out)
    return tips, {remote: branch for remote, (branch, _commit) in remote_heads.items()}


def _preferred_remote(remotes: list[str]) -> str | None:
    if "origin" in remotes:
        return "origin"
    return remotes[0] if len(remotes) == 1 else None


def resolve(git: g.Git, into: str | None = None) -> Target | None:
    """T by §8's rule: `into`; else the local branch named after the remote's default
    branch; else `main`; else `master`. None when no rule gives a branch."""
    tips, defaults = _read_refs(git)
    remotes = sorted({name[len("refs/remotes/"):].split("/", 1)[0]
                      for name in tips if name.startswith("refs/remotes/")} | set(defaults))
    preferred = _preferred_remote(remotes) if remotes else None
    if into is not None:
        branch = into.removeprefix("refs/heads/")
        if f"refs/heads/{branch}" not in tips:
            raise VwtError(f"branch {branch!r} does not exist; pass an existing --into branch")
    else:
        candidates = []
        if preferred and preferred in defaults:
            candidates.append(defaults[preferred])
        candidates += ["main", "master"]
        found = [b for b in candidates if f"refs/heads/{b}" in tips]
        if not found:
            return None
        branch = found[0]
    remote = preferred if preferred and f"refs/remotes/{preferred}/{branch}" in tips else None
    return Target(branch, tips.get(f"refs/heads/{branch}"), remote,
                  tips.get(f"refs/remotes/{remote}/{branch}") if remote else None)


def require(git: g.Git, into: str | None = None) -> Target:
    """`resolve`, or the §8 error when the repository has no target branch."""
    target = resolve(git, into)
    if target is None:
        raise VwtError("no target branch (no main or master, no remote default); pass --into")
    return target
