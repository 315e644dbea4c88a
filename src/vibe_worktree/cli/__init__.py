"""`vwt`: a thin command line over the Python API; it only parses and renders.

This module is the door: `main`, the dispatch, the table of commands, and the hot
commands' parse without argparse (`parser` builds argparse's, with each command's examples,
when a command line is out of the ordinary). Each command group has a module of its own
(`worktrees`, `cleanup`, `landing`, `queue`, `hooks_pool`, `health`, `agents`, `runtime`,
`integrations`), named in `SUBCOMMANDS` and imported only when one of its commands runs;
`output` is the one place for what is printed and asked, `render` draws the terminal
tables.

argparse rather than click: click alone costs ~30 ms to import, the whole
start-up budget of the spec's benchmarks (B2, B5). Imports happen inside the
functions so that `vwt --version` loads nothing but this module.
"""

from __future__ import annotations

import gc
import os
import sys
from types import SimpleNamespace

from .. import __version__
from ..core.errors import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    DiskFull,
    Interrupted,
    VwtError,
    disk_is_full,
)

TYPE_CHECKING = False  # `typing` is slow to import; mypy treats this as True
if TYPE_CHECKING:
    import argparse
    from typing import Any


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):  # the start-up fast path
        sys.stdout.write(f"vwt {__version__}\n")
        return EXIT_OK
    if argv is None:  # the process is ours and short-lived: collecting cycles would cost
        gc.disable()  # more than it frees (3 ms of listing 1,000 records); mcp turns it on
    try:
        return _dispatch(args)
    except VwtError as exc:
        _fail(exc.message)
        return exc.exit_code
    except Interrupted as exc:
        _fail(exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        _fail("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
    except OSError as exc:
        if disk_is_full(exc):
            _fail(DiskFull(f"writing {exc.filename}" if exc.filename else None).message)
        else:
            _fail(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        return EXIT_ERROR


def _fail(message: str) -> None:
    from .output import error

    error(message)


def _resolve(spec: str) -> Any:
    """The function a `SUBCOMMANDS` spec names (`module:function` of this package); the
    module is imported now, so each command pays only for its own group."""
    module, _, name = spec.partition(":")
    return getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)


def _dispatch(argv: list[str]) -> int:
    command = _command_name(argv)
    if command == COMPLETE:  # hidden, for shell-init's completion; no argparse needed
        return int(_resolve("integrations:complete")(argv[argv.index(COMPLETE) + 1:]))
    ns: Any = _parse_hot(argv, command)
    if ns is None:
        parser = build_parser(only=command)
        ns = parser.parse_args(argv)
    if ns.directory:
        try:
            os.chdir(ns.directory)
        except OSError as exc:
            raise VwtError(f"cannot change to {ns.directory}: {exc.strerror}") from None
    elif command == "activity" or (command == "hook" and getattr(ns, "agent", "") == "vibe"):
        pass  # an agent's hook: a folder gone is outside any worktree, never a failure
    else:
        try:
            os.getcwd()
        except FileNotFoundError:
            raise VwtError("the current directory no longer exists (a worktree removed from "
                           "under this shell?); cd into your repository, or pass -C DIR"
                           ) from None
    if not getattr(ns, "handler", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handler = _resolve(ns.handler)
    if command in _LIGHT:  # a process per hook event or status line: no API to build
        return int(handler(None, ns))
    from ..api import Worktrees
    from .output import stderr_on_terminal

    progress = stderr_on_terminal() and not getattr(ns, "json", False)
    return int(handler(Worktrees(home=ns.home, progress=progress), ns))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, just that subcommand's (building all costs start-up time)."""
    from .parser import build

    return build(SUBCOMMANDS, _resolve, only)


def _command_name(argv: list[str]) -> str | None:
    """The subcommand argv names, found without parsing (global options come first)."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--home", "-C"):
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return arg
    return None


# The hot commands' options, for parsing them without argparse (its import and set-up
# cost B2 and B6 about 5 ms): flag -> attribute, and option taking a value -> attribute.
_HOT: dict[str, tuple[dict[str, str], dict[str, str], tuple[str, ...]]] = {
    "list": ({"--all": "all", "--no-status": "no_status", "--json": "json", "--size": "size"},
             {}, ()),
    "new": (
        {"--no-fetch": "no_fetch", "--cd": "cd", "--json": "json", "--no-hooks": "no_hooks",
         "--carry": "carry", "--move": "move"},
        {"-p": "prompt", "--prompt": "prompt", "-b": "branch", "--branch": "branch",
         "--from": "from_ref"},
        ("name",),
    ),
    "hook": ({}, {}, ("agent",)),  # every Claude Code event starts a process: keep it quick
    "statusline": ({}, {}, ()),
    "env": ({"--json": "json"}, {"--shell": "shell"}, ("name",)),  # shells ask it often
    "activity": ({}, {"--agent": "agent", "--session": "session"}, ("action", "state")),
}
# Called with no Worktrees (they build what they need): one process per event or line.
_LIGHT = frozenset({"hook", "statusline", "activity", "env"})
_GLOBAL_OPTIONS = {"--home": "home", "-C": "directory"}
# What argparse sets that the fast path never parses (`--sparse` repeats: argparse's).
_HOT_DEFAULTS: dict[str, dict[str, Any]] = {"new": {"sparse": None, "pr": None}}


def _parse_hot(argv: list[str], command: str | None) -> SimpleNamespace | None:
    """argv of a hot command as argparse would parse it, or None when anything is out of
    the ordinary (help, an abbreviation, `--opt=value`, a value starting with '-', a
    surplus argument): argparse then parses it and reports what is wrong."""
    if command not in _HOT:
        return None
    flags, options, positionals = _HOT[command]
    values: dict[str, Any] = dict.fromkeys(_GLOBAL_OPTIONS.values())
    values.update(dict.fromkeys(flags.values(), False))
    values.update(dict.fromkeys((*options.values(), *positionals)))
    values.update(_HOT_DEFAULTS.get(command, {}))
    names_left = list(positionals)
    known = _GLOBAL_OPTIONS
    args = iter(argv)
    for arg in args:
        if arg == command and known is _GLOBAL_OPTIONS:
            known = options
            continue
        if arg in flags and known is options:
            values[flags[arg]] = True
        elif arg in known:
            value = next(args, None)
            if value is None or value.startswith("-"):
                return None
            values[known[arg]] = value
        elif arg.startswith("-") or known is _GLOBAL_OPTIONS or not names_left:
            return None
        else:
            values[names_left.pop(0)] = arg
    values["handler"] = SUBCOMMANDS[command][1]
    return SimpleNamespace(**values)


# name: (what it does, its handler and its arguments as `module:function` of this package,
# whether it has --json); a module is imported only when its command runs (start-up time)
SUBCOMMANDS: dict[str, tuple[str, str, str, bool]] = {
    "new": ("create (or reuse) a worktree of this repository",
            "worktrees:cmd_new", "worktrees:new_args", True),
    "list": ("list managed worktrees",
             "worktrees:cmd_list", "worktrees:list_args", True),
    "path": ("print a worktree's path",
             "worktrees:cmd_path", "worktrees:name_arg", False),
    "cd": ("print a worktree's path; with vwt shell-init, change to it",
           "worktrees:cmd_cd", "worktrees:name_arg", False),
    "port": ("print the first port of the worktree's lease (VWT_PORT and PORT in its "
             "environment)", "runtime:cmd_port", "worktrees:name_arg", True),
    "env": ("print a worktree's environment: VWT_*, PORT, COMPOSE_PROJECT_NAME, its [env] "
            "table; --shell for lines to eval", "runtime:cmd_env", "runtime:env_args", True),
    "ps": ("the processes running inside each worktree, the ports they listen on, and who "
           "serves each leased port",
           "runtime:cmd_ps", "runtime:ps_args", True),
    "status": ("inspect what removing a worktree would lose",
               "worktrees:cmd_status", "worktrees:name_arg", True),
    "run": ("run a command inside a worktree while holding it",
            "worktrees:cmd_run", "worktrees:run_args", False),
    "shell": ("open $SHELL inside a worktree while holding it",
              "worktrees:cmd_shell", "worktrees:name_arg", False),
    "rm": ("remove a worktree safely",
           "cleanup:cmd_rm", "cleanup:rm_args", True),
    "snapshot": ("save a worktree's full state to refs/vibe/reaped/NAME",
                 "cleanup:cmd_snapshot", "worktrees:name_arg", True),
    "restore": ("recreate a snapshotted-and-removed worktree",
                "worktrees:cmd_restore", "worktrees:restore_args", True),
    "prune": ("retention across all repositories",
              "cleanup:cmd_prune", "cleanup:prune_args", True),
    "hooks": ("list lifecycle hooks; approve or revoke project hooks",
              "hooks_pool:cmd_hooks", "hooks_pool:hooks_args", True),
    "merge": ("land a worktree's commits on the target branch, then remove it",
              "landing:cmd_merge", "landing:merge_args", True),
    "sync": ("rebase a worktree's own commits onto the target branch",
             "landing:cmd_sync", "landing:sync_args", True),
    "conflicts": ("where parallel sessions will conflict, before they do",
                  "landing:cmd_conflicts", "landing:conflicts_args", True),
    "land": ("land worktrees one at a time, each rebased onto the target and checked by a gate",
             "queue:cmd_land", "queue:land_args", True),
    "mcp": ("serve vwt as an MCP server on stdio",
            "integrations:cmd_mcp", "", False),
    "board": ("serve a local web page of every worktree and act on them (needs the board extra)",
              "integrations:cmd_board", "integrations:board_args", False),
    "shell-init": ("print shell integration (cd, completion): eval \"$(vwt shell-init bash)\"",
                   "integrations:cmd_shell_init", "integrations:shell_init_args", False),
    "skill": ("install or show the agent skill (SKILL.md) for Claude Code or Mistral Vibe",
              "integrations:cmd_skill", "integrations:skill_args", True),
    "schema": ("print the JSON Schema of a command's --json document, or list them",
               "health:cmd_schema", "health:schema_args", False),
    "doctor": ("check the whole home for problems, changing nothing (exit 1 when unhealthy)",
               "health:cmd_doctor", "health:doctor_args", True),
    "hook": ("handle an agent's hook event (JSON on stdin): Claude Code's worktrees through "
             "vwt; Claude Code's and Mistral Vibe's activity",
             "agents:cmd_hook", "agents:hook_args", False),
    "install": ("register vwt's hooks in an agent's settings (Claude Code, Mistral Vibe)",
                "agents:cmd_install", "agents:install_args", True),
    "uninstall": ("take vwt's hooks out of an agent's settings again",
                  "agents:cmd_uninstall", "agents:install_args", True),
    "statusline": ("one line for Claude Code's statusLine (its status JSON on stdin): name, "
                   "branch, changes, ahead/behind, collisions",
                   "agents:cmd_statusline", "", False),
    "activity": ("mark what the agent in this worktree is doing (working, waiting, idle), "
                 "from any agent's hook; never fails the hook",
                 "agents:cmd_activity", "agents:activity_args", False),
    "foreign": ("list the git worktrees other tools made (Claude Code, Codex, Cursor, git)",
                "agents:cmd_foreign", "agents:foreign_args", True),
    "adopt": ("move worktrees other tools made under management, keeping every file",
              "agents:cmd_adopt", "agents:adopt_args", True),
    "pool": ("a warm pool of worktrees whose setup has already run: status, fill, drain",
             "hooks_pool:cmd_pool", "hooks_pool:pool_args", True),
}
COMPLETE = "__complete"

