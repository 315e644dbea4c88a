"""The `merge` and `sync` commands' arguments and rendering (registered by `cli.py`)."""

from __future__ import annotations

import sys
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..api import Worktrees

PrintJson = Callable[[object], None]

def merge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME")
    p.add_argument("--into", metavar="BRANCH", help="target branch (default: main, see docs)")
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
    p.add_argument("name", metavar="NAME")
    p.add_argument("--onto", metavar="BRANCH", help="branch to rebase onto (default: main)")
    p.add_argument("--no-fetch", action="store_true", help="do not fetch the remote first")


def _say(message: str, code: int) -> None:
    if message:
        prefix = "vwt: " if code == 0 else ("vwt: refused: " if code in (3, 4) else "vwt: ")
        print(f"{prefix}{message}", file=sys.stderr)


def run_merge(wt: Worktrees, ns: argparse.Namespace, print_json: PrintJson) -> int:
    from ..cli import _hook_asker
    result = wt.merge(ns.name, into=ns.into, mode=ns.mode, message=ns.message,
                      commit=ns.commit, keep=ns.keep, fetch=not ns.no_fetch,
                      hooks=not ns.no_hooks, ask=_hook_asker())
    _say(result.message, result.exit_code)
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
    return result.exit_code


def run_sync(wt: Worktrees, ns: argparse.Namespace, print_json: PrintJson) -> int:
    result = wt.sync(ns.name, onto=ns.onto, fetch=not ns.no_fetch)
    _say(result.message, result.exit_code)
    if ns.json:
        print_json(result.to_json())
    elif result.outcome == "synced":
        print(f"synced {result.name} onto {result.onto}: {result.head}")
    elif result.outcome == "up_to_date":
        print(f"{result.name} already contains {result.onto}")
    elif result.conflicts:
        for path in result.conflicts:
            print(path)
    return result.exit_code
