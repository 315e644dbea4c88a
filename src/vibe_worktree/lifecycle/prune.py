"""Retention across all repositories: keep the newest N, snapshot-then-remove the rest.

Each run first repairs what crashes left (`repair.py`), then retains.

Everything runs under the `.prune` lock, so a create or an attach never sees
half a decision. Nothing is removed without a snapshot first; a worktree whose
snapshot fails is kept and the reason reported.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable

from ..core.errors import DiskFull, HeldError, InvalidName, VwtError
from ..core.faults import checkpoint
from ..core.git import map_parallel, update_refs
from ..core.layout import Root
from ..core.light import NamedTuple
from ..core.locks import STARTING, Holder, prune_lock
from ..core.records import CorruptRecord, read_limited
from . import leasing, repair
from .in_use import PROCESSES_RUNNING, processes_using
from .leftovers import live as _live
from .remove import (
    Doomed,
    SnapshotFailed,
    acquire_removal,
    existing_snapshot,
    inspect,
    remove_all,
    snapshot_commit,
    snapshot_problem,
    target_for,
    tidy_claim_folders,
)
from .worktrees import (
    MISSING,
    ORPHANED,
    READY,
    Entry,
    Inspection,
    MissingAdmin,
    entries,
    load_entry,
)

DEFAULT_LIMIT = 15
ORPHAN_REASON = "orphaned: its repository was moved or deleted (see vwt doctor)"
CHUNK = 8  # removals per look at the clock (and per short hold of `.prune` to take them)
DEFAULT_BUDGET = 20.0  # seconds of removals per run; what is left waits for the next run

Warn = Callable[[str], None]


class PruneResult:
    """What prune did (or, with dry_run, would do); filled in as it goes."""

    def __init__(self) -> None:
        self.removed: list[dict[str, object]] = []
        self.kept: list[dict[str, object]] = []
        self.reservations_discarded: list[dict[str, object]] = []
        self.stale_holders_removed = 0
        self.trash_deleted = 0  # leftovers of interrupted removals (`.trash`), not in the JSON
        self.pool_removed: list[dict[str, object]] = []
        self.freed_bytes = 0
        self.unfinished = False  # the time budget ran out: the next run goes on
        self.leases_dropped: list[dict[str, object]] = []  # of worktrees that are gone

    def to_json(self) -> dict[str, object]:
        return {
            "removed": self.removed, "kept": self.kept,
            "reservations_discarded": self.reservations_discarded,
            "stale_holders_removed": self.stale_holders_removed,
            "pool_removed": self.pool_removed, "freed_bytes": self.freed_bytes,
            "unfinished": self.unfinished, "leases_dropped": self.leases_dropped,
        }


def worktree_limit(root: Root, keep: int | None) -> int:
    """`--keep`, else VIBE_WORKTREE_LIMIT, else config.toml's worktree_limit, else 15."""
    if keep is not None:
        return _non_negative(keep, "--keep")
    env = os.environ.get("VIBE_WORKTREE_LIMIT")
    if env is not None and env.strip():
        try:
            return _non_negative(int(env), "VIBE_WORKTREE_LIMIT")
        except ValueError:
            raise InvalidName(f"VIBE_WORKTREE_LIMIT={env!r} is not a whole number") from None
    configured = _config_limit(root)
    return DEFAULT_LIMIT if configured is None else configured


def prune_budget(root: Root) -> float:
    """Seconds one prune may spend removing: VWT_PRUNE_BUDGET, else config.toml's
    `prune_budget_seconds`, else 20; 0 means no limit."""
    env = os.environ.get("VWT_PRUNE_BUDGET")
    value: object = env
    where = "VWT_PRUNE_BUDGET"
    if env is None or not env.strip():
        from ..core.config import read_config

        value = read_config(root.home).get("prune_budget_seconds", DEFAULT_BUDGET)
        where = f"prune_budget_seconds in {root.config_file}"
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise VwtError(f"{where} must be a number of seconds >= 0, not {value!r}") from None
    if isinstance(value, bool) or not seconds >= 0:
        raise VwtError(f"{where} must be a number of seconds >= 0, not {value!r}")
    return seconds


