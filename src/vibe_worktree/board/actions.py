"""The board's actions, each one call of the Python API the CLI uses, with its rules.

Every action answers with an `Outcome`: `done`, `refused` (the API kept something
safe: dirty work, a live holder, a conflict) or `error`, a one-line message a person
can read, and the API's own JSON document.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..api import Worktrees
from ..core.errors import NotFound, VwtError
from ..core.light import NamedTuple
from ..core.names import path_segment_problem
from ..lifecycle.worktrees import load_entry

DONE = "done"
REFUSED = "refused"
ERROR = "error"
MERGE_MODES = ("squash", "rebase", "ff-only")


class Outcome(NamedTuple):
    kind: str
    message: str
    result: dict[str, object] | None = None
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"ok": self.kind == DONE, "kind": self.kind, "message": self.message,
                "result": self.result, "warnings": list(self.warnings)}


class BadRequest(VwtError):
    def __init__(self, message: str) -> None:
        super().__init__(message, 2)


def run(home: str, action: str, body: dict[str, Any]) -> Outcome:
    """Carry out one action; never raises for an expected failure."""
    handler = ACTIONS.get(action)
    if handler is None:
        return Outcome(ERROR, f"unknown action {action!r}")
    warnings: list[str] = []
    try:
        outcome = handler(home, body, warnings.append)
    except VwtError as exc:
        outcome = Outcome(ERROR, exc.message)
    return outcome._replace(warnings=tuple(warnings))


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or path_segment_problem(value) is not None:
        raise BadRequest(f"bad request: {key} must be a worktree's {key}")
    return value


def _flag(body: dict[str, Any], key: str) -> bool:
    value = body.get(key, False)
    if not isinstance(value, bool):
        raise BadRequest(f"bad request: {key} must be true or false")
    return value


def _for_entry(home: str, body: dict[str, Any], warn: Callable[[str], None]
               ) -> tuple[Worktrees, str]:
    """The API opened on the entry's own repository (proven to map to its bucket)."""
    bucket, name = _text(body, "bucket"), _text(body, "name")
    wt = Worktrees(home=home, warn=warn)
    entry = load_entry(wt.root.claim(bucket, name))
    if entry is None:
        raise NotFound(f"{name} is no longer there; the list is refreshing")
    source = entry.record or entry.recovery
    if entry.problem is not None or source is None:
        raise VwtError(f"{name}: {entry.problem or 'no record'}; not touching it")
    wt = Worktrees(home=home, cwd=source.repo_root, warn=warn)
    if wt.repo.bucket != bucket:
        raise VwtError(f"{name}: its record points at another repository; not touching it")
    return wt, name


def snapshot(home: str, body: dict[str, Any], warn: Callable[[str], None]) -> Outcome:
    wt, name = _for_entry(home, body, warn)
    snap = wt.snapshot(name)
    return Outcome(DONE, f"saved {name} to {snap.ref} ({snap.commit[:12]})", snap.to_json())


def remove(home: str, body: dict[str, Any], warn: Callable[[str], None]) -> Outcome:
    """Dirty work is removed only with `confirm_dirty` (the API snapshots it first)."""
    from ..lifecycle.remove import FORGOTTEN, KEPT_DIRTY, KEPT_IN_USE, REMOVED

    wt, name = _for_entry(home, body, warn)
    removal = wt.remove(name, confirm_dirty=_flag(body, "confirm_dirty"))
    data = removal.to_json()
    if removal.outcome in (REMOVED, FORGOTTEN):
        saved = f"; snapshot {removal.snapshot_ref}" if removal.snapshot_ref else ""
        return Outcome(DONE, f"{removal.outcome} {name}{saved}", data)
    if removal.outcome in (KEPT_DIRTY, KEPT_IN_USE):
        return Outcome(REFUSED, removal.message or f"{name}: {removal.outcome}", data)
    return Outcome(ERROR, removal.message or f"{name}: {removal.outcome}", data)


def restore(home: str, body: dict[str, Any], warn: Callable[[str], None]) -> Outcome:
    wt, name = _for_entry(home, body, warn)
    created = wt.restore(name)
    return Outcome(DONE, f"restored {name} at {created.path}", created.to_json())


