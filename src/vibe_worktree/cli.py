"""`vwt`: a thin command line over the Python API; it only parses and renders.

argparse rather than click: click alone costs ~30 ms to import, the whole
start-up budget of the spec's benchmarks (B2, B5). Imports happen inside the
functions so that `vwt --version` loads nothing but this module.
"""

from __future__ import annotations

import json
import os
import sys

from . import __version__
from .errors import (
    EXIT_ERROR,
    EXIT_HELD,
    EXIT_NEEDS_CONFIRMATION,
    EXIT_OK,
    EXIT_USAGE,
    VwtError,
)

TYPE_CHECKING = False  # `typing` is slow to import; mypy treats this as True
if TYPE_CHECKING:
    import argparse
    from typing import Any

    from .api import Worktrees


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args in (["--version"], ["-V"]):  # the start-up fast path
        sys.stdout.write(f"vwt {__version__}\n")
        return EXIT_OK
    try:
        return _dispatch(args)
    except VwtError as exc:
        _error(exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
    except OSError as exc:
        _error(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        return EXIT_ERROR


def _error(message: str) -> None:
    print(f"vwt: error: {message}", file=sys.stderr)


def _dispatch(argv: list[str]) -> int:
    parser = build_parser(only=_command_name(argv))
    ns = parser.parse_args(argv)
    if ns.directory:
        try:
            os.chdir(ns.directory)
        except OSError as exc:
            raise VwtError(f"cannot change to {ns.directory}: {exc.strerror}") from None
    if not getattr(ns, "handler", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from .api import Worktrees

    handler: Any = ns.handler
    return int(handler(Worktrees(home=ns.home), ns))


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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, just that subcommand's (building all costs start-up time)."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="vwt",
        description="One isolated git worktree per coding session, cleaned up without losing work.",
    )
    parser.add_argument("--version", "-V", action="version", version=f"vwt {__version__}")
    parser.add_argument("--home", metavar="DIR", help="vibe home (default $VIBE_HOME or ~/.vibe)")
    parser.add_argument("-C", dest="directory", metavar="DIR", help="run as if started in DIR")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    wanted = [only] if only in SUBCOMMANDS else list(SUBCOMMANDS)
    for name in wanted:
        help_text, handler, configure, json_flag = SUBCOMMANDS[name]
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.set_defaults(handler=handler)
        if json_flag:
            p.add_argument("--json", action="store_true", help="print one JSON document")
        configure(p)
    return parser


def _new_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME")
    p.add_argument("-p", "--prompt", help="task prompt to name the worktree from")
    p.add_argument("-b", "--branch", help="branch to create or check out (default: NAME)")
    p.add_argument("--from", dest="from_ref", metavar="REF", help="start point of a new branch")
    p.add_argument("--no-fetch", action="store_true", help="do not fetch the remote first")


def _list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="all repositories")
    p.add_argument("--no-status", action="store_true", help="skip git status (faster)")


def _name_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME")


def _run_args(p: argparse.ArgumentParser) -> None:
    import argparse

    p.add_argument("name", metavar="NAME")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD [ARG...]")


def _rm_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME")
    p.add_argument("-y", "--yes", action="store_true",
                   help="remove dirty work without asking (a snapshot is kept)")
    p.add_argument("--delete-branch", action="store_true",
                   help="also delete a branch that existed before")


def _prune_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep", type=int, metavar="N", help="worktrees to keep (default 15)")
    p.add_argument("--dry-run", action="store_true", help="report the plan, change nothing")


def _no_args(p: argparse.ArgumentParser) -> None:
    pass


# -- rendering ------------------------------------------------------------------------------
def _print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


def _on_terminal() -> bool:
    try:
        return sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _ask(question: str) -> bool:
    """A y/N question on the terminal; anything but yes is no."""
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline()
    return answer.strip().lower() in ("y", "yes")


def _age(claimed_at: str | None) -> str:
    if not claimed_at:
        return "-"
    import time

    from .records import parse_timestamp

    try:
        seconds = max(0.0, time.time() - parse_timestamp(claimed_at))
    except ValueError:
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


# -- commands -------------------------------------------------------------------------------
def cmd_new(wt: Worktrees, ns: argparse.Namespace) -> int:
    created = wt.create(ns.name, prompt=ns.prompt, branch=ns.branch, from_ref=ns.from_ref,
                        fetch=not ns.no_fetch)
    if ns.json:
        _print_json(created.to_json())
    else:
        print(created.path)
    return EXIT_OK


def cmd_list(wt: Worktrees, ns: argparse.Namespace) -> int:
    all_repos = ns.all
    if not all_repos:
        from .errors import NotARepository

        try:
            wt.repo  # noqa: B018 - outside a repository, list them all
        except NotARepository:
            all_repos = True
    rows = wt.list(all_repos=all_repos, with_status=not ns.no_status)
    if ns.json:
        _print_json([r.to_json() for r in rows])
        return EXIT_OK
    if not rows:
        print("no managed worktrees", file=sys.stderr)
        return EXIT_OK
    table = [["NAME", "BRANCH", "STATE", "HOLDERS", "CHANGES", "AHEAD", "AGE", "PATH"]]
    for r in rows:
        table.append([
            r.name, r.branch or "-", r.state, str(r.holders),
            "-" if r.changes is None else str(r.changes),
            "-" if r.ahead is None else str(r.ahead),
            _age(r.claimed_at), r.path,
        ])
    print(_table(table))
    for r in rows:
        if r.problem:
            print(f"vwt: warning: {r.name}: {r.problem}", file=sys.stderr)
    return EXIT_OK


def cmd_path(wt: Worktrees, ns: argparse.Namespace) -> int:
    print(wt.path(ns.name))
    return EXIT_OK


def cmd_status(wt: Worktrees, ns: argparse.Namespace) -> int:
    st = wt.status(ns.name)
    if ns.json:
        _print_json(st.to_json())
        return EXIT_OK
    print(f"{st.name}  {st.path}")
    print(f"  branch     {st.branch}{'' if st.branch_created else ' (existed before)'}")
    print(f"  changes    {st.changes} ({st.untracked} untracked)")
    print(f"  ahead      {st.ahead} commit(s) since {str(st.base_commit)[:12]}")
    print(f"  clean      {'yes' if st.clean else 'no'}")
    print(f"  holders    {st.holders}")
    return EXIT_OK


def cmd_run(wt: Worktrees, ns: argparse.Namespace) -> int:
    command = list(ns.command)
    if command[:1] == ["--"]:
        command = command[1:]
    return wt.run(ns.name, command)


def cmd_shell(wt: Worktrees, ns: argparse.Namespace) -> int:
    return wt.run(ns.name, [os.environ.get("SHELL") or "/bin/sh"])


def cmd_rm(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .remove import FORGOTTEN, KEPT_DIRTY, KEPT_IN_USE, NOT_FOUND, REMOVED

    terminal = _on_terminal()
    confirm_dirty: Any = True if ns.yes else (_ask if terminal else False)
    delete_branch = True if ns.delete_branch else None
    confirm_branch: Any = _ask if terminal else (lambda _q: False)
    result = wt.remove(ns.name, confirm_dirty=confirm_dirty, delete_branch=delete_branch,
                       confirm_branch=confirm_branch)
    code = {
        REMOVED: EXIT_OK, FORGOTTEN: EXIT_OK, KEPT_DIRTY: EXIT_NEEDS_CONFIRMATION,
        KEPT_IN_USE: EXIT_HELD, NOT_FOUND: EXIT_ERROR,
    }[result.outcome]
    if result.message:
        prefix = "vwt: " if code == EXIT_OK else "vwt: refused: "
        if result.outcome == NOT_FOUND:
            prefix = "vwt: error: "
        print(f"{prefix}{result.message}", file=sys.stderr)
    if ns.json:
        _print_json(result.to_json())
    elif result.outcome in (REMOVED, FORGOTTEN):
        extra = f" (snapshot {result.snapshot_ref})" if result.snapshot_ref else ""
        print(f"{result.outcome} {result.name}{extra}")
    return code


def cmd_snapshot(wt: Worktrees, ns: argparse.Namespace) -> int:
    snap = wt.snapshot(ns.name)
    if ns.json:
        _print_json(snap.to_json())
    else:
        print(f"{snap.ref} {snap.commit}")
    return EXIT_OK


def cmd_restore(wt: Worktrees, ns: argparse.Namespace) -> int:
    created = wt.restore(ns.name)
    if ns.json:
        _print_json(created.to_json())
    else:
        print(created.path)
    return EXIT_OK


def cmd_prune(wt: Worktrees, ns: argparse.Namespace) -> int:
    result = wt.prune(keep=ns.keep, dry_run=ns.dry_run)
    if ns.json:
        _print_json(result.to_json())
        return EXIT_OK
    verb = "would remove" if ns.dry_run else "removed"
    for item in result.removed:
        print(f"{verb} {item['bucket']}/{item['name']}")
    for item in result.kept:
        print(f"kept {item['bucket']}/{item['name']}: {item['reason']}")
    for item in result.reservations_discarded:
        print(f"discarded reservation {item['bucket']}/{item['name']}")
    if result.stale_holders_removed:
        print(f"stale holders removed: {result.stale_holders_removed}")
    if not (result.removed or result.kept or result.reservations_discarded):
        print("nothing to prune", file=sys.stderr)
    return EXIT_OK


def cmd_mcp(wt: Worktrees, ns: argparse.Namespace) -> int:
    try:
        from .mcp_server import serve
    except ImportError as exc:
        raise VwtError(f"the MCP server needs the mcp extra: pip install 'vibe-worktree[mcp]' "
                       f"({exc})") from None
    return int(serve(wt))


# name: (help, handler, add its arguments, accepts --json)
SUBCOMMANDS: dict[str, tuple[str, Any, Any, bool]] = {
    "new": ("create (or reuse) a worktree of this repository", cmd_new, _new_args, True),
    "list": ("list managed worktrees", cmd_list, _list_args, True),
    "path": ("print a worktree's path", cmd_path, _name_arg, False),
    "status": ("inspect what removing a worktree would lose", cmd_status, _name_arg, True),
    "run": ("run a command inside a worktree while holding it", cmd_run, _run_args, False),
    "shell": ("open $SHELL inside a worktree while holding it", cmd_shell, _name_arg, False),
    "rm": ("remove a worktree safely", cmd_rm, _rm_args, True),
    "snapshot": ("save a worktree's full state to refs/vibe/reaped/NAME", cmd_snapshot,
                 _name_arg, True),
    "restore": ("recreate a snapshotted-and-removed worktree", cmd_restore, _name_arg, True),
    "prune": ("retention across all repositories", cmd_prune, _prune_args, True),
    "mcp": ("serve vwt as an MCP server on stdio", cmd_mcp, _no_args, False),
}

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