class _Pacer:
    """Whether prune's time budget allows one more batch of removals: not when the slowest
    batch so far would end past it (a busy machine makes batches slow, and prune's own call
    must stay well under a minute). The first batch always runs, so every prune makes
    progress."""

    def __init__(self, budget: float | None) -> None:
        self.deadline = None if not budget else time.monotonic() + budget
        self.batches = 0
        self.slowest = 0.0  # seconds of the slowest batch so far
        self._since = 0.0

    def start_batch(self) -> None:
        self._since = time.monotonic()

    def end_batch(self) -> None:
        self.batches += 1
        self.slowest = max(self.slowest, time.monotonic() - self._since)

    def out_of_time(self) -> bool:
        return bool(self.batches and self.deadline is not None
                    and time.monotonic() + self.slowest >= self.deadline)


def _non_negative(value: int, what: str) -> int:
    if value < 0:
        raise InvalidName(f"{what} must be 0 or more, not {value}")
    return value


def _config_limit(root: Root) -> int | None:
    from ..core.config import read_config

    value = read_config(root.home).get("worktree_limit")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise VwtError(f"worktree_limit in {root.config_file} must be a whole number >= 0")
    return value


def sessions_finished(session_dirs: tuple[str, ...]) -> bool:
    """Vibe's rule: every session folder is gone, or its meta.json has `archived_at`."""
    if not session_dirs:
        return False
    for folder in session_dirs:
        if not os.path.lexists(folder):
            continue
        try:  # never blocks: a FIFO planted as meta.json is refused, not opened for reading
            meta = json.loads(read_limited(os.path.join(folder, "meta.json")))
        except (OSError, ValueError, CorruptRecord):
            return False
        if not isinstance(meta, dict) or not meta.get("archived_at"):
            return False
    return True


def _label(entry: Entry, **more: object) -> dict[str, object]:
    return {"name": entry.name, "bucket": entry.claim.bucket, **more}


def prune(root: Root, keep: int | None = None, dry_run: bool = False,
          warn: Warn = lambda _m: None, merged: bool = False,
          max_size: int | str | None = None) -> PruneResult:
    """Retention: decide under the `.prune` lock, remove without holding it.

    The lock is held to read the records and decide, then for a moment per batch of
    CHUNK removals, to check each worktree is as decided and take its `.removing` holder;
    snapshots and deletions run with the lock free, so `vwt new`, `vwt run` and `restore`
    never wait for them (a name being removed waits for its `.removing` holder instead).
    Prune stops between batches once its time budget (`prune_budget`) is spent, leaving
    the rest to the next run (`unfinished` in the result). `merged`: also remove every
    clean, unheld worktree whose commits are integrated into its target branch (SPEC §8
    prune --merged), whatever the limit. `max_size` (bytes, or `"20G"`; else `max_size` of
    config.toml): then shrink to it (`_shrink`).
    """
    if isinstance(max_size, str):
        from ..core.disk import parse_size

        max_size = parse_size(max_size)
    limit = worktree_limit(root, keep)
    size_limit = max_size if max_size is not None else _config_max_size(root)
    pacer = _Pacer(None if dry_run else prune_budget(root))
    result = PruneResult()
    settled: set[tuple[str, str]] = set()  # kept during this prune: not tried again
    with prune_lock(root):
        tidied = repair.tidy(root, dry_run, warn)
        found = tidied.found
        result.stale_holders_removed = tidied.stale_holders_removed
        result.reservations_discarded = tidied.reservations_discarded
        result.trash_deleted = tidied.trash_left
        result.leases_dropped = leasing.repair(root, dry_run)
        if dry_run:  # the plan, read in one go under the lock: nothing changes meanwhile
            _retain(found, limit, dry_run, result, merged, settled, pacer, root)
    if not dry_run:
        result.trash_deleted = repair.empty_trash_left(root, warn)
        if _retain(found, limit, dry_run, result, merged, settled, pacer, root):
            result.unfinished = True
            warn("prune stopped after its time budget; the next vwt prune goes on "
                 "(VWT_PRUNE_BUDGET or prune_budget_seconds in config.toml)")
            return result
    _prune_pools(root, dry_run, result, warn)
    if size_limit is not None:
        _shrink(root, size_limit, dry_run, result, warn)
    if not dry_run:  # after retention: a worktree about to go needs no lease
        gone = {(item["bucket"], item["name"]) for item in result.removed}
        leasing.lease_unleased(root, [e for e in found
                                      if (e.claim.bucket, e.name) not in gone], warn)
    return result


