"""Landing a worktree's work: merge, sync, conflicts.
"""

from __future__ import annotations

import sys

from ..core.errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE, VwtError
from .output import (
    hook_asker,
    print_json,
    say_left_behind,
    say_outcome,
    standing_in,
    stderr_on_terminal,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..api import Worktrees


def conflicts_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="only NAME's conflicts with its target and the pairs that include it")
    p.add_argument("--all", action="store_true",
                   help="all repositories (a pair never spans two repositories)")
    p.add_argument("--path", metavar="PATH",
                   help="only who changes PATH (a file or folder, relative to the top level)")
    p.add_argument("--check", action="store_true", help="exit 1 when anything would conflict")


def cmd_conflicts(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .render import Progress

    with Progress(enabled=stderr_on_terminal() and not ns.json) as progress:
        progress.update("vwt: reading worktrees…")
        result = wt.conflicts(ns.name, all_repos=ns.all, path=ns.path)
    if ns.json:
        print_json(result.to_json())
    else:
        from ..landing.collisions import describe

        print("\n".join(describe(result, qualify=ns.all)))
    for row in result.worktrees:
        if row.error:
            print(f"vwt: warning: {row.name}: {row.error}", file=sys.stderr)
    return EXIT_ERROR if ns.check and result.conflicted else EXIT_OK


TARGET_DEFAULT = ("the local branch named after the remote's default (origin/HEAD), else main, "
                  "else master")


def merge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the worktree whose commits to land")
    p.add_argument("--into", metavar="BRANCH",
                   help=f"target branch (default: {TARGET_DEFAULT})")
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--squash", dest="mode", action="store_const", const="squash",
                       help="one new commit on the target (the default)")
    modes.add_argument("--rebase", dest="mode", action="store_const", const="rebase",
                       help="replay the worktree's own commits onto the target")
    modes.add_argument("--ff-only", dest="mode", action="store_const", const="ff-only",
                       help="only fast-forward the target to the worktree's HEAD")
    p.set_defaults(mode="squash")
    p.add_argument("-m", "--message", help="message of the squash (or --commit) commit")
    p.add_argument("--commit", action="store_true",
                   help="commit uncommitted changes first (message: -m, or WIP: NAME)")
    p.add_argument("--keep", action="store_true",
                   help="keep the worktree, moved onto the target's new tip")
    p.add_argument("--no-fetch", action="store_true", help="do not fetch the remote first")
    p.add_argument("--no-hooks", action="store_true", help="run no lifecycle hooks")


def sync_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the worktree to rebase")
    p.add_argument("--onto", metavar="BRANCH",
                   help=f"branch to rebase onto (default: {TARGET_DEFAULT}; its remote-tracking "
                        "branch when the fetch finds it ahead)")
    p.add_argument("--no-fetch", action="store_true", help="do not fetch the remote first")
    resolving = p.add_mutually_exclusive_group()
    resolving.add_argument("--stop-on-conflict", action="store_true",
                           help="on a conflict, leave the rebase stopped in the worktree to "
                                "resolve (instead of changing nothing)")
    resolving.add_argument("--continue", dest="resume", action="store_const", const="continue",
                           help="go on with a stopped sync once its files are fixed and "
                                "staged (git add)")
    resolving.add_argument("--abort", dest="resume", action="store_const", const="abort",
                           help="undo a stopped sync: branch, files and record as before")


def cmd_merge(wt: Worktrees, ns: argparse.Namespace) -> int:
    inside = standing_in(wt, ns.name)
    result = wt.merge(ns.name, into=ns.into, mode=ns.mode, message=ns.message,
                      commit=ns.commit, keep=ns.keep, fetch=not ns.no_fetch,
                      hooks=not ns.no_hooks, ask=hook_asker())
    say_outcome(result.message, result.exit_code)
    if ns.json:
        print_json(result.to_json())
    elif result.outcome == "merged":
        where = "kept" if not result.removed else "removed"
        print(f"merged {result.name} into {result.into} at {result.commit} "
              f"(worktree {where})")
    elif result.outcome == "up_to_date":
        print(f"{result.name} is already in {result.into}"
              + (" (worktree removed)" if result.removed else ""))
    elif result.conflicts:
        for path in result.conflicts:
            print(path)
    if result.removed and inside:
        say_left_behind(wt, ns.name)
    return result.exit_code


def cmd_sync(wt: Worktrees, ns: argparse.Namespace) -> int:
    if ns.resume and (ns.onto or ns.no_fetch):
        raise VwtError(f"--{ns.resume} goes on with the stopped sync as it was started; "
                       "drop --onto and --no-fetch", EXIT_USAGE)
    if ns.resume == "continue":
        result = wt.sync_continue(ns.name)
    elif ns.resume == "abort":
        result = wt.sync_abort(ns.name)
    else:
        result = wt.sync(ns.name, onto=ns.onto, fetch=not ns.no_fetch,
                         stop_on_conflict=ns.stop_on_conflict)
    say_outcome(result.message, result.exit_code)
    if ns.json:
        print_json(result.to_json())
    elif result.outcome == "synced":
        print(f"synced {result.name} onto {result.onto}: {result.head}")
    elif result.outcome == "up_to_date":
        print(f"{result.name} already contains {result.onto}")
    elif result.outcome == "aborted":
        print(f"aborted the sync of {result.name}: back at {result.head}")
    elif result.conflicts:
        for path in result.conflicts:
            print(path)
    return result.exit_code
