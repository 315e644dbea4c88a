"""`vwt land`: the local merge queue (SPEC §18).

A land takes its worktrees in hand (a §2 holder on each, so retention keeps away, and a
ticket in the repository's queue, so no other land takes them), waits for its turn on the
target branch T, then for each worktree in turn: syncs it onto T's tip, runs the gate on
exactly that state, and lands it as `vwt merge` lands it, by compare-and-swap from the tip
it was gated on. T moved meanwhile: the worktree goes round again (at most three times in
all). One worktree's refusal or failure is its own result; the next one goes on.

T only ever moves to a commit that passed its gate, or not at all: a land killed at any
moment leaves it there, the worktree as `sync` or `merge` leave it when killed (`vwt prune`
repairs), and the queue free (a dead land's ticket and holders are unlocked files).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence

from ..core import git as g
from ..core.errors import DiskFull, HeldError, Interrupted, NotFound, VwtError
from ..core.integration import Tips, check, read_tips
from ..core.layout import Claim
from ..core.light import NamedTuple
from ..core.locks import Holder, acquire_holder, new_holder_id, prune_lock
from ..core.names import path_segment_problem
from ..core.signals import stops_deferred
from ..lifecycle.remove import Target, inspect, target_for, tidy_claim_folders
from ..lifecycle.settings import LandSettings
from ..lifecycle.worktrees import READY, Repo, housekeeping_git, load_entry, validate_checkout
from . import gate as _gate
from . import merge as _merge
from . import sync as _sync
from .land_plan import Callers, Planned, callers, holders_of, ordered, select_ready
from .queue import Place, Queue, land_folder

ATTEMPTS = 3

MERGED = _merge.MERGED
UP_TO_DATE = _merge.UP_TO_DATE
CONFLICT = _merge.CONFLICT
KEPT_DIRTY = _merge.KEPT_DIRTY
KEPT_IN_USE = _merge.KEPT_IN_USE
TARGET_MOVED = _merge.TARGET_MOVED
GATE_FAILED = "gate_failed"
GATE_UNAPPROVED = "gate_unapproved"
BUSY = "busy"
NOT_FOUND = "not_found"
ERROR = "error"  # something failed that is none of the above (its message says what)
LANDED = (MERGED, UP_TO_DATE)

Say = Callable[[str], None]


class LandResult(NamedTuple):
    """What became of one worktree; `to_json` is its item of the §18 document."""

    name: str
    outcome: str
    commit: str | None = None  # T's new tip, or None
    attempts: int = 0
    gate: _gate.GateRun | None = None  # the last run of the gate, if one ran
    conflicts: tuple[str, ...] = ()
    removed: bool = False
    message: str = ""  # what a person should know, in one line

    @property
    def landed(self) -> bool:
        return self.outcome in LANDED

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "outcome": self.outcome, "commit": self.commit,
                "attempts": self.attempts,
                "gate": None if self.gate is None else self.gate.to_json(),
                "conflicts": list(self.conflicts), "removed": self.removed,
                "message": self.message or None}


class LandReport(NamedTuple):
    """The whole land: the target, the order it went in, and each worktree's result."""

    into: str
    results: tuple[LandResult, ...]
    plan: tuple[Planned, ...]
    dry_run: bool = False

    @property
    def exit_code(self) -> int:
        return 0 if all(r.landed for r in self.results) else 1

    def to_json(self) -> dict[str, object]:
        return {"into": self.into, "dry_run": self.dry_run,
                "order": [p.to_json() for p in self.plan],
                "results": [r.to_json() for r in self.results]}


class Request(NamedTuple):
    names: tuple[str, ...]  # in the order given; with `ready`, none
    ready: bool = False
    into: str | None = None
    gate: str | None = None  # --gate CMD
    keep: bool = False
    wait: bool = True
    dry_run: bool = False
    mode: str = _merge.SQUASH
    own_holders: frozenset[str] = frozenset()  # the caller's (VWT_HOLDER_ID, an MCP session)
    hooks: bool = True  # run merge's hooks (pre_merge, pre_remove, post_merge)


class Output(NamedTuple):
    """Where a land speaks: `warn` for warnings, `say` for progress (whose turn it waits
    for), `done` for each worktree's result as soon as it is known."""

    warn: Say
    say: Say
    done: Callable[[LandResult], None]


