"""`vwt hook claude-code`: Claude Code's worktrees made, held and removed by vwt.

Claude Code runs the command registered for an event with one JSON object on stdin.
`WorktreeCreate` replaces its own `git worktree add`: it reads one line of stdout, the
checkout's path, so everything else this process or its children print goes to stderr.
`WorktreeRemove` replaces its removal. The other events only note what the session is
doing (activity) and never touch a checkout.

Every failure exits 1, never 2: for some events (PreToolUse, UserPromptSubmit, Stop)
Claude Code reads exit status 2 as "block the tool, the prompt or the stop".
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..core.errors import EXIT_ERROR, EXIT_OK, VwtError
from ..core.host import find_host
from ..core.layout import Root, claim_containing, resolve_home
from ..core.light import NamedTuple
from ..core.names import branch_name_problem, candidate_names, path_segment_problem, slugify
from ..sessions import activity
from .hook_input import close_stdin, read_object

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..api import Worktrees
    from ..lifecycle.create import Created

AGENT = "claude-code"
_ACTIVITY = {"UserPromptSubmit": activity.WORKING, "PreToolUse": activity.WORKING,
             "Notification": activity.WAITING, "Stop": activity.IDLE}
_PR_URL = re.compile(r"^https?://\S+/(?:pull|pulls|merge_requests|pull-requests)/(\d+)/?(?:[#?]\S*)?$")


def handle(home: str | None) -> int:
    """Read the event from stdin and act on it; any failure is exit 1."""
    root = Root.at(resolve_home(home))
    try:
        payload = read_object(0)
        close_stdin()
        event = payload.get("hook_event_name")
        if not isinstance(event, str) or not event:
            raise VwtError("the hook input has no hook_event_name")
        if event == "WorktreeCreate":
            return worktree_create(root, payload)
        if event == "WorktreeRemove":
            return worktree_remove(root, payload)
        if event == "SessionEnd":
            return session_end(root, payload)
        if event in _ACTIVITY:
            return note_activity(root, payload, _ACTIVITY[event])
        return EXIT_OK  # an event this handler was not registered for: nothing to do
    except VwtError as exc:
        raise VwtError(exc.message, EXIT_ERROR) from None


def _text(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise VwtError(f"the hook input's {key} is not a string")
    return value


def _directory(payload: dict[str, Any]) -> str:
    cwd = _text(payload, "cwd") or os.getcwd()
    if not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise VwtError(f"the hook input's cwd {cwd!r} is not an existing absolute folder")
    return cwd


# -- names ---------------------------------------------------------------------------------
class Request(NamedTuple):
    """What `vwt new` is asked for: NAME (None: a random one), its branch, a pull request."""

    name: str | None
    branch: str | None
    pr: int | None


def request_for(sent: str | None) -> Request:
    """Claude Code's name as `vwt new` arguments: a valid name as it is; `#N` or a pull
    request's URL as `--pr N`; anything else slugified as a prompt, keeping the name as
    sent for the branch when git accepts it (`feat/04-config`)."""
    sent = (sent or "").strip()
    if not sent:
        return Request(None, None, None)
    number = sent[1:] if sent.startswith("#") else None
    match = _PR_URL.match(sent)
    if match:
        number = match[1]
    if number is not None and number.isdigit() and int(number) > 0:
        return Request(None, None, int(number))
    if path_segment_problem(sent) is None and branch_name_problem(sent) is None:
        return Request(sent, None, None)
    slug = slugify(sent)
    if not slug:
        return Request(None, None, None)
    branch = sent if branch_name_problem(sent) is None else None
    return Request(slug, branch, None)


def _free_name(wt: Worktrees, request: Request) -> Request:
    """A slugified name whose worktree is on another branch, or only a snapshot, cannot be
    used, and Claude Code cannot pick another: take the first of `<slug>-2` ... `-100`
    (§3's auto-naming) that is free or is already this branch's worktree (then reused)."""
    if request.name is None or request.branch is None:
        return request
    from ..lifecycle.worktrees import load_entry

    for name in candidate_names(request.name):
        claim = wt.claim(name)
        entry = load_entry(claim)
        if entry is None and not os.path.lexists(claim.checkout):
            return request._replace(name=name)
        if entry is not None and entry.problem is None and entry.record is not None \
                and entry.record.branch == request.branch:
            return request._replace(name=name)
    raise VwtError(f"every name from {request.name} to {request.name}-100 is taken by "
                   f"another branch's worktree; remove some (vwt list)")


# -- WorktreeCreate ---------------------------------------------------------------------------
class _PathOnlyStdout:
    """While it is entered, fd 1 is stderr: git, hooks and warnings cannot reach the line
    Claude Code reads. `emit` writes to the real stdout."""

    def __enter__(self) -> _PathOnlyStdout:
        import sys

        sys.stdout.flush()
        self.saved = os.dup(1)
        os.dup2(2, 1)
        return self

    def emit(self, text: str) -> None:
        data = text.encode()
        while data:
            data = data[os.write(self.saved, data):]

    def __exit__(self, *exc: object) -> None:
        os.dup2(self.saved, 1)
        os.close(self.saved)


def worktree_create(root: Root, payload: dict[str, Any]) -> int:
    from ..api import Worktrees
    from .claude_settings import worktree_settings

    sent = payload.get("name", payload.get("worktree_name"))
    if sent is not None and not isinstance(sent, str):
        raise VwtError("the hook input's name is not a string")
    cwd = _directory(payload)
    session = _text(payload, "session_id")
    request = request_for(sent)
    host = find_host()
    with _PathOnlyStdout() as out:
        wt = Worktrees(home=root.home, cwd=cwd)
        request = _free_name(wt, request)
        settings = worktree_settings(os.environ.get("CLAUDE_PROJECT_DIR") or cwd, wt.warn)
        from_ref = "HEAD" if settings.base_ref == "head" and request.pr is None else None
        created = wt.create(request.name, branch=request.branch, from_ref=from_ref,
                            sparse=settings.sparse_paths or None, pr=request.pr, host=host)
        try:
            if session:
                wt.hold_for_session(created.name, session, host)
            if created.created:
                _tag(wt, created.name, session)
        except BaseException as exc:
            if created.created:
                if session:
                    wt.release_session(created.name, session)
                left = _undo(wt, created)
                if left is not None and isinstance(exc, VwtError):
                    raise VwtError(f"{exc.message}; {left}", exc.exit_code) from None
                if left is not None:
                    wt.warn(left)
            raise
        out.emit(created.path + "\n")
    return EXIT_OK


def _tag(wt: Worktrees, name: str, session: str | None) -> None:
    """Say in the record which agent and session made it (Vibe keeps unknown keys).

    With a session it is written while the session holds the worktree, so no removal can
    run meanwhile and the prune lock (for which each creation already waits twice under
    load) is not needed; without one, under the prune lock."""
    from contextlib import nullcontext

    from ..core.locks import prune_lock, registry_lock
    from ..core.records import write_record
    from ..lifecycle.worktrees import load_entry

    claim = wt.claim(name)
    # the registry lock: a background hook's keeper rewrites the record under it too
    with nullcontext() if session else prune_lock(wt.root), registry_lock(wt.root):
        entry = load_entry(claim)
        record = entry.record if entry is not None else None
        if record is None or record.reserved:
            raise VwtError(f"{name} changed while it was being made; try again")
        extra = {**record.extra, "agent": AGENT, "session": session}
        write_record(claim.record_path, record._replace(extra=extra))


def _undo(wt: Worktrees, created: Created) -> str | None:
    """A worktree made for a session that could not be held is taken away again (its
    work, if a post_create hook made any, snapshotted first), once the background hooks
    this creation started, which hold it, are stopped: they belong to the failed creation.
    None when it is gone; else what is left and the command that removes it."""
    from ..api import Worktrees
    from ..lifecycle.hook_runner import stop_started
    from ..lifecycle.remove import HOOK_FAILED, REMOVED

    name = created.name
    command = f"vwt rm {name} -y"
    quiet = Worktrees(home=wt.root.home, cwd=wt.cwd, warn=lambda _line: None)  # one line
    try:
        stop_started(wt.claim(name), created.hooks)
        removal = quiet.remove(name, confirm_dirty=True)
    except (VwtError, OSError) as exc:
        why = exc.message if isinstance(exc, VwtError) else str(exc)
    else:
        if removal.outcome == REMOVED:
            return None
        why = (removal.message or removal.outcome).partition("; nothing removed")[0]
        if removal.outcome == HOOK_FAILED:
            command += " --no-hooks"
    return f"{name} is left at {created.path}, not taken away again ({why}): {command} removes it"


# -- WorktreeRemove ---------------------------------------------------------------------------
def worktree_remove(root: Root, payload: dict[str, Any]) -> int:
    from ..api import Worktrees, warn_to_stderr
    from ..lifecycle.remove import REMOVED
    from ..lifecycle.worktrees import load_entry, require_trusted
    from ..sessions.holds import release_session

    path = _text(payload, "worktree_path")
    if not path:
        raise VwtError("the hook input has no worktree_path")
    session = _text(payload, "session_id")
    claim = claim_containing(root, path, exact=True)
    entry = load_entry(claim) if claim is not None else None
    if claim is None or entry is None or entry.record is None:
        raise VwtError(f"{path} is not a worktree vwt manages; nothing removed")
    record = require_trusted(entry)
    own = release_session(claim, session) if session else []
    repo_wt = Worktrees(home=root.home, cwd=record.repo_root)
    if repo_wt.claim(claim.name) != claim:
        raise VwtError(f"{path} does not belong to the repository at {record.repo_root}; "
                       "nothing removed")
    result = repo_wt.remove(claim.name, confirm_dirty=True, own_holders=own)
    if result.processes:  # the agent that asked, and its ancestors, are not among them
        from ..core.proctable import describe

        raise VwtError(f"{claim.name} kept: {describe(result.processes)}; nothing removed "
                       f"(stop them, or: vwt rm {claim.name} --stop)")
    if result.outcome != REMOVED:
        raise VwtError(f"{claim.name} kept ({result.outcome}): {result.message}")
    activity.forget(root.home, claim)
    from .statusline import forget

    forget(root.home, claim)
    if result.snapshot_ref:
        warn_to_stderr(f"{claim.name}'s work is saved in {result.snapshot_ref}; "
                f"vwt restore {claim.name} brings it back")
    return EXIT_OK


# -- activity ---------------------------------------------------------------------------------
def note_activity(root: Root, payload: dict[str, Any], state: str) -> int:
    cwd = _text(payload, "cwd")
    session = _text(payload, "session_id") or ""
    claim = claim_containing(root, cwd) if cwd else None
    if claim is None or not os.path.isfile(claim.record_path):
        return EXIT_OK  # not in a managed worktree: nothing to note
    activity.mark(root.home, claim, state, AGENT, session, find_host())
    return EXIT_OK


def session_end(root: Root, payload: dict[str, Any]) -> int:
    from ..api import Worktrees

    session = _text(payload, "session_id")
    if session:
        Worktrees(home=root.home).end_session(session)
    return EXIT_OK
