"""What runs in a worktree: port, env, ps.

`vwt env` is light (dispatched without a `Worktrees`, see `cli._LIGHT`): shells and scripts
call it often, so it reads the few files it needs through `runtime.env` directly and
imports nothing else (SPEC §7, B15).
"""

from __future__ import annotations

import os
import sys

from ..core.errors import EXIT_ERROR, EXIT_OK, VwtError
from .output import all_outside_a_repo, print_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ..api import Worktrees
    from ..runtime.ps import PsReport, WorktreeProcesses

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


# -- vwt ps ---------------------------------------------------------------------------------
def ps_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="only this worktree (default: every worktree of this repository)")
    p.add_argument("--all", action="store_true", help="every repository's worktrees")
    p.add_argument("--check", action="store_true",
                   help="exit 1 when a port of a lease is served from another folder")


def cmd_ps(wt: Worktrees, ns: argparse.Namespace) -> int:
    all_repos = ns.all if ns.name is not None else all_outside_a_repo(wt, ns.all)
    found = wt.ps(ns.name, all_repos=all_repos)
    if ns.json:
        print_json(found.to_json())
    elif not found.worktrees:
        print("no managed worktrees", file=sys.stderr)
    else:
        for line in ps_lines(found):
            print(line)
    for item in found.worktrees:
        for pid in item.unreadable:
            print(f"vwt: warning: pid {pid.pid} ({pid.command}), another user's process, may "
                  f"be running inside {item.name}; vwt may not see where it runs",
                  file=sys.stderr)
    mismatches = found.mismatches
    if ns.check and mismatches:
        print(f"vwt: error: {mismatches[0].message}"
              + (f" (and {len(mismatches) - 1} more)" if len(mismatches) > 1 else ""),
              file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def ps_lines(found: PsReport) -> list[str]:
    """Each worktree, its lease and the processes inside it; then each mismatch."""
    several = len({w.bucket for w in found.worktrees}) > 1
    lines = []
    for item in found.worktrees:
        lines += _worktree_lines(item, f"{item.bucket}/{item.name}" if several else item.name)
    return lines + [m.message for m in found.mismatches]


def _worktree_lines(item: WorktreeProcesses, label: str) -> list[str]:
    ports = f"ports {' '.join(map(str, item.ports))}" if item.ports else "no ports"
    if not item.processes:
        return [f"{label} ({ports}): nothing runs inside"]
    count = len(item.processes)
    lines = [f"{label} ({ports}): {count} process{'' if count == 1 else 'es'}"]
    width = max(len(str(p.pid)) for p in item.processes)
    for proc in item.processes:
        listening = " ".join(map(str, proc.listening))
        lines.append(f"  {proc.pid:>{width}}  {listening or '-':<11} {proc.command}".rstrip())
    return lines
