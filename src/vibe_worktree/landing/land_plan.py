"""What a land takes, and the order it goes in (SPEC §18).

`--ready` selects every worktree with work to land that no one but the caller holds; whose
holds are the caller's own is `Callers`' question. The order is the names in the order
given, except that with several names the ones that collide with none of the others (no
conflicting pair, as `vwt conflicts` forecasts it) land first, then the others in claim
order, oldest first: the second of a conflicting pair would conflict once the first has
landed, so everything that can land lands before it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..core import git as g
from ..core.errors import VwtError
from ..core.integration import Tips, check
from ..core.layout import Claim
from ..core.light import NamedTuple
from ..core.locks import HOLDER_ENV, live_holders, registry_lock
from ..core.records import Record
from ..lifecycle.worktrees import (
    READY,
    Entry,
    Repo,
    entries,
    housekeeping_git,
    inspect_checkout,
    load_entry,
    validate_checkout,
)
from .collisions import ConflictsResult, Scope, forecast


class Pair(NamedTuple):
    """Another worktree of the same land that changed some of the same paths."""

    other: str
    overlap: tuple[str, ...]
    conflicts: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {"with": self.other, "overlap": list(self.overlap),
                "conflicts": list(self.conflicts)}


class Planned(NamedTuple):
    """One worktree in the land's order, with its forecast (None when it was not made:
    a single worktree needs none)."""

    name: str
    target_conflicts: tuple[str, ...] | None = None
    pairs: tuple[Pair, ...] = ()
    error: str | None = None  # it cannot be landed at all (not found, no checkout)
    forecast_error: str | None = None  # its work could not be read for the forecast

    @property
    def collides(self) -> bool:
        return any(p.conflicts for p in self.pairs)

    def to_json(self) -> dict[str, object]:
        conflicts = None if self.target_conflicts is None else list(self.target_conflicts)
        return {"name": self.name, "collides": self.collides, "target_conflicts": conflicts,
                "pairs": [p.to_json() for p in self.pairs],
                "error": self.error or self.forecast_error}


def ordered(repo: Repo, names: Sequence[str], forecast_single: bool = False
            ) -> tuple[Planned, ...]:
    """`names` in landing order; those that cannot be landed come last, with their error.
    `forecast_single`: forecast even a single worktree (a dry run shows it)."""
    claimed: dict[str, float] = {}
    missing: list[Planned] = []
    for name in names:
        entry = load_entry(repo.claim(name))
        if entry is None or entry.state != READY or entry.record is None:
            why = (f"no managed worktree named {name} in this repository" if entry is None
                   else f"{name} is {entry.state}; only a worktree with a checkout can be "
                        "landed")
            missing.append(Planned(name, error=why))
        else:
            claimed[name] = claimed_order(entry.record)
    present = [n for n in names if n in claimed]
    if len(present) < 2 and not forecast_single:
        return (*(Planned(n) for n in present), *missing)
    found = forecast(repo.root, [repo.bucket], Scope())
    plans = _plans(present, found)
    free = [p for p in plans if not p.collides]
    others = sorted((p for p in plans if p.collides), key=lambda p: claimed[p.name])
    return (*free, *others, *missing)


def _plans(names: list[str], found: ConflictsResult) -> list[Planned]:
    wanted = set(names)
    rows = {w.name: w for w in found.worktrees if w.name in wanted}
    pairs: dict[str, list[Pair]] = {name: [] for name in names}
    for pair in found.pairs:
        if pair.a in wanted and pair.b in wanted:
            pairs[pair.a].append(Pair(pair.b, pair.overlap, pair.conflicts))
            pairs[pair.b].append(Pair(pair.a, pair.overlap, pair.conflicts))
    plans = []
    for name in names:
        row = rows.get(name)
        plans.append(Planned(name, None if row is None else row.target_conflicts,
                             tuple(pairs[name]), None, None if row is None else row.error))
    return plans


def claimed_order(record: Record | None) -> float:
    """A sort key: the claim's time, oldest first."""
    try:
        return float("inf") if record is None else record.claimed_epoch()
    except ValueError:
        return float("inf")  # an unreadable time: last


# -- whose holds count ------------------------------------------------------------------------
class Callers(NamedTuple):
    """Who is calling: holder ids named as the caller's own, and the processes it runs
    under. A holder made by one of those processes (`vwt run NAME` that started the agent,
    the Claude Code session whose agent calls `vwt land`) is the caller's own: a land
    called from inside its worktree is not refused because its own session holds it."""

    ids: frozenset[str]
    pids: frozenset[int]

    def of(self, claim: Claim) -> frozenset[str]:
        own = set(self.ids)
        for holder in holders_of(claim):
            if _holder_pids(claim, holder) & self.pids:
                own.add(holder)
        return frozenset(own)


def callers(ids: frozenset[str]) -> Callers:
    found = set(ids)
    if os.environ.get(HOLDER_ENV):
        found.add(os.environ[HOLDER_ENV])
    return Callers(frozenset(found), frozenset(_ancestors()))


def _ancestors() -> list[int]:
    """This process and its ancestors, nearest first (from /proc; else the parent only)."""
    from ..core.host import read_stat

    pids = [os.getpid(), os.getppid()]
    while len(pids) < 64:
        stat = read_stat(pids[-1])
        if stat is None:
            break
        parent = int(stat[1][1])
        if parent <= 1 or parent in pids:
            break
        pids.append(parent)
    return pids


def holders_of(claim: Claim) -> list[str]:
    """The ids of the claim's live holders."""
    with registry_lock(claim.root):
        return live_holders(claim)


def _holder_pids(claim: Claim, holder: str) -> set[int]:
    """The processes a holder file names as its maker (`pid`, and an agent's `host_pid`)."""
    import json

    try:
        with open(os.path.join(claim.holders_dir, holder), "rb") as handle:
            data = json.loads(handle.read(4096) or b"{}")
    except (OSError, ValueError):
        return set()
    if not isinstance(data, dict):
        return set()
    return {p for p in (data.get("pid"), data.get("host_pid")) if isinstance(p, int)}


# -- `--ready` ---------------------------------------------------------------------------------
def select_ready(repo: Repo, tips: Tips, mine: Callers) -> list[str]:
    """Every ready worktree of the repository with commits not in T, no uncommitted change
    and no live holder but the caller's, oldest claim first."""
    found = [e for e in entries(repo.root, [repo.bucket], with_recovery=False)
             if e.state == READY and e.record is not None and e.problem is None]

    def wanted(entry: Entry) -> bool:
        claim, record = entry.claim, entry.record
        assert record is not None
        if [h for h in holders_of(claim) if h not in mine.of(claim)]:
            return False
        try:
            checkout = validate_checkout(claim, repo.info.common_dir)
        except VwtError:
            return False
        inspection = inspect_checkout(checkout, record)
        if inspection.changes or inspection.rebasing or inspection.head is None:
            return False
        git = housekeeping_git(checkout)
        return check(git, inspection.head, tips).integrated is None

    chosen = [e for e, ok in zip(found, g.map_parallel(wanted, found), strict=True) if ok]
    chosen.sort(key=lambda e: claimed_order(e.record))
    return [e.name for e in chosen]
