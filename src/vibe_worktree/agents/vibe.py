"""`vwt hook vibe`: what a Mistral Vibe session is doing, as the activity of its worktree.

Vibe runs each command of its `hooks.toml` through `sh -c` in the session's folder, with
one JSON object on stdin, and counts as a failed hook (a warning in its window) any exit
status but 0 and anything on stdout but a JSON answer. So this handler never fails: it
exits 0 and prints nothing on stdout, in a managed worktree or not, whatever the input.
What went wrong goes to a log, `<home>/logs/worktree/hook-vibe.log`, and to stderr, which
Vibe reads but discards when the hook exits 0 (it shows stderr only as the reason of a
failed hook), so a person who runs it by hand sees it too.

Events (Vibe 3.0.3): `pre_tool` and `post_tool` mark the worktree containing the
session's `cwd` as working, `post_agent` (the agent's turn is over) as idle. A subagent's
events carry `parent_session_id`: its tools mark the parent session as working, and its
`post_agent` is not the end of the session's turn, so it marks nothing.
"""

from __future__ import annotations

import os

from ..core.errors import EXIT_OK, VwtError
from ..core.host import find_host
from ..core.layout import Root, resolve_home
from ..sessions import activity
from .hook_input import close_stdin, read_object

AGENT = "vibe"
HOOK_JSON = "Mistral Vibe's hook JSON"
_ACTIVITY = {"pre_tool": activity.WORKING, "post_tool": activity.WORKING,
             "post_agent": activity.IDLE}
# Vibe writes its input at once and closes the pipe; a host that does not is given up on
# well within the hook's own timeout (`timeout` of the entries `vwt install vibe` writes).
READ_TIMEOUT = 5.0
LOG_LIMIT = 1 << 18  # bytes; past it the log starts again


def log_path(home: str) -> str:
    return f"{home}/logs/worktree/hook-vibe.log"


def handle(home: str | None, fd: int = 0) -> int:
    """Read Vibe's event on `fd` and note the activity it means. Always exit 0."""
    resolved = resolve_home(home)
    try:
        note_event(Root.at(resolved), fd)
    except VwtError as exc:
        _report(resolved, exc.message)
    except Exception as exc:  # never fail the hook, not even on a defect of ours
        _report(resolved, f"{type(exc).__name__}: {exc}")
    return EXIT_OK


def note_event(root: Root, fd: int = 0) -> None:
    try:
        payload = read_object(fd, READ_TIMEOUT, HOOK_JSON)
    finally:
        if fd == 0:
            close_stdin()
    event = payload.get("hook_event_name")
    if not isinstance(event, str) or not event:
        raise VwtError("the hook input has no hook_event_name")
    state = _ACTIVITY.get(event)
    if state is None:
        return  # an event this handler was not registered for: nothing to note
    parent = _text(payload, "parent_session_id")
    if parent and state == activity.IDLE:
        return  # a subagent's turn ended; the session's own turn goes on
    session = parent or _text(payload, "session_id") or ""
    folder = _directory(payload)
    claim = activity.claim_at(root, folder) if folder else None
    if claim is None:
        return  # not in a managed worktree: nothing to note
    activity.mark(root.home, claim, state, AGENT, session, find_host())


def _text(payload: dict[str, object], key: str) -> str | None:
    value = payload.get(key)
    if value is not None and not isinstance(value, str):
        raise VwtError(f"the hook input's {key} is not a string")
    return value


def _directory(payload: dict[str, object]) -> str | None:
    """The session's folder: the input's `cwd`, else the one Vibe started the hook in."""
    cwd = _text(payload, "cwd")
    if cwd and os.path.isabs(cwd):
        return cwd
    try:
        return os.getcwd()
    except OSError:
        return None  # the folder is gone (a worktree removed under the session)


def _report(home: str, message: str) -> None:
    """One line to the log and to stderr; neither may fail the hook."""
    from ..core.records import utc_now

    path = log_path(home)
    line = f"{utc_now()} pid {os.getpid()}: {message}\n"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        if os.path.isfile(path) and os.path.getsize(path) > LOG_LIMIT:
            flags |= os.O_TRUNC  # a log of the last failures, not of all of them
        fd = os.open(path, flags, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
        where = f" (logged in {path})"
    except OSError:
        where = ""
    try:
        os.write(2, f"vwt: hook vibe: {message}{where}\n".encode("utf-8", "replace"))
    except OSError:
        pass
