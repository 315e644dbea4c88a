"""Worktrees as git keeps them: discovery of the repository (from the files when the
layout is plain), `git worktree list/add/remove/prune`, the branches checked out.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import GitFailed, NotARepository
from ..light import NamedTuple
from ..processes import Finished
from ..repo_dirs import RepoInfo, discover_without_git
from .runner import Git, finish

PARALLEL_CHECKOUT_THRESHOLD = 2000


class Probe(NamedTuple):
    """What `new` needs to know before it reserves a name, asked in parallel."""

    info: RepoInfo
    head: str | None  # None when the repository has no commit yet
    refs: dict[str, str]  # refname -> commit: the branch patterns asked about, HEAD's branch
    remote_heads: dict[str, tuple[str, str]]  # remote -> (default branch, its commit)
    remotes: list[str]
    from_commit: str | None


def probe(cwd: str, branch_patterns: Sequence[str], from_ref: str | None) -> Probe:
    """Discovery, HEAD, wanted branches, remotes and `--from` in one round of processes.

    In the plain layouts, discovery and HEAD come from the files (two processes fewer
    to start: a small `vwt new` is a few git processes in all).
    """
    git = Git(cwd)
    info = discover_without_git(cwd)
    head_file = _head_without_git(info) if info else None
    refs_wanted = [*branch_patterns, "refs/remotes/*/HEAD"]
    if head_file and head_file.startswith("refs/"):
        refs_wanted.append(head_file)
    started = [
        git.start("for-each-ref", "--format=%(refname)%00%(objectname)%00%(symref)",
                  *refs_wanted),
        git.start("remote"),
    ]
    if head_file is None:
        # HEAD last: in a repository without commits only that line is missing
        started.append(git.start("rev-parse", "--path-format=absolute", "--git-common-dir",
                                 "--show-toplevel", "HEAD"))
    if from_ref:
        started.append(git.start("rev-parse", "--verify", "--quiet", "--end-of-options",
                                 f"{from_ref}^{{commit}}"))
    refs, remote, *rest = [finish(p) for p in started]
    if head_file is None:
        info, head = _info_and_head(git, rest.pop(0))  # NotARepository first
    if refs.returncode != 0:  # such as a repository git refuses (safe.directory)
        raise git.failure(["for-each-ref"], refs.stderr)
    branches, remote_heads = parse_refs(refs.stdout)
    if head_file is not None:
        head = branches.get(head_file) if head_file.startswith("refs/") else head_file
    assert info is not None
    from_commit = None
    if from_ref:
        from_commit = rest[0].stdout.strip() if rest[0].returncode == 0 else None
        if not from_commit:
            raise GitFailed(f"--from {from_ref!r} does not name a commit")
    return Probe(
        info, head, branches,
        remote_heads, [r for r in remote.stdout.splitlines() if r], from_commit,
    )


def parse_refs(text: str) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """for-each-ref lines: refname -> commit, and remote -> (default branch, its commit)."""
    branches: dict[str, str] = {}
    remote_heads: dict[str, tuple[str, str]] = {}
    for line in text.splitlines():
        name, oid, symref = [*line.split("\0"), "", ""][:3]
        if name.startswith("refs/remotes/") and name.endswith("/HEAD"):
            remote_name = name[len("refs/remotes/"):-len("/HEAD")]
            prefix = f"refs/remotes/{remote_name}/"
            if symref.startswith(prefix):
                remote_heads[remote_name] = (symref[len(prefix):], oid)
        elif name:
            branches[name] = oid
    return branches, remote_heads


def _info_and_head(git: Git, where: Finished) -> tuple[RepoInfo, str | None]:
    lines = where.stdout.splitlines()
    head = lines[2] if where.returncode == 0 and len(lines) > 2 else None
    if where.returncode != 0 and len(lines) >= 2 and all(map(os.path.isabs, lines[:2])):
        where = Finished(where.args, 0, "\n".join(lines[:2]), where.stderr)
    return _repo_info(git, where), head


def discover(cwd: str) -> RepoInfo:
    """The repository containing `cwd`, or NotARepository."""
    found = discover_without_git(cwd)
    if found is not None:
        return found
    git = Git(cwd)
    result = git.run(
        "rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel", check=False
    )
    return _repo_info(git, result)


def _head_without_git(info: RepoInfo) -> str | None:
    """What HEAD of the worktree at `info.toplevel` holds: the ref it names, or its
    commit when detached; None when unsure (git is asked instead)."""
    dotgit = f"{info.toplevel}/.git"
    try:
        if os.path.isdir(dotgit) and not os.path.islink(dotgit):
            git_dir = dotgit
        else:
            with open(dotgit, encoding="utf-8") as handle:
                git_dir = os.path.join(info.toplevel, handle.read(4096).strip()[len("gitdir: "):])
        with open(f"{git_dir}/HEAD", encoding="utf-8") as handle:
            text = handle.read(4096).strip()
    except (OSError, UnicodeDecodeError):
        return None
    if text.startswith("ref: refs/"):
        ref = text[len("ref: "):]
        # reftable keeps a placeholder in the HEAD file; the real HEAD is in the table
        return None if ref == "refs/heads/.invalid" else ref
    if len(text) in (40, 64) and not text.strip("0123456789abcdef"):
        return text
    return None


def _repo_info(git: Git, result: Finished) -> RepoInfo:
    cwd = git.cwd
    if result.returncode != 0:
        raise NotARepository(
            f"{cwd} is not inside a git working tree; run vwt from a repository or pass -C DIR"
        )
    common_dir, toplevel = result.stdout.splitlines()[:2]
    common_dir = os.path.realpath(common_dir)
    if os.path.basename(common_dir) == ".git":
        repo_root = os.path.dirname(common_dir)
    else:
        repo_root = main_worktree(git) or common_dir
    return RepoInfo(os.path.realpath(repo_root), common_dir, os.path.realpath(toplevel))


def main_worktree(git: Git) -> str | None:
    entries = worktree_list(git)
    return entries[0]["worktree"] if entries else None


LIST_RETRIES = 8  # about 0.7 s in all


def met_a_worktree_being_added(message: str) -> bool:
    """git failed reading another worktree's admin folder (`.../worktrees/NAME/...`).

    A `git worktree add` running in another session writes those files one by one, and a
    git command that reads every worktree meanwhile dies ("failed to read
    .../worktrees/NAME/commondir"); a moment later they are whole, so a retry succeeds."""
    return "worktrees/" in message


def worktree_list(git: Git) -> list[dict[str, str]]:
    """`git worktree list --porcelain -z` as a list of {attribute: value}, retried while
    it meets a worktree another session is adding."""
    for attempt in range(LIST_RETRIES + 1):
        result = git.run("worktree", "list", "--porcelain", "-z", check=False)
        if result.returncode == 0:
            break
        if attempt == LIST_RETRIES or not met_a_worktree_being_added(result.stderr):
            raise git.failure(["worktree"], result.stderr)
        import time

        time.sleep(0.02 * (attempt + 1))
    out = result.stdout
    entries: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for field in out.split("\0"):
        if not field:
            if current:
                entries.append(current)
                current = {}
            continue
        key, _, value = field.partition(" ")
        current[key] = value
    if current:
        entries.append(current)
    return entries


def worktree_add(
    git: Git, path: str, *, branch: str, start: str | None, create_branch: bool,
    workers: int = 1, progress: bool = False, no_checkout: bool = False,
) -> None:
    """`git worktree add` as the user would run it (hooks run; git's progress is passed on)."""
    args = ["worktree", "add"] + ([] if progress else ["--quiet"])
    if no_checkout:
        args.append("--no-checkout")
    if create_branch:
        args += ["--no-track", "-b", branch, path, start or "HEAD"]
    else:
        args += [path, branch]
    # Parallel checkout pays off on big trees only: below the threshold, workers cost more
    # to start than they save.
    config = ["-c", f"checkout.workers={workers}",
              "-c", f"checkout.thresholdForParallelism={PARALLEL_CHECKOUT_THRESHOLD}"]
    Git(git.cwd, housekeeping=False).run(*config, *args, show_progress=progress)


def sparse_checkout_set(git: Git, dirs: Sequence[str]) -> None:
    """Cone-mode sparse checkout of `dirs` (and the top-level files)."""
    git.run("sparse-checkout", "set", "--cone", "--", *dirs)


def checkout_head(git: Git) -> None:
    """Populate a `--no-checkout` worktree from HEAD (within its sparse set)."""
    git.run("checkout", "--quiet")  # no pathspec: one would bring back what the set leaves out


def worktree_remove_entry(git: Git, path: str) -> bool:
    """Unregister a worktree whose checkout was already moved away."""
    return git.ok("worktree", "remove", "--force", "--force", path)


def worktree_prune(git: Git) -> None:
    git.run("worktree", "prune", check=False)


def checked_out_branches(git: Git) -> dict[str, str]:
    """{branch: worktree path} for every branch some worktree has checked out."""
    found = {}
    for entry in worktree_list(git):
        ref = entry.get("branch", "")
        if ref.startswith("refs/heads/"):
            found[ref[len("refs/heads/"):]] = entry.get("worktree", "?")
    return found


def branch_checked_out_elsewhere(git: Git, branch: str) -> str | None:
    """Path of a worktree that has `branch` checked out, if any."""
    for entry in worktree_list(git):
        if entry.get("branch") == f"refs/heads/{branch}":
            return entry.get("worktree")
    return None
