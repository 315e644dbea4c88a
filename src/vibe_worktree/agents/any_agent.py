"""`vwt activity set|clear`: one line in any agent's hooks (Codex, Gemini CLI, OpenCode, a
script) says what its session is doing in the worktree it works in.

Made for hooks, which must never fail because of it: outside a managed worktree it does
nothing and exits 0; it prints nothing on stdout (an agent may read a hook's stdout as its
answer) and reads nothing from stdin; an activity it cannot write is a warning and exit 0.
Only what cannot be right in the line itself (an unknown state, an unreadable agent name)
is an error, exit 1 and never 2: Claude Code and Gemini CLI read 2 as "block this".
"""

from __future__ import annotations

import os

from ..core.errors import EXIT_ERROR, EXIT_OK, VwtError
from ..core.host import find_host
from ..core.layout import Claim, Root, resolve_home
from ..sessions import activity

UNKNOWN = "unknown"  # the agent, when the line does not name it
_LONGEST = {"agent": 64, "session": 256}


def set_activity(home: str | None, state: str | None, agent: str | None,
                 session: str | None) -> int:
    if state not in activity.STATES:
        said = f"{state!r} is not a state" if state else "say which state"
        raise VwtError(f"{said}: vwt activity set working|waiting|idle", EXIT_ERROR)
    agent = _checked("agent", agent) or UNKNOWN
    session = _checked("session", session)
    root = Root.at(resolve_home(home))
    claim = _here(root)
    if claim is None:
        return EXIT_OK  # not in a managed worktree: nothing to mark
    try:
        activity.mark(root.home, claim, state, agent, session, find_host(),
                      expires_after=activity.EXPIRES_AFTER)
    except OSError as exc:
        _warn(f"cannot note the activity of {claim.name} ({exc.strerror or exc}); "
              "the agent's hook goes on")
    return EXIT_OK


def clear_activity(home: str | None) -> int:
    root = Root.at(resolve_home(home))
    claim = _here(root)
    if claim is not None:
        activity.forget(root.home, claim)
    return EXIT_OK


def _here(root: Root) -> Claim | None:
    """The managed worktree containing the current folder (None when that folder is gone)."""
    try:
        return activity.claim_at(root, os.getcwd())
    except OSError:
        return None


def _checked(what: str, value: str | None) -> str:
    value = value or ""
    if len(value) > _LONGEST[what] or not value.isprintable():
        raise VwtError(f"the {what} must be at most {_LONGEST[what]} printable characters",
                       EXIT_ERROR)
    return value


def _warn(message: str) -> None:
    try:
        os.write(2, f"vwt: warning: {message}\n".encode("utf-8", "replace"))
    except OSError:
        pass
