"""Agents and other tools' worktrees: hook, install, uninstall, statusline, activity,
foreign, adopt.
"""

from __future__ import annotations

import sys

from ..core.errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE, VwtError
from .output import all_outside_a_repo, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..api import Worktrees


def hook_args(p: argparse.ArgumentParser) -> None:
    from ..agents import AGENTS

    p.add_argument("agent", choices=AGENTS, help="whose hook input is on stdin")


def cmd_hook(_wt: None, ns: argparse.Namespace) -> int:
    from ..agents import AGENTS

    if ns.agent not in AGENTS:
        raise VwtError(f"unknown agent {ns.agent!r}; use one of {', '.join(AGENTS)}", EXIT_USAGE)
    if ns.agent == "vibe":
        from ..agents.vibe import handle as handle_vibe

        return handle_vibe(ns.home)
    from ..agents.claude_code import handle

    return handle(ns.home)


def activity_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("set", "clear"),
                   help="set: mark the worktree containing the current folder; clear: forget it")
    p.add_argument("state", nargs="?", metavar="STATE",
                   help="working, waiting (for the user) or idle (its turn is over)")
    p.add_argument("--agent", help='who reports it (default "unknown")')
    p.add_argument("--session", help="the agent's session id")


def cmd_activity(_wt: None, ns: argparse.Namespace) -> int:
    """For any agent's hook line: never exit 2 (Claude Code and Gemini CLI read 2 as
    "block"), so what argparse would call usage is exit 1 here."""
    from ..agents.any_agent import clear_activity, set_activity

    if ns.action == "set":
        return set_activity(ns.home, ns.state, ns.agent, ns.session)
    if ns.action == "clear" and ns.state is None and ns.agent is None and ns.session is None:
        return clear_activity(ns.home)
    raise VwtError("use vwt activity set working|waiting|idle [--agent NAME] [--session ID] "
                   "or vwt activity clear", EXIT_ERROR)


def cmd_statusline(_wt: None, ns: argparse.Namespace) -> int:
    from ..agents.statusline import print_line

    return print_line(ns.home)


def install_args(p: argparse.ArgumentParser) -> None:
    from ..agents import AGENTS
    from ..agents.claude_settings import SCOPES

    p.add_argument("agent", choices=AGENTS, help="the agent whose settings to change")
    p.add_argument("--scope", choices=SCOPES, default="user",
                   help="claude-code: user: ~/.claude/settings.json (default); project: "
                        ".claude/settings.json; local: .claude/settings.local.json. vibe: user: "
                        "<home>/hooks.toml (default); project: .vibe/hooks.toml")
    p.add_argument("--dry-run", action="store_true", help="print the resulting file, write nothing")


def cmd_install(wt: Worktrees, ns: argparse.Namespace) -> int:
    from ..agents.install import change_settings

    return change_settings(wt, ns.agent, ns.scope, install=True, dry_run=ns.dry_run,
                           as_json=ns.json)


def cmd_uninstall(wt: Worktrees, ns: argparse.Namespace) -> int:
    from ..agents.install import change_settings

    return change_settings(wt, ns.agent, ns.scope, install=False, dry_run=ns.dry_run,
                           as_json=ns.json)


def foreign_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="every repository that has a bucket")


def cmd_foreign(wt: Worktrees, ns: argparse.Namespace) -> int:
    rows = wt.foreign(all_repos=all_outside_a_repo(wt, ns.all))
    if ns.json:
        print_json({"worktrees": [r.to_json() for r in rows]})
    elif rows:
        from .render import foreign_table

        print(foreign_table(rows))
    else:
        print("no worktrees made by other tools", file=sys.stderr)
    for r in rows:
        if r.problem:
            print(f"vwt: warning: {r.path}: {r.problem}", file=sys.stderr)
    return EXIT_OK


def adopt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="a worktree's top folder")
    p.add_argument("--all", action="store_true", help="every worktree vwt foreign lists here")


def cmd_adopt(wt: Worktrees, ns: argparse.Namespace) -> int:
    result = wt.adopt(ns.paths, all_foreign=ns.all)
    for refused in result.refused:
        print(f"vwt: refused: {refused.message}", file=sys.stderr)
    if ns.json:
        print_json(result.to_json())
    for adopted in result.adopted if not ns.json else ():
        print(f"adopted {adopted.name}: {adopted.source} -> {adopted.path}")
    if not (result.adopted or result.refused):
        print("vwt: nothing to adopt", file=sys.stderr)
    return result.exit_code
