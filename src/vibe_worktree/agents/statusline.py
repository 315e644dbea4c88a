"""`vwt statusline`: one line for Claude Code's `statusLine` setting.

Claude Code runs it after each message with its status JSON on stdin; it must answer at
once whatever the number of worktrees. Name, branch, changes and ahead/behind the target
cost two git calls in the one worktree. Whether it collides with another worktree is what
`vwt conflicts` says, which grows with the worktrees: that verdict is read from a cache and
refreshed by a detached process of ours (`python -m vibe_worktree.agents.statusline`) when
it is older than REFRESH_AFTER seconds. No hook ever runs.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from ..core import git as g
from ..core.errors import EXIT_OK, VwtError
from ..core.layout import Claim, Root, claim_containing, resolve_home
from ..core.light import NamedTuple
from ..core.records import CorruptRecord, read_record
from .hook_input import NoInput, read_object

A = TypeVar("A")
B = TypeVar("B")
REFRESH_AFTER = 20.0
FOLDER = "worktree-statusline"


class Collisions(NamedTuple):
    conflicts: list[str]  # worktrees it would conflict with ("target": its target branch)
    overlaps: list[str]  # worktrees that change the same files without conflicting


def cache_path(home: str, claim: Claim) -> str:
    return f"{home}/{FOLDER}/{claim.bucket}/{claim.name}.json"


def forget(home: str, claim: Claim) -> None:
    """Drop the cached verdict of a removed worktree."""
    for path in (cache_path(home, claim), f"{cache_path(home, claim)}.lock"):
        try:
            os.unlink(path)
        except OSError:
            pass


def _directory(payload: dict[str, Any]) -> str:
    workspace = payload.get("workspace")
    current = workspace.get("current_dir") if isinstance(workspace, dict) else None
    for candidate in (current, payload.get("cwd")):
        if isinstance(candidate, str) and os.path.isabs(candidate):
            return candidate
    return os.getcwd()


def print_line(home: str | None) -> int:
    """The line for the folder Claude Code's status JSON names; with no input at all (run by
    hand, stdin a terminal or empty), for the current folder."""
    payload: dict[str, Any] = {}
    if not os.isatty(0):
        try:
            payload = read_object(0, timeout=2.0, what="Claude Code's status JSON")
        except NoInput:
            pass
    directory = _directory(payload)
    root = Root.at(resolve_home(home))
    claim = claim_containing(root, directory)
    line = _managed_line(root, claim) if claim is not None else None
    sys.stdout.write((line if line is not None else _branch(directory)) + "\n")
    return EXIT_OK


def _branch(directory: str) -> str:
    """The branch checked out at `directory` (a short commit when detached), else ""."""
    git = g.Git(directory)
    try:
        return (git.out("symbolic-ref", "--short", "-q", "HEAD", check=False).strip()
                or git.out("rev-parse", "--short", "HEAD", check=False).strip())
    except (VwtError, OSError):
        return ""


def _managed_line(root: Root, claim: Claim) -> str | None:
    from ..core.target import resolve
    from ..lifecycle.worktrees import filter_drivers, validate_checkout

    try:
        record = read_record(claim.record_path, claim.name)
        checkout = validate_checkout(claim)
        # the target's branches and the repository's filter drivers, read side by side
        target, drivers = _side_by_side(lambda: resolve(g.Git(checkout.common_dir)),
                                        lambda: filter_drivers(checkout))
        git = g.Git(checkout.path, neutralised_filters=drivers)
        status = g.status(git, (record.branch, target.ref) if target else None)
    except (CorruptRecord, OSError, VwtError):
        return None
    parts = [claim.name if record.branch == claim.name else f"{claim.name} ({record.branch})"]
    parts.append(f"±{status.changes}" if status.changes else "clean")
    if status.ahead_behind is not None and any(status.ahead_behind):
        behind, ahead = status.ahead_behind
        parts.append(f"↑{ahead} ↓{behind}")
    collisions = _cached_collisions(root, claim)
    if collisions and collisions.conflicts:
        parts.append("⚠ conflicts with " + ", ".join(collisions.conflicts))
    elif collisions and collisions.overlaps:
        parts.append("≈ overlaps " + ", ".join(collisions.overlaps))
    return "  ".join(parts)


def _side_by_side(first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
    """Both results, the first computed on a thread meanwhile (each runs one git process)."""
    import threading

    box: list[A] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            box.append(first())
        except BaseException as exc:  # re-raised below, in the caller's thread
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        other = second()
    finally:
        thread.join()
    if failed:
        raise failed[0]
    return box[0], other


def _cached_collisions(root: Root, claim: Claim) -> Collisions | None:
    """The last verdict of `vwt conflicts NAME`; a stale or missing one is refreshed in the
    background (this line shows the old one, the next the new)."""
    path = cache_path(root.home, claim)
    found = None
    checked = 0.0
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(1 << 16))
        found = Collisions(list(data["conflicts"]), list(data["overlaps"]))
        checked = float(data["checked_at"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if time.time() - checked > REFRESH_AFTER:
        _start_refresh(root, claim)
    return found


def _start_refresh(root: Root, claim: Claim) -> None:
    import subprocess

    if _refreshing(cache_path(root.home, claim)):
        return
    try:
        subprocess.Popen(
            [sys.executable, "-m", "vibe_worktree.agents.statusline", root.home, claim.bucket,
             claim.name],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True, cwd=claim.checkout,
        )
    except OSError:
        pass  # no verdict this time


def _refreshing(path: str) -> bool:
    """A refresher holds the verdict's lock right now."""
    import fcntl

    try:
        fd = os.open(f"{path}.lock", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except OSError:
        return True
    finally:
        os.close(fd)


def refresh(home: str, bucket: str, name: str) -> None:
    """Compute the verdict and write it atomically; one refresher per worktree at a time."""
    import fcntl

    from ..api import Worktrees

    root = Root.at(home)
    claim = root.claim(bucket, name)
    path = cache_path(home, claim)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lock = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return  # another refresher is at it
    try:
        result = Worktrees(home=home, cwd=claim.checkout, warn=lambda _m: None).conflicts(name)
        conflicts = ["target"] if any(w.name == name and w.target_conflicts
                                      for w in result.worktrees) else []
        overlaps: list[str] = []
        for pair in result.pairs:
            if name in (pair.a, pair.b):
                other = pair.b if pair.a == name else pair.a
                (conflicts if pair.conflicts else overlaps).append(other)
        data = {"checked_at": time.time(), "conflicts": conflicts, "overlaps": overlaps}
        from ..core.files import write_atomically

        write_atomically(path, json.dumps(data).encode(), durable=False)
    finally:
        os.close(lock)


if __name__ == "__main__":
    try:
        refresh(*sys.argv[1:4])
    except (VwtError, OSError):
        sys.exit(1)