# -- the whole land ---------------------------------------------------------------------------
def land(repo: Repo, request: Request, out: Output) -> LandReport:
    """Land the requested worktrees, one at a time, in the queue's turn."""
    if request.mode not in _merge.MODES:
        raise VwtError(f"unknown merge mode {request.mode!r}; use squash, rebase or ff-only", 2)
    if request.ready and request.names:
        raise VwtError("--ready takes every worktree with work to land; drop the names", 2)
    if not request.ready and not request.names:
        request = request._replace(names=(name_here(repo),))
    for name in request.names:
        if path_segment_problem(name):
            raise VwtError(f"{name!r} is not a worktree name", 2)
    tips = read_tips(repo.git, request.into)
    if tips is None:
        raise VwtError("no target branch (no main or master, no remote default); pass --into")
    mine = callers(request.own_holders)
    names = select_ready(repo, tips, mine) if request.ready else _unique(request.names)
    plan = ordered(repo, names, forecast_single=request.dry_run)
    if request.dry_run:
        return LandReport(tips.branch, (), plan, True)
    results: list[LandResult] = []

    def finished(result: LandResult) -> None:
        results.append(result)
        out.done(result)

    job = _Job(repo, tips.branch, request, mine, new_holder_id("land"), out, _TrashBin())
    held: dict[str, Holder] = {}
    place: Place | None = None
    try:
        with stops_deferred():  # a stop now would leave the holds and the ticket behind
            held, place = _take_in_hand(job, [p.name for p in plan if p.error is None],
                                        finished, quietly=request.ready)
        for p in plan:
            if p.error is not None and not request.ready:
                finished(LandResult(p.name, NOT_FOUND, message=p.error))
        if place is not None:
            _land_in_turn(job, place, held, finished)
    finally:
        for holder in held.values():
            _give_back(holder)
        if place is not None:
            place.leave()
        job.trash.close()
    return LandReport(tips.branch, tuple(results), plan)


def name_here(repo: Repo) -> str:
    """The managed worktree the repository was opened in (its checkout's top level)."""
    where = os.path.relpath(os.path.realpath(repo.info.toplevel), repo.root.path).split(os.sep)
    if len(where) == 2 and where[0] == repo.bucket:
        return where[1]
    raise VwtError("not inside a managed worktree: name the worktrees to land, or pass "
                   "--ready", 2)


def _unique(names: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(names))


class _TrashBin:
    """Deletes the checkouts that landed worktrees left in `.trash` on a thread of its own,
    while the next worktree lands; `close` waits for the last one (a land, like `merge`,
    leaves nothing in `.trash` for `prune`, unless it is killed)."""

    def __init__(self) -> None:
        import queue

        self._paths: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def delete(self, paths: list[str]) -> None:
        if not paths:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="vwt-trash", daemon=True)
            self._thread.start()
        for path in paths:
            self._paths.put(path)

    def _run(self) -> None:
        from ..lifecycle.trash import delete_trash

        while (path := self._paths.get()) is not None:
            delete_trash(path)

    def close(self) -> None:
        if self._thread is not None:
            self._paths.put(None)
            self._thread.join()
            self._thread = None


class _Job(NamedTuple):
    """What every worktree of one land shares."""

    repo: Repo
    into: str
    request: Request
    callers: Callers
    holder_id: str  # this land's holder on each worktree it has in hand
    out: Output
    trash: _TrashBin

    @property
    def home(self) -> str:
        return self.repo.root.home

    def own(self, claim: Claim) -> frozenset[str]:
        """The holders of `claim` that are this land's or its caller's."""
        return self.callers.of(claim) | {self.holder_id}