def _prune_pools(root: Root, dry_run: bool, result: PruneResult, warn: Warn) -> None:
    """The warm pools (docs/pool.md): not counted by `--keep`; trimmed to their size and age
    under their own locks, after retention."""
    if os.path.isdir(f"{root.path}/.pool"):
        from .pool import prune_pools

        result.pool_removed = prune_pools(root, dry_run, warn)


RETENTION = "retention"
MERGED = "merged"
FINISHED = "finished"
REQUESTED = "requested"  # the record asks for it (`reap_requested`)
REBASE_IN_PROGRESS = "rebase_in_progress"  # kept: a sync stopped at a conflict is resolved there

Reasons = dict[int, str]  # id(entry) -> why it is removed


def _retain(found: list[Entry], limit: int, dry_run: bool, result: PruneResult,
            merged: bool, settled: set[tuple[str, str]], pacer: _Pacer, root: Root) -> bool:
    """Finished sessions and orphaned records go whatever the limit (and, with `merged`,
    landed ones); then, oldest first, while more than `limit` complete records remain.
    Held ones count but are skipped, as do those `settled` (kept earlier in this prune).
    Returns True when it stopped before the end because its time budget was spent."""
    for entry in found:  # nothing can be snapshotted without its repository
        if entry.state == ORPHANED and _key(entry) not in settled:
            result.kept.append(_label(entry, reason=ORPHAN_REASON))
            settled.add(_key(entry))
    complete = [e for e in found if e.state in (READY, MISSING) and e.record is not None]
    complete.sort(key=lambda e: (e.record.claimed_epoch() if e.record else 0.0,
                                 e.claim.bucket, e.name))
    fresh = [e for e in complete if _key(e) not in settled]
    reasons: Reasons = {}
    for entry in fresh:
        why = _reap_regardless_of_limit(entry)
        if why:
            reasons[id(entry)] = why
    if merged:
        candidates = [e for e in fresh if id(e) not in reasons and e.state == READY]
        for entry, landed in zip(candidates, map_parallel(_landed, candidates), strict=True):
            if landed:
                reasons[id(entry)] = MERGED
    always = [e for e in fresh if id(e) in reasons]
    rest = [e for e in fresh if id(e) not in reasons]
    size = len(complete) if dry_run else CHUNK

    def reap(batch: list[Entry]) -> int:
        before = len(result.kept)
        pacer.start_batch()
        removed = _reap(batch, dry_run, result, reasons, root)
        pacer.end_batch()
        settled.update((str(k["bucket"]), str(k["name"])) for k in result.kept[before:])
        return removed

    remaining = len(complete)
    while always:
        if pacer.out_of_time():
            return True
        batch, always = always[:size], always[size:]
        remaining -= reap(batch)
    position = 0
    while remaining > limit and position < len(rest):
        if pacer.out_of_time():
            return True
        batch = rest[position:position + min(remaining - limit, size)]
        position += len(batch)
        remaining -= reap(batch)
    return False


def _key(entry: Entry) -> tuple[str, str]:
    return entry.claim.bucket, entry.name


def _reap_regardless_of_limit(entry: Entry) -> str | None:
    """Orphaned records, finished Vibe sessions and records that ask for it
    (`reap_requested`): the reason, or None."""
    record = entry.record
    if entry.state == MISSING:
        return MISSING
    if record is not None and record.reap_requested:
        return REQUESTED
    if record is not None and sessions_finished(record.session_dirs):
        return FINISHED
    return None


def _landed(entry: Entry) -> bool:
    """Clean, with commits of its own, all of them already in the target branch."""
    from ..core.integration import integrated

    try:
        target = target_for(entry)
        inspection = inspect(target)
        if (inspection.changes or not inspection.ahead or inspection.head is None
                or inspection.rebasing):
            return False
        return integrated(target.repo_git, inspection.head) is not None
    except VwtError:
        return False


