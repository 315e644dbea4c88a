"""What runs in a worktree: port, env.

`vwt env` is light (dispatched without a `Worktrees`, see `cli._LIGHT`): shells and scripts
call it often, so it reads the few files it needs through `runtime.env` directly and
imports nothing else (SPEC §7, B15).
"""

from __future__ import annotations

import os
import sys

from ..core.errors import EXIT_OK, VwtError
from .output import print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..api import Worktrees

SHELLS = ("sh", "fish")  # the `--shell` choices (lifecycle.environment.for_shell)


def cmd_port(wt: Worktrees, ns: argparse.Namespace) -> int:
    found = wt.port(ns.name)
    if ns.json:
        print_json(found.to_json())
    else:
        print(found.port)
    return EXIT_OK


def env_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="the worktree (default: the one containing the current directory)")
    p.add_argument("--shell", choices=SHELLS,
                   help='print lines that set them: eval "$(vwt env --shell sh)" (sh, bash, '
                        "zsh), or vwt env --shell fish | source")


def _warn(message: str) -> None:
    print(f"vwt: warning: {message}", file=sys.stderr)


def cmd_env(_wt: None, ns: argparse.Namespace) -> int:
    from ..core.layout import Root, resolve_home
    from ..runtime.env import env_document, named

    if ns.json and ns.shell:
        raise VwtError("--json and --shell print different things; give one of them", 2)
    root = Root.at(resolve_home(ns.home))
    found = env_document(named(root, os.getcwd(), ns.name), _warn)
    if ns.json:
        print_json(found.to_json())
        return EXIT_OK
    from ..lifecycle.environment import as_lines, for_shell

    text = for_shell(found.variables, ns.shell) if ns.shell else as_lines(found.variables)
    sys.stdout.flush()
    # bytes as they are: a path that is not UTF-8 comes back as it was
    sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))
    return EXIT_OK