def _take_in_hand(job: _Job, names: list[str], finished: Callable[[LandResult], None],
                  quietly: bool) -> tuple[dict[str, Holder], Place | None]:
    """Hold each worktree and take a ticket for those held, all under the queue's lock: a
    worktree another land has in hand is `busy` (with `quietly`, a `--ready` selection, one
    that is in another land's hand, or gone meanwhile, is simply not this land's). Returns
    the holds, by name, and the ticket."""
    queue = Queue(job.repo.root, job.repo.bucket)
    held: dict[str, Holder] = {}
    with queue.locked():
        in_hand = queue.in_hand()
        for name in names:
            if name in in_hand:
                if not quietly:
                    finished(LandResult(name, BUSY, message=(
                        f"{name} is already in the hand of another land "
                        f"({in_hand[name].describe()}); nothing done")))
                continue
            try:
                held[name] = _hold(job, job.repo.claim(name))
            except (NotFound, HeldError) as exc:  # gone, or being removed, since it was asked
                if not quietly:
                    outcome = NOT_FOUND if isinstance(exc, NotFound) else KEPT_IN_USE
                    finished(LandResult(name, outcome, message=exc.message))
        if not held:
            return held, None
        return held, queue.join(job.into, tuple(held))


def _hold(job: _Job, claim: Claim) -> Holder:
    """This land's hold on a ready worktree, taken under the prune lock as `vwt run` holds
    (retention cannot slip in between the look and the hold)."""
    common_dir = job.repo.info.common_dir
    with prune_lock(claim.root):
        entry = load_entry(claim)
        if entry is None or entry.state != READY or entry.problem is not None:
            raise NotFound(_not_ready(claim.name, entry.state if entry else None))
        validate_checkout(claim, common_dir)
        holder = acquire_holder(claim, job.holder_id)
    try:
        validate_checkout(claim, common_dir)
    except BaseException:
        _give_back(holder)
        raise
    return holder


def _not_ready(name: str, state: str | None) -> str:
    if state is None:
        return f"no managed worktree named {name} in this repository"
    return f"{name} is {state}; only a worktree with a checkout can be landed"


def _give_back(holder: Holder) -> None:
    holder.release()
    tidy_claim_folders(holder.claim)


def _land_in_turn(job: _Job, place: Place, held: dict[str, Holder],
                  finished: Callable[[LandResult], None]) -> None:
    if not place.wait_turn(job.out.say, job.request.wait):
        first = place.first()
        for name in list(held):
            finished(LandResult(name, BUSY, message=(
                f"another land has the turn on {job.into} ({first.describe()}); nothing done "
                "(run without --no-wait to wait for it)")))
        return
    for name in list(held):
        try:
            result = _land_one(job, held[name].claim)
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM: say what is left to land
            names = " ".join(held)
            raise Interrupted.of(exc, f"not landed: {', '.join(held)} ({name} may stay "
                                      f"rebased onto {job.into}); vwt land {names} lands "
                                      "them") from None
        _give_back(held.pop(name))
        place.keep_only(tuple(held))
        finished(result)


# -- one worktree ------------------------------------------------------------------------------
def _land_one(job: _Job, claim: Claim) -> LandResult:
    """Sync, gate and land one worktree, again while T moves under it (ATTEMPTS in all)."""
    result = LandResult(claim.name, TARGET_MOVED)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            result = _attempt(job, claim, result._replace(attempts=attempt))
        except DiskFull:
            raise
        except VwtError as exc:
            return result._replace(outcome=ERROR, commit=None, removed=False,
                                   message=f"{exc.message}; nothing landed")
        if result.outcome != TARGET_MOVED:
            return result
    return result._replace(message=(
        f"{job.into} moved on during each of {ATTEMPTS} attempts; nothing landed (run vwt "
        f"land {claim.name} again)"))


