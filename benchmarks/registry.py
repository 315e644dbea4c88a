"""Every benchmark by id: what it measures, its target ratio, and the function that runs it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from benchmarks import agents, collisions, landing, many, pool, processes, queue, ready, runtime
from benchmarks.cases import Config, b1, b2, b3, b4, b5, b6
from benchmarks.measure import Outcome


@dataclass(frozen=True)
class Bench:
    id: str
    what: str
    target: float
    fn: Callable[[Config, Outcome], list[Outcome]]


BENCHMARKS: dict[str, Bench] = {
    b.id: b
    for b in (
        Bench("B1", "new vs worktree add, large repo", 0.8, b1),
        Bench("B2", "new vs worktree add, 100 files", 4.0, b2),
        Bench("B3", "list --json with status", 0.7, b3),
        Bench("B4", "prune --keep 0", 1.0, b4),
        Bench("B5", "--version vs python -c pass", 4.0, b5),
        Bench("B6", "list --no-status --json vs --version", 3.0, b6),
        Bench("B7", "list --json with integration", 0.7, landing.b7),
        Bench("B8", "merge vs rebase + update-ref + worktree remove", 0.6, landing.b8),
        Bench("B9", "new with a copied node_modules vs add + cp -a", 0.6, ready.b9),
        Bench("B10", "new --sparse vs a full worktree add", 0.15, ready.b10),
        Bench("B11", "parallel new+rm cycles vs one after another", 0.8, many.b11),
        Bench("B12", "list --no-status --json, 5000 records, vs --version", 8.0, many.b12),
        Bench("B13", "conflicts --json vs a raw forecast script", 0.7, collisions.b13),
        Bench("B14", "new from a warm pool vs worktree add + a 5 s hook", 0.05, pool.b14),
        Bench("B15", "env NAME --json among 1,000 leased worktrees vs --version", 1.5,
              runtime.b15),
        Bench("B16", "land of 8 worktrees vs a rebase + gate + ff merge loop", 1.5, queue.b16),
        Bench("B17", "ps --all --json, 200 worktrees, 500 processes, vs a raw /proc walk", 4.0,
              processes.b17),
        Bench("B19", "activity set (an agent's hook line) vs --version", 4.0, agents.b19),
    )
}
