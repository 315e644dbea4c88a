"""The other front ends, served or installed from the command line: mcp, board, shell-init,
skill, and the completion the shell integration asks for.
"""

from __future__ import annotations

import gc
import sys

from ..core.errors import EXIT_OK, VwtError
from .output import print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..api import Worktrees


def shell_init_args(p: argparse.ArgumentParser) -> None:
    from ..integrations.shell import SHELLS

    p.add_argument("shell", choices=SHELLS, help="the shell to print the function for")


def skill_args(p: argparse.ArgumentParser) -> None:
    from ..integrations.skill import AGENTS

    p.add_argument("action", choices=("install", "show"),
                   help="install: write SKILL.md for an agent; show: print it")
    p.add_argument("--agent", choices=AGENTS, default="claude",
                   help="whose skills folder to install into (default claude)")
    p.add_argument("--target", metavar="DIR", help="install to DIR/SKILL.md instead")


def cmd_shell_init(_wt: Worktrees, ns: argparse.Namespace) -> int:
    from ..integrations.shell import init_script

    sys.stdout.write(init_script(ns.shell))
    return EXIT_OK


def cmd_skill(wt: Worktrees, ns: argparse.Namespace) -> int:
    from ..integrations import skill

    if ns.action == "show":
        if ns.json:
            print_json({"name": skill.SKILL_NAME, "text": skill.skill_text()})
        else:
            sys.stdout.write(skill.skill_text())
        return EXIT_OK
    installed = skill.install(ns.target or skill.default_target(ns.agent, wt.root.home))
    if ns.json:
        print_json(installed.to_json())
    else:
        print(installed.path)
        if not installed.changed:
            print("vwt: already up to date", file=sys.stderr)
    return EXIT_OK


def complete(argv: list[str]) -> int:
    """`vwt __complete -- WORD...`: one candidate a line for the last WORD."""
    from ..integrations.shell import candidates, wants_names

    words = argv[1:] if argv[:1] == ["--"] else argv
    names: list[str] = []
    if wants_names(words or [""]):
        names = _completion_names(words)
    from . import SUBCOMMANDS

    found = candidates(words, list(SUBCOMMANDS), names)
    sys.stdout.write("".join(f"{c}\n" for c in found))
    return EXIT_OK


def _completion_names(words: list[str]) -> list[str]:
    """Worktree names of the repository the completed command line would act on."""
    from itertools import pairwise

    home = cwd = None
    for option, value in pairwise(words):
        if option == "--home":
            home = value
        elif option == "-C":
            cwd = value
    from ..api import Worktrees

    try:
        return [row.name for row in Worktrees(home=home, cwd=cwd).list(with_status=False)]
    except (VwtError, OSError):
        return []


def cmd_mcp(wt: Worktrees, ns: argparse.Namespace) -> int:
    try:
        from ..integrations.mcp_server import serve
    except ImportError as exc:
        raise VwtError(f"the MCP server needs the mcp extra: pip install 'vibe-worktree[mcp]' "
                       f"({exc})") from None
    gc.enable()  # a long-lived server
    return int(serve(wt))


def board_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=0, metavar="N",
                   help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-open", action="store_true", help="do not open a browser")


def cmd_board(wt: Worktrees, ns: argparse.Namespace) -> int:
    try:
        from ..board.server import serve
    except ImportError as exc:
        raise VwtError(f"the board needs the board extra: pip install 'vibe-worktree[board]' "
                       f"({exc})") from None
    gc.enable()  # a long-lived server
    return serve(wt, ns.port, open_browser=not ns.no_open)