def _attempt(job: _Job, claim: Claim, result: LandResult) -> LandResult:
    """One round: step 1 (sync), 2 (gate) and 3 (land, which also does step 4)."""
    entry = load_entry(claim)
    if entry is None or entry.state != READY:
        return result._replace(outcome=NOT_FOUND,
                               message=_not_ready(claim.name, entry.state if entry else None))
    target = target_for(entry)
    tips = read_tips(target.repo_git, job.request.into)
    if tips is None:
        raise VwtError("no target branch any more; pass --into")
    others = [h for h in holders_of(claim) if h not in job.own(claim)]
    if others:
        return result._replace(outcome=KEPT_IN_USE, message=(
            f"{claim.name} is held by a live session ({', '.join(others)}); nothing landed"))
    tip = tips.commits[0]
    if len(tips.commits) > 1:  # `<remote>/T` differs: its work may be in there, not in T
        early = _refusal(target, tips, result)
        if early is not None:
            return _landed(job, claim, tip, early) if early.outcome == UP_TO_DATE else early
    settings, gate = _gate_for(job, target, tip)
    if gate is not None and not gate.approved:
        return result._replace(outcome=GATE_UNAPPROVED, message=(
            f"the [land] gate `{gate.command}` of {settings.file} is not approved; nothing "
            f"landed for {claim.name} (see vwt hooks, then vwt hooks approve gate)"))
    synced = _sync_onto(job, claim, tip)
    refused = _not_synced(job, target, tips, synced, result)
    if refused is not None:
        return _landed(job, claim, tip, refused) if refused.outcome == UP_TO_DATE else refused
    if synced.head == tip:  # no commit of its own: nothing to gate, merge says up_to_date
        return _landed(job, claim, tip, result)
    if gate is not None:
        run = _run_gate(job, claim, gate.command, settings, tip, result.attempts)
        result = result._replace(gate=run)
        if not run.passed:
            return result._replace(outcome=GATE_FAILED, message=(
                f"{run.describe()}; nothing landed, {claim.name} stays rebased onto "
                f"{job.into} (log: {run.log})"))
    return _landed(job, claim, tip, result)


def _not_synced(job: _Job, target: Target, tips: Tips, synced: _sync.SyncResult,
                result: LandResult) -> LandResult | None:
    """Why the sync leaves nothing to gate: uncommitted work, a sync already stopped in
    the worktree, or a conflict, unless the work is in T already (a squash of it there, say,
    then changed again: `up_to_date`, for merge to finish). None when it synced."""
    name = target.claim.name
    if synced.outcome in (_sync.SYNCED, _sync.UP_TO_DATE):
        return None
    if synced.outcome == _sync.KEPT_DIRTY:
        return result._replace(outcome=KEPT_DIRTY, message=(
            f"{synced.message.partition('; nothing synced')[0]}; nothing landed (commit "
            "them first)"))
    if synced.outcome == _sync.CONFLICT_STOPPED:
        return result._replace(outcome=KEPT_DIRTY, message=(
            f"a sync of {name} is stopped at a conflict; nothing landed (finish it: vwt sync "
            f"{name} --continue, or undo it: vwt sync {name} --abort)"))
    if synced.outcome == _sync.CONFLICT and synced.head is not None:
        assert target.checkout is not None
        if check(housekeeping_git(target.checkout), synced.head, tips).integrated:
            return result._replace(outcome=UP_TO_DATE)
        if synced.conflicts:
            return result._replace(outcome=CONFLICT, conflicts=synced.conflicts, message=(
                f"{name} conflicts with {job.into} in {_few(synced.conflicts)}; nothing "
                f"changed; {_merge.resolve_hint(name, job.request.into)}"))
    return result._replace(outcome=synced.outcome, conflicts=synced.conflicts,
                           message=synced.message)


def _few(paths: Sequence[str], most: int = 3) -> str:
    shown = ", ".join(paths[:most])
    return shown if len(paths) <= most else f"{shown} and {len(paths) - most} more"


def _refusal(target: Target, tips: Tips, result: LandResult) -> LandResult | None:
    """Why the worktree is not synced at all: its work is uncommitted (or a sync is stopped
    in it), or it is already in T or `<remote>/T` (`up_to_date`, for merge to finish: work
    a forge merged is not landed on T a second time, nor gated)."""
    inspection = inspect(target)
    name = target.claim.name
    if inspection.rebasing:
        return result._replace(outcome=KEPT_DIRTY, message=(
            f"a sync of {name} is stopped at a conflict; nothing landed (finish it: vwt sync "
            f"{name} --continue, or undo it: vwt sync {name} --abort)"))
    if inspection.changes:
        return result._replace(outcome=KEPT_DIRTY, message=(
            f"{name} has {inspection.describe_loss()}; nothing landed (commit them first)"))
    if inspection.head is None:
        raise VwtError(f"{name} has no commit to land")
    assert target.checkout is not None
    git = housekeeping_git(target.checkout)
    if inspection.ahead == 0 or check(git, inspection.head, tips).integrated is not None:
        return result._replace(outcome=UP_TO_DATE)
    return None


