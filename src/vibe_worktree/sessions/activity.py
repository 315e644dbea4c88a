"""What each agent session is doing in its worktree: working, waiting for the user, idle.

Kept outside the claim folders, which Mistral Vibe removes with `rmdir` (an extra file
there would make its removals fail): `<home>/worktree-activity/<bucket>/<name>.json`,
one small JSON file a worktree, replaced atomically at each event. Activity whose agent
process is gone reads as none, so a crashed session never shows as working; activity set
by `vwt activity` (any agent's hook line, whose agent may report only some of its states)
also expires `EXPIRES_AFTER` seconds after its last mark.
"""

from __future__ import annotations

import json
import os
import time

from ..core.host import Activity, Host, alive
from ..core.layout import Claim, Root, claim_containing
from ..core.records import utc_now

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..lifecycle.listing import Listed

FOLDER = "worktree-activity"
WORKING, WAITING, IDLE = "working", "waiting", "idle"
STATES = (WORKING, WAITING, IDLE)
EXPIRES_AFTER = 6 * 3600.0  # seconds without a new mark, for `vwt activity set`


def folder(home: str, bucket: str) -> str:
    return f"{home}/{FOLDER}/{bucket}"


def path(home: str, claim: Claim) -> str:
    return f"{folder(home, claim.bucket)}/{claim.name}.json"


def _parse(raw: bytes) -> Activity | None:
    try:
        data = json.loads(raw)
        host = Host(int(data["pid"]), str(data.get("started", "")))
        state, agent, session, since = (data[k] for k in ("state", "agent", "session", "since"))
        expires = data.get("expires")
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    if state not in STATES or not all(isinstance(v, str) for v in (agent, session, since)) \
            or not isinstance(expires, str | None):
        return None
    return Activity(state, agent, session, since, host, expires)


def _read(file: str) -> Activity | None:
    try:
        with open(file, "rb") as f:
            return _parse(f.read(1 << 14))
    except OSError:
        return None


def claim_at(root: Root, folder: str) -> Claim | None:
    """The managed worktree containing `folder` (found without git; it has a record), or
    None: an agent's hook runs in its session's folder, maybe below the checkout's top."""
    claim = claim_containing(root, folder)
    return claim if claim is not None and os.path.isfile(claim.record_path) else None


def mark(home: str, claim: Claim, state: str, agent: str, session: str, host: Host,
         expires_after: float | None = None) -> None:
    """Record the session's state; `since` stays when the state is the same as before.
    With `expires_after` (seconds), it reads as none once that long has passed."""
    file = path(home, claim)
    before = _read(file)
    since = (before.since if before and before.state == state and before.session == session
             and before.host == host else utc_now())
    data: dict[str, object] = {"version": 1, "state": state, "agent": agent,
                               "session": session, "since": since, "pid": host.pid,
                               "started": host.started}
    if expires_after is not None:
        data["expires"] = _utc_after(expires_after)
    os.makedirs(os.path.dirname(file), exist_ok=True)
    from ..core.files import write_atomically

    write_atomically(file, json.dumps(data).encode(), durable=False)


def clear(home: str, session: str) -> int:
    """Forget the session's activity in every worktree (SessionEnd); how many."""
    cleared = 0
    base = f"{home}/{FOLDER}"
    try:
        buckets = os.listdir(base)
    except OSError:
        return 0
    for bucket in buckets:
        try:
            names = os.listdir(f"{base}/{bucket}")
        except OSError:
            continue
        for name in names:
            file = f"{base}/{bucket}/{name}"
            if name.endswith(".json") and (found := _read(file)) and found.session == session:
                try:
                    os.unlink(file)
                    cleared += 1
                except FileNotFoundError:
                    pass
    return cleared


def forget(home: str, claim: Claim) -> None:
    try:
        os.unlink(path(home, claim))
    except OSError:
        pass


def set_for(home: str, claim: Claim, state: str, agent: str, session: str,
            host: Host) -> None:
    """`vwt activity set`'s mark of a known worktree (NotFound when it has no record):
    checked, and expiring after `EXPIRES_AFTER`."""
    from ..core.errors import EXIT_USAGE, NotFound, VwtError

    if state not in STATES:
        raise VwtError(f"{state!r} is not a state; use {', '.join(STATES)}", EXIT_USAGE)
    if not os.path.isfile(claim.record_path):
        raise NotFound(f"no worktree named {claim.name}")
    mark(home, claim, state, agent, session, host, expires_after=EXPIRES_AFTER)


def _utc_after(seconds: float) -> str:
    """`utc_now`'s form, `seconds` from now (the same form compares as text)."""
    moment = time.time() + seconds
    whole = int(moment)
    return (time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
            + f".{int((moment - whole) * 1e6):06d}Z")


def _live(found: Activity | None) -> bool:
    """Its agent process still runs, and it has not expired."""
    return (found is not None and alive(found.host)
            and (found.expires is None or found.expires > utc_now()))


def current(home: str, claim: Claim) -> Activity | None:
    """The worktree's activity, None when there is none, it expired or its agent process
    is gone."""
    found = _read(path(home, claim))
    return found if _live(found) else None


def of_bucket(home: str, bucket: str) -> dict[str, Activity]:
    """Live activity of a bucket's worktrees by name: one listing, then only the files."""
    base = folder(home, bucket)
    try:
        names = os.listdir(base)
    except OSError:
        return {}
    found = {}
    for name in names:
        if name.endswith(".json"):
            activity = _read(f"{base}/{name}")
            if activity is not None and _live(activity):
                found[name[:-5]] = activity
    return found


def with_activity(home: str, rows: list[Listed]) -> list[Listed]:
    """§14: the live agent activity of each row (one folder listing per bucket)."""
    if not os.path.isdir(f"{home}/{FOLDER}"):
        return rows
    by_bucket = {b: of_bucket(home, b) for b in {r.bucket for r in rows}}
    return [r._replace(activity=found) if (found := by_bucket[r.bucket].get(r.name)) else r
            for r in rows]


__all__ = ["EXPIRES_AFTER", "FOLDER", "IDLE", "STATES", "WAITING", "WORKING", "Activity",
           "claim_at", "clear", "current", "folder", "forget", "mark", "of_bucket", "path",
           "set_for", "with_activity"]
