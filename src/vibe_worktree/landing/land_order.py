"""The order a land goes in (SPEC §18 "Order"), with each worktree's §13 forecast.

The names in the order given, except that with several names the ones that collide with
none of the others (no conflicting pair, as `vwt conflicts` forecasts it) land first, then
the others in claim order, oldest first: the second of a conflicting pair would conflict
once the first has landed, so everything that can land lands before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ..core.records import Record
from ..lifecycle.worktrees import READY, Repo, load_entry
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