class _Gate(NamedTuple):
    command: str
    approved: bool


def _gate_for(job: _Job, target: Target, tip: str) -> tuple[LandSettings, _Gate | None]:
    """The `[land]` settings at T's tip and the gate to run (`--gate` needs no approval:
    the caller typed it). A broken `[land]` table fails closed (VwtError), unless `--gate`
    stands in for its gate: its timeout is then the default, with a warning."""
    from ..lifecycle import hooks, settings

    label = f"{settings.PROJECT_FILE} (at {tip[:12]})"
    try:
        found = settings.land_settings(g.file_at(target.repo_git, tip, settings.PROJECT_FILE),
                                       label)
    except settings.HooksFileError as exc:
        if job.request.gate is None:
            raise VwtError(exc.message) from None
        job.out.warn(f"{exc.message}; the gate runs with the default timeout")
        found = settings.LandSettings(file=label)
    if job.request.gate is not None:
        return found, _Gate(job.request.gate, True)
    hook = hooks.gate_hook(found)
    if hook is None:
        return found, None
    keys = settings.approved_keys(job.home, job.repo.bucket)
    return found, _Gate(hook.command, hooks.is_approved(hook, keys))


def _sync_onto(job: _Job, claim: Claim, tip: str) -> _sync.SyncResult:
    """Step 1: rebase the worktree's own commits onto T's tip itself (never onto
    `<remote>/T`: the gate must check what lands on T)."""
    return _sync.sync(claim, job.request.into, False, job.out.warn, onto_commit=tip)


def _run_gate(job: _Job, claim: Claim, command: str, settings: LandSettings,
              tip: str, attempt: int) -> _gate.GateRun:
    from ..lifecycle import hook_runner, hooks

    entry = load_entry(claim)
    assert entry is not None and entry.record is not None
    record = entry.record
    ctx = hook_runner.context(job.home, claim.bucket, claim.name, record.branch, claim.checkout,
                              record.repo_root, record.base_commit or "", job.into)
    env = ctx.env(hooks.Hook(hooks.GATE_NAME, hooks.LAND_GATE, command))
    env.pop("VWT_HOOK", None)  # the gate is not a hook
    env.pop("VWT_HOOK_NAME", None)
    env["VWT_TARGET_COMMIT"] = tip
    log = f"{land_folder(claim.root, claim.bucket)}/{claim.name}.log"
    header = f"gate of {claim.name} on {job.into} at {tip[:12]} (attempt {attempt})"
    job.out.say(f"gate of {claim.name} (attempt {attempt}): {command}")
    return _gate.run_gate(command, claim.checkout, env, settings.timeout, log, header,
                          fresh_log=attempt == 1)


def _landed(job: _Job, claim: Claim, gated: str, result: LandResult) -> LandResult:
    """Step 3 and 4: `vwt merge`'s landing, only while T is still `gated`."""
    landed = _merge_if_unmoved(job, claim, gated)
    outcome = landed.outcome
    message = landed.message
    if outcome == MERGED and landed.kept_reason is None:
        message = ""  # the line that says it landed says it all (not why it is still there)
    elif outcome == KEPT_DIRTY and result.gate is not None:  # clean before the gate ran
        message = (f"the gate left changes in {claim.name}, so what it checked is not what "
                   "would land; nothing landed (have the gate clean up, or ignore those files)")
    return result._replace(outcome=outcome, commit=landed.commit, conflicts=landed.conflicts,
                           removed=landed.removed, message=message)


def _merge_if_unmoved(job: _Job, claim: Claim, gated: str) -> _merge.MergeResult:
    request = _merge.Request(claim.name, job.request.into, job.request.mode, None, False,
                             job.request.keep, False, job.own(claim),
                             _merge_hooks(job, claim) if job.request.hooks else None,
                             expect_tip=gated, delete_trash=job.trash.delete)
    return _merge.merge(claim, request, job.out.warn)


def _merge_hooks(job: _Job, claim: Claim) -> _merge.RunHooks | None:
    """merge's hooks, as `vwt merge` runs them (none when there is no hooks file)."""
    return _merge.merge_hooks(job.home, job.out.warn, None, claim.checkout,
                              job.repo.info.repo_root)
