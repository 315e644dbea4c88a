"""The commands on worktrees themselves: new, list, path, cd, status, run, shell, rm,
snapshot, restore, prune.
"""

from __future__ import annotations

import os
import sys

from ..core.errors import EXIT_ERROR, EXIT_HELD, EXIT_NEEDS_CONFIRMATION, EXIT_OK
from .output import (
    all_outside_a_repo,
    ask_yes_no,
    hook_asker,
    on_terminal,
    print_json,
    refuse_json_with_cd,
    say_left_behind,
    standing_in,
    stderr_on_terminal,
    stop_on_signals,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from ..api import Worktrees


def new_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="the worktree's name, also its branch (default: from the prompt)")
    p.add_argument("-p", "--prompt", help="task prompt to name the worktree from")
    p.add_argument("-b", "--branch",
                   help="branch to create or check out (default: NAME; vibe/SLUG for a worktree "
                        "named from --prompt)")
    p.add_argument("--from", dest="from_ref", metavar="REF",
                   help="start point of a new branch (default: the remote's default branch, "
                        "such as origin/main, fetched first; HEAD without a remote; a warning "
                        "says when the local branch of that name has commits the remote lacks)")
    p.add_argument("--no-fetch", action="store_true", help="do not fetch the remote first")
    p.add_argument("--pr", type=int, metavar="N",
                   help="start from pull request N of the remote, in branch pr-N")
    p.add_argument("--sparse", action="append", metavar="DIR",
                   help="check out only DIR (repeat for more; plus the top-level files)")
    p.add_argument("--carry", action="store_true",
                   help="bring this checkout's uncommitted work along (new branch from HEAD)")
    p.add_argument("--move", action="store_true",
                   help="like --carry, then take that work out of this checkout (saved first "
                        "to refs/vibe/carried/NAME)")
    no_hooks_flag(p)
    cd_flag(p)


def no_hooks_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-hooks", action="store_true", help="run no lifecycle hook")


def cd_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cd", action="store_true",
                   help="change the shell's directory to it (needs vwt shell-init)")


def restore_args(p: argparse.ArgumentParser) -> None:
    name_arg(p)
    no_hooks_flag(p)
    cd_flag(p)


def list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="all repositories")
    p.add_argument("--no-status", action="store_true", help="skip git status (faster)")
    p.add_argument("--size", action="store_true",
                   help="also the disk each checkout's own files take (as du -s counts them)")


def name_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the worktree's name")


def run_args(p: argparse.ArgumentParser) -> None:
    import argparse

    name_arg(p)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD [ARG...]",
                   help="the command to run inside the worktree")


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


def cmd_new(wt: Worktrees, ns: argparse.Namespace) -> int:
    refuse_json_with_cd(ns)
    stop_on_signals()
    created = wt.create(ns.name, prompt=ns.prompt, branch=ns.branch, from_ref=ns.from_ref,
                        fetch=not ns.no_fetch, hooks=not ns.no_hooks, ask=hook_asker(),
                        sparse=getattr(ns, "sparse", None), pr=getattr(ns, "pr", None),
                        carry=ns.carry, move=ns.move)
    if ns.json:
        print_json(created.to_json())
    else:
        print(created.path)
    return EXIT_OK


def cmd_list(wt: Worktrees, ns: argparse.Namespace) -> int:
    all_repos = all_outside_a_repo(wt, ns.all)
    if ns.json or ns.no_status or not stderr_on_terminal():
        rows = wt.list(all_repos=all_repos, with_status=not ns.no_status,
                       with_size=ns.size)
    else:
        from .render import Progress

        with Progress() as progress:
            progress.update("vwt: inspecting worktrees…")
            rows = wt.list(all_repos=all_repos, with_status=True, with_size=ns.size)
    if ns.json:
        print_json([r.to_json() for r in rows])
        return EXIT_OK
    if not rows:
        print("no managed worktrees", file=sys.stderr)
        return EXIT_OK
    from .render import list_table, wants_colour

    print(list_table(rows, colour=wants_colour(sys.stdout)))
    if ns.size:
        from .render import size_total

        pools = wt.pool_status(all_repos=all_repos)
        print(size_total(rows, sum(p.bytes for p in pools)))
    for r in rows:
        if r.problem:
            print(f"vwt: warning: {r.name}: {r.problem}", file=sys.stderr)
    return EXIT_OK


def cmd_path(wt: Worktrees, ns: argparse.Namespace) -> int:
    print(wt.path(ns.name))
    return EXIT_OK


def cmd_cd(wt: Worktrees, ns: argparse.Namespace) -> int:
    print(wt.path(ns.name))
    if sys.stdout.isatty():
        print('vwt: to change directory, add eval "$(vwt shell-init bash)" (or zsh, fish) to '
              "your shell's startup file", file=sys.stderr)
    return EXIT_OK


def cmd_status(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .render import landed_words

    st = wt.status(ns.name)
    if ns.json:
        print_json(st.to_json())
        return EXIT_OK
    print(f"{st.name}  {st.path}")
    print(f"  branch     {st.branch}{'' if st.branch_created else ' (existed before)'}")
    print(f"  changes    {st.changes} ({st.untracked} untracked)")
    own = ""
    if st.target is not None and st.not_in_target is not None and st.not_in_target != st.ahead:
        own = f" ({st.not_in_target} not in {st.target})"
    print(f"  ahead      {st.ahead} commit(s) since {str(st.base_commit)[:12]}{own}")
    print(f"  clean      {_clean_words(st)}")
    if st.rebasing:
        print(f"  rebase     stopped at a conflict: vwt sync {st.name} --continue (or --abort)")
    if st.target is not None:
        print(f"  target     {st.target} ({st.behind} commit(s) behind)")
        print(f"  landed     {landed_words(st.integrated, st.rebasing)}")
        print(f"  safe to rm {'yes' if st.safe_to_remove else 'no'}")
    print(f"  holders    {st.holders}")
    if st.hooks_running:
        print(f"  running    hook {', '.join(st.hooks_running)} (background)")
    if st.setup == "incomplete":
        print(f"  setup      incomplete: a post_create hook did not succeed; vwt new {st.name} "
              "runs again the ones that did not")
    elif st.setup == "running" and not st.hooks_running:
        print("  setup      running (a vwt new is running its post_create hooks)")
    return EXIT_OK


def _clean_words(st: Any) -> str:
    """yes, or no with what makes it not clean (SPEC §4: changes and commits since base)."""
    if st.clean:
        return "yes"
    why = []
    if st.changes:
        why.append(f"{st.changes} change(s)")
    if st.ahead:
        why.append(f"{st.ahead} commit(s) since its base")
    return f"no ({', '.join(why)})"


def cmd_run(wt: Worktrees, ns: argparse.Namespace) -> int:
    command = list(ns.command)
    if command[:1] == ["--"]:
        command = command[1:]
    return wt.run(ns.name, command)


def cmd_shell(wt: Worktrees, ns: argparse.Namespace) -> int:
    return wt.run(ns.name, [os.environ.get("SHELL") or "/bin/sh"])


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


def cmd_restore(wt: Worktrees, ns: argparse.Namespace) -> int:
    refuse_json_with_cd(ns)
    stop_on_signals()
    created = wt.restore(ns.name, hooks=not ns.no_hooks, ask=hook_asker())
    if ns.json:
        print_json(created.to_json())
    else:
        print(created.path)
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