def _reap(batch: list[Entry], dry_run: bool, result: PruneResult, reasons: Reasons,
          root: Root) -> int:
    """Snapshot then remove a batch of worktrees; returns how many went (or would go)."""
    if dry_run:
        free = []
        for entry in batch:
            holders = _live(entry)
            if holders:
                result.kept.append(_label(entry, reason="starting" if STARTING in holders
                                          else "held"))
            else:
                free.append(entry)
        free = _not_running(free, result)
        return sum(_plan(entry, result, reasons.get(id(entry), RETENTION)) for entry in free)
    holds = _let_go_of_running(_take_removal_holds(batch, result, root), result)
    try:
        return _remove_held(holds, result, reasons)
    finally:
        for entry, holder in holds:
            holder.release()
            tidy_claim_folders(entry.claim)


def _running(batch: list[Entry], result: PruneResult) -> list[Entry]:
    """The worktrees of `batch` that processes run inside (SPEC §17), each reported kept
    with the reason `processes_running`: retention never removes one, held or not. Only
    this prune itself is spared, not its ancestors: a shell standing in the worktree is
    someone working there."""
    using = processes_using([e.claim for e in batch], spare_callers=False)
    running = [e for e in batch if using[e.claim]]
    result.kept.extend(_label(e, reason=PROCESSES_RUNNING) for e in running)
    return running


def _not_running(batch: list[Entry], result: PruneResult) -> list[Entry]:
    running = {id(e) for e in _running(batch, result)}
    return [e for e in batch if id(e) not in running]


def _let_go_of_running(holds: list[tuple[Entry, Holder]], result: PruneResult
                       ) -> list[tuple[Entry, Holder]]:
    """The removal holds of worktrees nothing runs inside; the others are let go again.
    Looked at while held, so no new session can attach in between."""
    running = {id(e) for e in _running([entry for entry, _holder in holds], result)}
    for entry, holder in holds:
        if id(entry) in running:
            holder.release()
            tidy_claim_folders(entry.claim)
    return [pair for pair in holds if id(pair[0]) not in running]


def _take_removal_holds(batch: list[Entry], result: PruneResult, root: Root
                        ) -> list[tuple[Entry, Holder]]:
    """Under `.prune`, for a moment: each worktree still as decided and held by nobody gets
    prune's `.removing` holder (a creation or an attach now waits for it or refuses); one
    that changed or went meanwhile is left to the next prune."""
    holds: list[tuple[Entry, Holder]] = []
    with prune_lock(root):
        for entry in batch:
            now = load_entry(entry.claim)
            if now is None or (now.state, now.record) != (entry.state, entry.record):
                continue
            holders = _live(now)
            if holders:
                result.kept.append(_label(entry, reason="starting" if STARTING in holders
                                          else "held"))
                continue
            try:
                holds.append((entry, acquire_removal(entry.claim, frozenset())))
            except HeldError:
                result.kept.append(_label(entry, reason="held"))
    return holds


def _plan(entry: Entry, result: PruneResult, reason: str) -> int:
    """--dry-run: the same checks as a real removal, nothing written."""
    try:
        target = target_for(entry)
        inspection = inspect(target)
        if inspection.rebasing:
            result.kept.append(_label(entry, reason=REBASE_IN_PROGRESS))
            return 0
        problem = snapshot_problem(target, inspection)
    except MissingAdmin:
        result.kept.append(_label(entry, reason=ORPHAN_REASON))
        return 0
    except VwtError as exc:
        problem = str(exc)
    if problem and (entry.state != MISSING):
        result.kept.append(_label(entry, reason=f"snapshot failed: {problem}"))
        return 0
    result.removed.append(_label(entry, snapshot_ref=entry.claim.snapshot_ref, reason=reason,
                                 **_work(inspection if not problem else None)))
    return 1


def _work(inspection: Inspection | None) -> dict[str, object]:
    """What the snapshot of a removed worktree keeps: its uncommitted changes and its commits
    since its base (a person reading the plan sees which worktrees hold work)."""
    if inspection is None:
        return {}
    return {"changes": inspection.changes, "ahead": inspection.ahead}


class _Saved(NamedTuple):
    doomed: Doomed
    commit: str | None  # a new snapshot commit to point the ref at


