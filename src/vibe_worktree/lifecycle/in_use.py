"""Processes running inside a worktree (SPEC §17): a worktree something runs in is not
removed (`rm`, `merge`, `prune`); `rm --stop` stops them first."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from ..core.layout import Claim
from ..core.light import NamedTuple
from ..core.proctable import KILLED, TERMINATED, Proc, describe, scan, stop, users

PROCESSES_RUNNING = "processes_running"  # what keeps a worktree that processes run inside

Warn = Callable[[str], None]


def processes_using(claims: Sequence[Claim], spare_callers: bool = True
                    ) -> dict[Claim, list[Proc]]:
    """claim -> the processes whose current directory is inside its checkout, held or not.
    This process never counts; with `spare_callers` nor do its ancestors (an explicit
    removal: the shell in the worktree that typed `vwt rm`, the agent whose hook runs it,
    are the ones asking); retention spares only itself, so a shell of yours standing in
    a worktree keeps it."""
    present = [c.checkout for c in claims if os.path.isdir(c.checkout)]
    found = users(present, spare=None if spare_callers else {os.getpid()}) if present else {}
    return {c: found.get(c.checkout, []) for c in claims}


class Cleared(NamedTuple):
    stopped: tuple[int, ...]  # stopped by `stop`
    running: tuple[Proc, ...]  # still inside: the worktree must stay


def clear_processes(claim: Claim, stop_them: bool, warn: Warn) -> Cleared:
    """The processes running inside the checkout (the caller and its ancestors excepted);
    with `stop_them`, they are stopped first (SIGTERM, up to 5 s, SIGKILL) and the
    checkout is looked at again: what runs there then (a restarted server) still keeps it.
    Processes vwt may not inspect that may be inside are named in a warning, not counted."""
    if not os.path.isdir(claim.checkout):
        return Cleared((), ())
    table = scan()
    for pid in table.may_be_inside(claim.checkout):
        warn(f"pid {pid} ({table.command(pid)}), another user's process, may be running "
             f"inside {claim.name}; vwt may not see where it runs, so it does not count")
    running = users([claim.checkout], table)[claim.checkout]
    if not running or not stop_them:
        return Cleared((), tuple(running))
    done = stop(running, claim.checkout)
    stopped = tuple(s.pid for s in done if s.how in (TERMINATED, KILLED))
    return Cleared(stopped, tuple(processes_using([claim])[claim]))


def in_use_message(name: str, running: Sequence[Proc]) -> str:
    return (f"{name} is in use: {describe(running)}; nothing removed (stop them, or remove "
            "it with --stop, which stops them first)")
