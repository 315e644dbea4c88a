"""The commands that make and use worktrees: new, restore, list, path, cd, status, run,
shell (taking them away, `cleanup.py`: rm, snapshot, prune).
"""

from __future__ import annotations

import os
import sys

from ..core.errors import EXIT_OK
from .output import (
    all_outside_a_repo,
    hook_asker,
    print_json,
    refuse_json_with_cd,
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


def cmd_restore(wt: Worktrees, ns: argparse.Namespace) -> int:
    refuse_json_with_cd(ns)
    stop_on_signals()
    created = wt.restore(ns.name, hooks=not ns.no_hooks, ask=hook_asker())
    if ns.json:
        print_json(created.to_json())
    else:
        print(created.path)
    return EXIT_OK
