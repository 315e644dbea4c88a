"""Lifecycle hooks and the warm pool: hooks, pool.
"""

from __future__ import annotations

import sys

from ..core.errors import EXIT_OK, EXIT_USAGE, VwtError
from .output import all_outside_a_repo, hook_asker, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from ..api import Worktrees


def hooks_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("approve", "revoke"),
                   help="approve or revoke project hooks (default: list the hooks)")
    p.add_argument("names", nargs="*", metavar="NAME", help="hooks to approve or revoke")
    p.add_argument("--all", action="store_true", help="every project hook")


def cmd_hooks(wt: Worktrees, ns: argparse.Namespace) -> int:
    if ns.action is None:
        if ns.names or ns.all:
            raise VwtError("say what to do: vwt hooks approve|revoke NAME... (or --all)",
                           EXIT_USAGE)
        rows = wt.hooks()
    else:
        rows = wt.approve_hooks(ns.names, all_hooks=ns.all, approve=ns.action == "approve")
    if ns.json:
        print_json({"hooks": [r.to_json() for r in rows]})
        return EXIT_OK
    if not rows:
        print("no hooks (add them to .vibe/worktree.toml or to the home's worktree.toml)",
              file=sys.stderr)
    width = max([8, *(len(r.hook.source) for r in rows)])  # `conductor.json` and the like
    for r in rows:
        h = r.hook
        state = "approved" if r.approved else "NOT APPROVED"
        mode = ", background" if h.background else ""
        line = f"{h.type:<12} {h.source:<{width}} {h.name:<20} {state}{mode}  "
        # a script of several lines is shown whole (it is what an approval approves)
        print(line + h.command.strip("\n").replace("\n", "\n" + " " * len(line)))
    return EXIT_OK


def pool_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("status", "fill", "drain"), default="status",
                   help="status (default): what the pool holds; fill: make ready entries now; "
                        "drain: empty it")
    p.add_argument("--all", action="store_true",
                   help="every repository's pool (status, drain); status outside a repository "
                        "shows them all too")
    p.add_argument("--size", type=int, metavar="N",
                   help="fill: this many ready entries (default: [pool] size)")


def cmd_pool(wt: Worktrees, ns: argparse.Namespace) -> int:
    if ns.size is not None and (ns.action != "fill" or ns.size < 0):
        raise VwtError("--size N (N >= 0) goes with vwt pool fill", EXIT_USAGE)
    if ns.all and ns.action == "fill":
        raise VwtError("vwt pool fill fills the current repository's pool; drop --all",
                       EXIT_USAGE)
    pools: Any
    if ns.action == "fill":
        def say(message: str) -> None:
            print(message, file=sys.stderr)

        pools = [wt.pool_fill(ns.size, ask=hook_asker(), progress=say)]
    elif ns.action == "drain":
        pools = wt.pool_drain(all_repos=ns.all)
    else:  # as `list`: outside a repository, every repository's
        pools = wt.pool_status(all_repos=all_outside_a_repo(wt, ns.all))
    if ns.json:
        print_json({"pools": [p.to_json() for p in pools]})
        return EXIT_OK
    if not pools:
        print("vwt: no pools", file=sys.stderr)
    from .render import pool_lines

    for p in pools:
        print(pool_lines(p))
    return EXIT_OK
