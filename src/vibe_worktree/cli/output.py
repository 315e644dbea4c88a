"""One place for what the command line prints and asks: JSON documents, messages and the
exit codes that go with them, y/N questions on the terminal, stopping on signals, and the
few checks several command groups share (which repositories, where the shell stands).
"""

from __future__ import annotations

import json
import os
import sys

from ..core.errors import EXIT_USAGE, Interrupted, VwtError

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from ..api import Worktrees


def error(message: str) -> None:
    print(f"vwt: error: {message}", file=sys.stderr)


def print_json(data: object) -> None:
    # Compact: with `indent`, json falls back to its pure-Python encoder (slow on big lists).
    sys.stdout.write(json.dumps(data) + "\n")


def on_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def ask_yes_no(question: str) -> bool:
    """A y/N question on the terminal; anything but yes is no."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def hook_asker() -> Any:
    """On a terminal, ask before an unapproved project hook runs; elsewhere nobody can."""
    if not on_terminal():
        return None

    def ask(hook: Any) -> bool:
        what = f" ({hook.description})" if hook.description else ""
        return ask_yes_no(f"vwt: run project hook {hook.name}{what} ({hook.type}): "
                          f"{hook.command!r}? yes also approves it")
    return ask


def stderr_on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def refuse_json_with_cd(ns: argparse.Namespace) -> None:
    if getattr(ns, "cd", False) and ns.json:
        raise VwtError("--cd prints a path for the shell function; drop --json", EXIT_USAGE)


def stop_on_signals() -> None:
    """SIGINT and SIGTERM stop `new` and `restore` with `Interrupted` (exit 130, 143), so
    what is under way is undone, or left as the message says with how to finish it. Only
    the first: one more while that tidying runs is ignored, so it is not cut short too."""
    try:  # the C module: `signal` itself builds its enums, about 1 ms of start-up
        from _signal import SIG_IGN, SIGINT, SIGTERM, signal  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - other Pythons
        from signal import SIG_IGN, SIGINT, SIGTERM, signal

    def stop(signum: int, _frame: object) -> None:
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        raise Interrupted(signum)

    signal(SIGINT, stop)
    signal(SIGTERM, stop)


def say_outcome(message: str, code: int) -> None:
    if message:
        prefix = "vwt: " if code == 0 else ("vwt: refused: " if code in (3, 4) else "vwt: error: ")
        print(f"{prefix}{message}", file=sys.stderr)


def all_outside_a_repo(wt: Worktrees, all_repos: bool) -> bool:
    """`--all`, or no repository here: then every repository."""
    if all_repos:
        return True
    from ..core.errors import NotARepository

    try:
        wt.repo  # noqa: B018 - outside a repository, list them all
    except NotARepository:
        return True
    return False


def standing_in(wt: Worktrees, name: str) -> bool:
    """This process (so, usually, the shell that started it) is inside NAME's checkout."""
    try:
        checkout = os.path.realpath(wt.claim(name).checkout)
        here = os.path.realpath(os.getcwd())
    except (VwtError, OSError):
        return False
    return here == checkout or here.startswith(checkout + os.sep)


def say_left_behind(wt: Worktrees, name: str) -> None:
    print(f"vwt: warning: you were inside {name}, which is now removed; your shell stands in a "
          f"deleted folder: cd {wt.repo.info.repo_root} (the shell function of vwt shell-init "
          "does it for you)", file=sys.stderr)