def prune(home: str, body: dict[str, Any], warn: Callable[[str], None]) -> Outcome:
    keep = body.get("keep")
    if keep is not None and (not isinstance(keep, int) or isinstance(keep, bool) or keep < 0):
        raise BadRequest("bad request: keep must be a whole number of worktrees, or empty")
    dry_run = _flag(body, "dry_run")
    result = Worktrees(home=home, warn=warn).prune(keep=keep, dry_run=dry_run)
    data = result.to_json()
    verb = "would remove" if dry_run else "removed"
    message = (f"{verb} {len(result.removed)}, kept {len(result.kept)}, "
               f"{len(result.reservations_discarded)} reservation(s) discarded")
    return Outcome(DONE, message, data)


def merge(home: str, body: dict[str, Any], warn: Callable[[str], None]) -> Outcome:
    wt, name = _for_entry(home, body, warn)
    merging = getattr(wt, "merge", None)
    if merging is None:
        return Outcome(ERROR, "this version of vwt cannot merge yet")
    mode = body.get("mode", "squash")
    if mode not in MERGE_MODES:
        raise BadRequest(f"bad request: mode must be one of {', '.join(MERGE_MODES)}")
    result = merging(name, mode=mode, commit=_flag(body, "commit"))
    data: dict[str, object] = result.to_json()
    outcome = str(data.get("outcome"))
    into = data.get("into") or "the target"
    kept = f"; {getattr(result, 'message', '')}" if data.get("kept_reason") else ""
    if outcome == "merged":
        return Outcome(DONE, f"merged {name} into {into} ({str(data.get('commit'))[:12]})"
                       f"{kept}", data)
    if outcome == "up_to_date":
        return Outcome(DONE, f"{name} was already in {into}; nothing to merge{kept}", data)
    conflicts = data.get("conflicts") or []
    if outcome == "conflict" and isinstance(conflicts, list):
        shown = ", ".join(str(c) for c in conflicts[:5]) + (", …" if len(conflicts) > 5 else "")
        return Outcome(REFUSED, f"{name} conflicts with {into} in {shown}; nothing changed", data)
    message = str(getattr(result, "message", "")) or _MERGE_REFUSALS.get(outcome, outcome)
    return Outcome(REFUSED, f"{name}: {message}", data)


def land(home: str, body: dict[str, Any], warn: Callable[[str], None]) -> Outcome:
    """`vwt land NAME` from the page: it waits its turn in the queue like any other land,
    and runs the repository's approved `[land]` gate (the page takes no command of its own:
    the board never runs what a request names)."""
    wt, name = _for_entry(home, body, warn)
    landing = getattr(wt, "land", None)
    if landing is None:
        return Outcome(ERROR, "this version of vwt cannot land yet")
    report = landing([name], keep=_flag(body, "keep"))
    data: dict[str, object] = report.to_json()
    [result] = report.results
    if result.outcome == "merged":
        gate = f", checked by `{result.gate.command}`" if result.gate else ""
        return Outcome(DONE, f"landed {name} on {report.into} ({(result.commit or '')[:12]})"
                             f"{gate}", data)
    if result.outcome == "up_to_date":
        return Outcome(DONE, f"{name} was already in {report.into}; nothing to land", data)
    kind = ERROR if result.outcome in ("error", "not_found") else REFUSED
    return Outcome(kind, f"{name}: {result.outcome}: {result.message}", data)


_MERGE_REFUSALS = {
    "kept_in_use": "held by a live session; nothing changed",
    "kept_dirty": "has uncommitted changes; tick “commit them first” or commit them yourself",
    "not_fast_forward": "the target has moved on; a fast-forward is not possible",
    "target_moved": "the target moved meanwhile; nothing changed, try again",
    "target_dirty": "the target's checkout has local changes in the way; nothing changed",
    "hook_failed": "a merge hook failed; nothing changed",
}

ACTIONS: dict[str, Callable[[str, dict[str, Any], Callable[[str], None]], Outcome]] = {
    "snapshot": snapshot, "remove": remove, "restore": restore, "prune": prune, "merge": merge,
    "land": land,
}
