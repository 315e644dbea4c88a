"""`vwt land`: the local merge queue (SPEC §18)."""

from __future__ import annotations

import sys

from .output import print_json, say_left_behind, stop_on_signals

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..api import Worktrees
    from ..landing.land import LandReport, LandResult


def land_args(p: argparse.ArgumentParser) -> None:
    from .landing import TARGET_DEFAULT

    p.add_argument("names", nargs="*", metavar="NAME",
                   help="the worktrees to land, in this order (default: the one containing the "
                        "current directory)")
    p.add_argument("--ready", action="store_true",
                   help="every worktree with commits not in the target, nothing uncommitted and "
                        "no other live holder")
    p.add_argument("--into", metavar="BRANCH", help=f"target branch (default: {TARGET_DEFAULT})")
    p.add_argument("--gate", metavar="CMD",
                   help="the check each worktree must pass, run with sh -c in it once rebased "
                        "(default: gate of the approved [land] table of .vibe/worktree.toml)")
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--squash", dest="mode", action="store_const", const="squash",
                       help="one new commit on the target per worktree (the default)")
    modes.add_argument("--rebase", dest="mode", action="store_const", const="rebase",
                       help="the worktree's own commits, replayed onto the target")
    modes.add_argument("--ff-only", dest="mode", action="store_const", const="ff-only",
                       help="the target fast-forwarded to the worktree's rebased HEAD")
    p.set_defaults(mode="squash")
    p.add_argument("--keep", action="store_true",
                   help="keep each worktree, moved onto the target's new tip")
    p.add_argument("--no-wait", action="store_true",
                   help="answer busy at once when another land has the turn")
    p.add_argument("--dry-run", action="store_true",
                   help="print the order and each worktree's collision forecast; change nothing")


def cmd_land(wt: Worktrees, ns: argparse.Namespace) -> int:
    stop_on_signals()  # Ctrl-C or SIGTERM: the gate is stopped, the queue left in order
    out = sys.stderr if ns.json else sys.stdout  # --json: stdout is the document's alone
    into = wt.merge_target(ns.into)

    here = _where_we_stand()

    def done(result: LandResult) -> None:
        print(describe(result, into), file=out, flush=True)

    def say(message: str) -> None:
        print(f"vwt: {message}", file=sys.stderr, flush=True)

    report = wt.land(ns.names, ready=ns.ready, into=ns.into, gate=ns.gate, mode=ns.mode,
                     keep=ns.keep, wait=not ns.no_wait, dry_run=ns.dry_run, say=say,
                     done=done)
    if ns.json:
        print_json(report.to_json())
    elif ns.dry_run:
        print("\n".join(plan_lines(report)))
    else:
        print(summary(report))
    for result in report.results:
        if result.removed and here and _inside(here, wt.claim(result.name).checkout):
            say_left_behind(wt, result.name)
    return report.exit_code


def _where_we_stand() -> str | None:
    """The current directory, read before a removal moves this process out of it."""
    import os

    try:
        return os.path.realpath(os.getcwd())
    except OSError:
        return None


def _inside(here: str, checkout: str) -> bool:
    import os

    checkout = os.path.realpath(checkout)
    return here == checkout or here.startswith(checkout + os.sep)


def describe(result: LandResult, into: str) -> str:
    """One line for a person, as the worktree finishes."""
    head = f"{result.outcome:<15} {result.name}"
    if result.outcome == "merged":
        what = [f"attempt {result.attempts}"] if result.attempts > 1 else []
        if result.gate is not None:
            what.append(f"gate {result.gate.seconds:.1f} s")
        what.append("worktree removed" if result.removed else "worktree kept")
        why = f"; {result.message}" if result.message else ""  # kept: processes run in it
        return f"{head}: into {into} at {(result.commit or '')[:12]} ({', '.join(what)}){why}"
    if result.outcome == "up_to_date":
        gone = " (worktree removed)" if result.removed else ""
        return f"{head}: already in {into}{gone}"
    return f"{head}: {result.message}"


def summary(report: LandReport) -> str:
    if not report.results:
        return f"nothing to land on {report.into}"
    landed = [r for r in report.results if r.landed]
    others = [f"{r.name} ({r.outcome})" for r in report.results if not r.landed]
    line = f"landed {len(landed)} of {len(report.results)} on {report.into}"
    return line + (f"; not landed: {', '.join(others)}" if others else "")


def plan_lines(report: LandReport) -> list[str]:
    """--dry-run: the order, each with what the forecast says about it."""
    if not report.plan:
        return [f"nothing to land on {report.into}"]
    lines = []
    for number, planned in enumerate(report.plan, 1):
        notes = []
        if planned.error:
            notes.append(planned.error)
        if planned.target_conflicts:
            notes.append(f"conflicts with {report.into} in {', '.join(planned.target_conflicts)}")
        for pair in planned.pairs:
            if pair.conflicts:
                notes.append(f"conflicts with {pair.other} in {', '.join(pair.conflicts)}")
            else:
                notes.append(f"also changes {', '.join(pair.overlap)}, as {pair.other} does "
                             "(merges cleanly)")
        lines.append(f"{number}. {planned.name}" + (f": {'; '.join(notes)}" if notes else ""))
    return lines