def _save(entry: Entry, cache: dict[str, tuple[str, ...]]) -> _Saved | str:
    """Inspect and snapshot one worktree (no ref written yet); a string says why not."""
    try:
        target = target_for(entry)
        inspection = inspect(target, cache)
        if inspection.rebasing:  # half-way through resolving a conflict: never automatic
            return REBASE_IN_PROGRESS
        assert entry.record is not None
        doomed = Doomed(target, inspection, None, entry.record.branch_created)
        ref = existing_snapshot(entry, target)
        if ref is not None:
            return _Saved(doomed._replace(snapshot_ref=ref), None)
        try:
            commit = snapshot_commit(target, inspection)
        except SnapshotFailed as exc:
            if entry.state == MISSING and inspection.head is None:
                return _Saved(doomed, None)  # nothing is left to save: checkout and branch gone
            return f"snapshot failed: {exc}"
        return _Saved(doomed._replace(snapshot_ref=entry.claim.snapshot_ref), commit)
    except MissingAdmin:
        return ORPHAN_REASON
    except DiskFull:  # stop: nothing else can be saved either, so nothing more goes
        raise
    except VwtError as exc:
        return str(exc)


def _remove_held(holds: list[tuple[Entry, Holder]], result: PruneResult,
                 reasons: Reasons) -> int:
    cache: dict[str, tuple[str, ...]] = {}
    saved = map_parallel(lambda pair: _save(pair[0], cache), holds)
    ready: list[tuple[Entry, _Saved]] = []
    for (entry, _holder), outcome in zip(holds, saved, strict=True):
        if isinstance(outcome, str):
            result.kept.append(_label(entry, reason=outcome))
        else:
            ready.append((entry, outcome))
    by_repo: dict[str, list[_Saved]] = {}
    for _entry, item in ready:
        by_repo.setdefault(item.doomed.target.repo_git.cwd, []).append(item)
    for items in by_repo.values():
        update_refs(items[0].doomed.target.repo_git, [
            f"update {i.doomed.snapshot_ref} {i.commit}" for i in items if i.commit
        ])
    checkpoint("prune.snapshotted")
    remove_all([item.doomed for _entry, item in ready])
    for entry, item in ready:
        result.removed.append(_label(entry, snapshot_ref=item.doomed.snapshot_ref,
                                     reason=reasons.get(id(entry), RETENTION),
                                     **_work(item.doomed.inspection)))
    return len(ready)


# -- the disk bound (`--max-size`, `max_size`) --------------------------------------------------
MAX_SIZE = "max_size"


def _config_max_size(root: Root) -> int | None:
    """`max_size` of config.toml: a size string (`20G`) or a number of bytes."""
    from ..core.config import read_config
    from ..core.disk import parse_size

    value = read_config(root.home).get("max_size")
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        return parse_size(value, f"max_size in {root.config_file}")
    raise VwtError(f"max_size in {root.config_file} must be a size such as \"20G\"")


def _shrink(root: Root, limit: int, dry_run: bool, result: PruneResult, warn: Warn) -> None:
    """Until the managed checkouts and the pools take at most `limit` bytes: remove pool
    entries (oldest first), then the oldest worktrees no one holds, each snapshotted first
    as retention does. `freed_bytes` adds up what went (or, with `dry_run`, would go)."""
    from ..core.disk import sizes
    from . import pool

    pooled = pool.ready_everywhere(root)
    found = [e for e in entries(root, root.buckets())
             if e.state == READY and e.record is not None]
    found.sort(key=lambda e: (e.record.claimed_epoch() if e.record else 0.0,
                              e.claim.bucket, e.name))
    measured = sizes([p.path for p in pooled] + [e.claim.checkout for e in found])
    pool_sizes, worktree_sizes = measured[:len(pooled)], measured[len(pooled):]
    excess = sum(measured) - limit
    for placed, size in zip(pooled, pool_sizes, strict=True):
        if excess <= 0:
            return
        if dry_run or pool.remove_ready(root, placed, warn):
            result.pool_removed.append({"bucket": placed.bucket, "id": placed.id})
            result.freed_bytes += size
            excess -= size
    for entry, size in zip(found, worktree_sizes, strict=True):
        if excess <= 0:
            return
        if _reap([entry], dry_run, result, {id(entry): MAX_SIZE}, root):
            result.freed_bytes += size
            excess -= size
    if excess > 0:
        warn(f"still {excess} bytes over the size limit: what is left is held, or could "
             "not be snapshotted (see kept)")
