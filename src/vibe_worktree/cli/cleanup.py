"""The commands that take worktrees away, or save them first: rm, snapshot, prune."""

from __future__ import annotations

import sys

from ..core.errors import EXIT_ERROR, EXIT_HELD, EXIT_NEEDS_CONFIRMATION, EXIT_OK
from .output import (
    ask_yes_no,
    hook_asker,
    on_terminal,
    print_json,
    say_left_behind,
    standing_in,
    stderr_on_terminal,
)
from .worktrees import name_arg, no_hooks_flag

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from ..api import Worktrees


def rm_args(p: argparse.ArgumentParser) -> None:
    name_arg(p)
    p.add_argument("-y", "--yes", action="store_true",
                   help="remove dirty work without asking (a snapshot is kept)")
    p.add_argument("--delete-branch", action="store_true",
                   help="also delete a branch that existed before")
    p.add_argument("--stop", action="store_true",
                   help="stop the processes running inside it first (SIGTERM, then SIGKILL "
                        "after 5 s)")
    no_hooks_flag(p)


def prune_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep", type=int, metavar="N", help="worktrees to keep (default 15)")
    p.add_argument("--dry-run", action="store_true", help="report the plan, change nothing")
    p.add_argument("--merged", action="store_true",
                   help="also remove clean worktrees whose commits are in the target branch")
    p.add_argument("--max-size", metavar="SIZE",
                   help="then remove pool entries and the oldest unheld worktrees until all take "
                        "at most SIZE (20G, 500M; binary units; default: max_size of config.toml)")


def cmd_rm(wt: Worktrees, ns: argparse.Namespace) -> int:
    from ..lifecycle.remove import (
        FORGOTTEN,
        HOOK_FAILED,
        KEPT_DIRTY,
        KEPT_IN_USE,
        NOT_FOUND,
        REMOVED,
    )

    inside = standing_in(wt, ns.name)
    terminal = on_terminal()
    confirm_dirty: Any = True if ns.yes else (ask_yes_no if terminal else False)
    delete_branch = True if ns.delete_branch else None
    confirm_branch: Any = ask_yes_no if terminal else (lambda _q: False)
    result = wt.remove(ns.name, confirm_dirty=confirm_dirty, delete_branch=delete_branch,
                       confirm_branch=confirm_branch, hooks=not ns.no_hooks,
                       ask_hook=hook_asker(), stop=ns.stop)
    code = {
        REMOVED: EXIT_OK, FORGOTTEN: EXIT_OK, KEPT_DIRTY: EXIT_NEEDS_CONFIRMATION,
        KEPT_IN_USE: EXIT_HELD, NOT_FOUND: EXIT_ERROR, HOOK_FAILED: EXIT_ERROR,
    }[result.outcome]
    if result.stopped:
        print(f"vwt: stopped pid {', '.join(map(str, result.stopped))}, which ran inside "
              f"{result.name}", file=sys.stderr)
    if result.message:
        prefix = "vwt: " if code == EXIT_OK else "vwt: refused: "
        if result.outcome in (NOT_FOUND, HOOK_FAILED):
            prefix = "vwt: error: "
        print(f"{prefix}{result.message}", file=sys.stderr)
    if ns.json:
        print_json(result.to_json())
    elif result.outcome in (REMOVED, FORGOTTEN):
        extra = f" (snapshot {result.snapshot_ref})" if result.snapshot_ref else ""
        print(f"{result.outcome} {result.name}{extra}")
    if result.outcome == REMOVED and inside:
        say_left_behind(wt, ns.name)
    return code


def cmd_snapshot(wt: Worktrees, ns: argparse.Namespace) -> int:
    snap = wt.snapshot(ns.name)
    if ns.json:
        print_json(snap.to_json())
    else:
        print(f"{snap.ref} {snap.commit}")
    return EXIT_OK


def cmd_prune(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .render import Progress

    with Progress(enabled=stderr_on_terminal() and not ns.json) as progress:
        progress.update("vwt: pruning…" if not ns.dry_run else "vwt: planning the prune…")
        result = wt.prune(keep=ns.keep, dry_run=ns.dry_run, merged=ns.merged,
                          max_size=ns.max_size)
    if ns.json:
        print_json(result.to_json())
        return EXIT_OK
    would = "would " if ns.dry_run else ""
    verb = "would remove" if ns.dry_run else "removed"
    for item in result.removed:
        print(f"{verb} {item['bucket']}/{item['name']} ({item['reason']}{_work_kept(item)})")
    for item in result.kept:
        print(f"{'would keep' if ns.dry_run else 'kept'} {item['bucket']}/{item['name']}: "
              f"{item['reason']}")
    for item in result.reservations_discarded:
        print(f"{would}{'discard' if ns.dry_run else 'discarded'} reservation "
              f"{item['bucket']}/{item['name']}")
    if result.stale_holders_removed:
        print(f"{'would remove' if ns.dry_run else 'removed'} {result.stale_holders_removed} "
              "stale holder file(s)")
    if result.trash_deleted:
        print(f"{'would delete' if ns.dry_run else 'deleted'} {result.trash_deleted} "
              "leftover(s) of interrupted removals in .trash")
    for item in result.pool_removed:
        print(f"{verb} pool entry {item['bucket']}/{item['id']}")
    if result.freed_bytes:
        from ..core.disk import human

        print(f"{'would free' if ns.dry_run else 'freed'} {human(result.freed_bytes)}")
    if not (result.removed or result.kept or result.reservations_discarded
            or result.stale_holders_removed or result.trash_deleted or result.pool_removed):
        print("nothing to prune", file=sys.stderr)
    return EXIT_OK


def _work_kept(item: dict[str, Any]) -> str:
    """`; 2 uncommitted change(s), 1 commit(s) of its own, kept in its snapshot` or ``."""
    parts = []
    if item.get("changes"):
        parts.append(f"{item['changes']} uncommitted change(s)")
    if item.get("ahead"):
        parts.append(f"{item['ahead']} commit(s) of its own")
    return f"; {', '.join(parts)}, kept in its snapshot" if parts else ""
