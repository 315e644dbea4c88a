"""A worktree held for the life of an agent session.

The hook handler takes a §2 holder (`claude-<session>-<host pid>`) and hands its locked
descriptor to a small detached watcher (`sessions/watcher.py`), which keeps it until the
agent process dies or the session ends. The watcher has none of the hook's standard
streams (the host waits for their end of file) and a session of its own, so killing
the agent's process group does not kill it first: it notices within a poll and lets go.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time

from ..core.errors import HeldError
from ..core.host import Host
from ..core.layout import Claim, Root
from ..core.locks import holder_ids, holder_is_live, wait_for_holder_release

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..core.locks import Holder

PREFIX = "claude-"
RELEASE_WAIT = 2.0


def _safe(session: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "", session)[:64] or "session"


def session_prefix(session: str) -> str:
    return f"{PREFIX}{_safe(session)}-"


def holder_id(session: str, host: Host) -> str:
    return f"{session_prefix(session)}{host.pid}"


def hold_for_session(claim: Claim, session: str, host: Host,
                     hold: Callable[[str], Holder]) -> str | None:
    """Hold the claim until `host` dies or the session ends; None when this session's
    watcher already holds it (a second WorktreeCreate for the same name). `hold(id)` takes
    the holder (`Worktrees.hold`: checked under the prune lock)."""
    import subprocess

    hid = holder_id(session, host)
    if holder_is_live(os.path.join(claim.holders_dir, hid)):
        return None
    try:
        holder = hold(hid)
    except HeldError:
        if holder_is_live(os.path.join(claim.holders_dir, hid)):
            return None  # a parallel create of the same session won
        raise
    try:
        watcher = subprocess.Popen(
            [sys.executable, "-m", "vibe_worktree.sessions.watcher", claim.root.home,
             claim.bucket, claim.name, hid, str(holder.fileno()), str(host.pid),
             host.started],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True, pass_fds=(holder.fileno(),), cwd="/",
        )
        describe(holder.fileno(), watcher.pid, session, host)
        holder.hand_over(hid)
    except BaseException:
        holder.release()
        raise
    return hid


def describe(fd: int, pid: int, session: str, host: Host) -> None:
    """Write who holds it into the holder file: the watcher's pid is what a release signals."""
    text = json.dumps({"pid": pid, "tool": "vwt", "agent": "claude-code", "session": session,
                       "host_pid": host.pid}) + "\n"
    os.ftruncate(fd, 0)
    os.pwrite(fd, text.encode(), 0)


def _watcher_pid(path: str) -> int | None:
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(4096) or b"{}")
    except (OSError, ValueError):
        return None
    pid = data.get("pid") if isinstance(data, dict) else None
    return pid if isinstance(pid, int) and pid > 1 else None


def session_holders(claim: Claim, session: str) -> list[str]:
    prefix = session_prefix(session)
    return [h for h in holder_ids(claim) if h.startswith(prefix)]


def release_session(claim: Claim, session: str) -> list[str]:
    """End this session's holds on the claim: each watcher is told to let go, and waited
    for (at most RELEASE_WAIT). Returns the holder ids, for a removal to ignore."""
    ids = session_holders(claim, session)
    for hid in ids:
        path = os.path.join(claim.holders_dir, hid)
        pid = _watcher_pid(path)
        if pid is not None and holder_is_live(path):
            try:
                os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + RELEASE_WAIT
    for hid in ids:
        wait_for_holder_release(claim, hid, max(0.0, deadline - time.monotonic()))
    return ids


def release_everywhere(root: Root, session: str) -> int:
    """SessionEnd: every hold of the session, in every repository's claims."""
    released = 0
    for bucket in root.buckets():
        for claim in root.claims_in(bucket):
            if session_holders(claim, session):
                released += len(release_session(claim, session))
    return released
