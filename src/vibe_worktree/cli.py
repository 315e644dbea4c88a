"""`vwt`: a thin command line over the Python API; it only parses and renders.

argparse rather than click: click alone costs ~30 ms to import, the whole
start-up budget of the spec's benchmarks (B2, B5). Imports happen inside the
functions so that `vwt --version` loads nothing but this module.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from types import SimpleNamespace

from . import __version__
from .core.errors import (
    EXIT_ERROR,
    EXIT_HELD,
    EXIT_NEEDS_CONFIRMATION,
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

    from .api import Worktrees


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
        _error(exc.message)
        return exc.exit_code
    except Interrupted as exc:
        _error(exc.message)
        return exc.exit_code
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
    except OSError as exc:
        if disk_is_full(exc):
            _error(DiskFull(f"writing {exc.filename}" if exc.filename else None).message)
        else:
            _error(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))
        return EXIT_ERROR


def _error(message: str) -> None:
    print(f"vwt: error: {message}", file=sys.stderr)


def _dispatch(argv: list[str]) -> int:
    command = _command_name(argv)
    if command == COMPLETE:  # hidden, for shell-init's completion; no argparse needed
        return _complete(argv[argv.index(COMPLETE) + 1:])
    ns: Any = _parse_hot(argv, command)
    if ns is None:
        parser = build_parser(only=command)
        ns = parser.parse_args(argv)
    if ns.directory:
        try:
            os.chdir(ns.directory)
        except OSError as exc:
            raise VwtError(f"cannot change to {ns.directory}: {exc.strerror}") from None
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
    if command in _LIGHT:  # a process per hook event or status line: no API to build
        return int(ns.handler(None, ns))
    from .api import Worktrees

    handler: Any = ns.handler
    progress = _stderr_on_terminal() and not getattr(ns, "json", False)
    return int(handler(Worktrees(home=ns.home, progress=progress), ns))


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
}
# Called with no Worktrees (they build what they need): one process per event or line.
_LIGHT = frozenset({"hook", "statusline"})
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


def _terminal_width() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0")) or os.get_terminal_size(2).columns
    except (OSError, ValueError):
        columns = 80
    return max(40, columns - 2)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with `only`, just that subcommand's (building all costs start-up time)."""
    import argparse

    width = _terminal_width()

    def formatter(prog: str) -> argparse.HelpFormatter:
        # A fixed width: argparse would otherwise import shutil (and bz2, lzma) for it.
        # Raw: the examples of the epilog keep their lines.
        return argparse.RawDescriptionHelpFormatter(prog, width=width)

    parser = argparse.ArgumentParser(
        prog="vwt",
        description="One isolated git worktree per coding session, cleaned up without losing work.",
        epilog=_examples(EXAMPLES[None]), formatter_class=formatter,
    )
    parser.add_argument("--version", "-V", action="version", version=f"vwt {__version__}")
    parser.add_argument("--home", metavar="DIR", help="vibe home (default $VIBE_HOME or ~/.vibe)")
    parser.add_argument("-C", dest="directory", metavar="DIR", help="run as if started in DIR")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    wanted = [only] if only in SUBCOMMANDS else list(SUBCOMMANDS)
    for name in wanted:
        help_text, handler, configure, json_flag = SUBCOMMANDS[name]
        p = sub.add_parser(name, help=help_text, description=help_text,
                           epilog=_examples(EXAMPLES.get(name, "")), formatter_class=formatter)
        p.set_defaults(handler=handler)
        if json_flag:
            p.add_argument("--json", action="store_true", help="print one JSON document")
        configure(p)
    return parser


def _examples(text: str) -> str:
    lines = text.splitlines()
    heading = "examples:" if len(lines) > 1 else "example:"
    return heading + "\n" + "".join(f"  {line}\n" for line in lines) if lines else ""


def _new_args(p: argparse.ArgumentParser) -> None:
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
    _no_hooks_flag(p)
    _cd_flag(p)


def _no_hooks_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-hooks", action="store_true", help="run no lifecycle hook")


def _hooks_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("approve", "revoke"),
                   help="approve or revoke project hooks (default: list the hooks)")
    p.add_argument("names", nargs="*", metavar="NAME", help="hooks to approve or revoke")
    p.add_argument("--all", action="store_true", help="every project hook")


def _cd_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cd", action="store_true",
                   help="change the shell's directory to it (needs vwt shell-init)")


def _restore_args(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    _no_hooks_flag(p)
    _cd_flag(p)


def _shell_init_args(p: argparse.ArgumentParser) -> None:
    from .integrations.shell import SHELLS

    p.add_argument("shell", choices=SHELLS, help="the shell to print the function for")


def _skill_args(p: argparse.ArgumentParser) -> None:
    from .integrations.skill import AGENTS

    p.add_argument("action", choices=("install", "show"),
                   help="install: write SKILL.md for an agent; show: print it")
    p.add_argument("--agent", choices=AGENTS, default="claude",
                   help="whose skills folder to install into (default claude)")
    p.add_argument("--target", metavar="DIR", help="install to DIR/SKILL.md instead")


def _list_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="all repositories")
    p.add_argument("--no-status", action="store_true", help="skip git status (faster)")
    p.add_argument("--size", action="store_true",
                   help="also the disk each checkout's own files take (as du -s counts them)")


def _name_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the worktree's name")


def _run_args(p: argparse.ArgumentParser) -> None:
    import argparse

    _name_arg(p)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD [ARG...]",
                   help="the command to run inside the worktree")


def _rm_args(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    p.add_argument("-y", "--yes", action="store_true",
                   help="remove dirty work without asking (a snapshot is kept)")
    p.add_argument("--delete-branch", action="store_true",
                   help="also delete a branch that existed before")
    _no_hooks_flag(p)


def _prune_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keep", type=int, metavar="N", help="worktrees to keep (default 15)")
    p.add_argument("--dry-run", action="store_true", help="report the plan, change nothing")
    p.add_argument("--merged", action="store_true",
                   help="also remove clean worktrees whose commits are in the target branch")
    p.add_argument("--max-size", metavar="SIZE",
                   help="then remove pool entries and the oldest unheld worktrees until all take "
                        "at most SIZE (20G, 500M; binary units; default: max_size of config.toml)")


def _schema_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="a command (new, list, ...) or mcp-TOOL; without it, list the names")


def _no_args(p: argparse.ArgumentParser) -> None:
    pass


# -- rendering ------------------------------------------------------------------------------
def _print_json(data: object) -> None:
    # Compact: with `indent`, json falls back to its pure-Python encoder (slow on big lists).
    sys.stdout.write(json.dumps(data) + "\n")


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


def _hook_asker() -> Any:
    """On a terminal, ask before an unapproved project hook runs; elsewhere nobody can."""
    if not _on_terminal():
        return None

    def ask(hook: Any) -> bool:
        what = f" ({hook.description})" if hook.description else ""
        return _ask(f"vwt: run project hook {hook.name}{what} ({hook.type}): "
                    f"{hook.command!r}? yes also approves it")
    return ask


def _stderr_on_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _refuse_json_with_cd(ns: argparse.Namespace) -> None:
    if getattr(ns, "cd", False) and ns.json:
        raise VwtError("--cd prints a path for the shell function; drop --json", EXIT_USAGE)


def _stop_on_signals() -> None:
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


# -- commands -------------------------------------------------------------------------------
def cmd_new(wt: Worktrees, ns: argparse.Namespace) -> int:
    _refuse_json_with_cd(ns)
    _stop_on_signals()
    created = wt.create(ns.name, prompt=ns.prompt, branch=ns.branch, from_ref=ns.from_ref,
                        fetch=not ns.no_fetch, hooks=not ns.no_hooks, ask=_hook_asker(),
                        sparse=getattr(ns, "sparse", None), pr=getattr(ns, "pr", None),
                        carry=ns.carry, move=ns.move)
    if ns.json:
        _print_json(created.to_json())
    else:
        print(created.path)
    return EXIT_OK


def _all_outside_a_repo(wt: Worktrees, all_repos: bool) -> bool:
    """`--all`, or no repository here: then every repository."""
    if all_repos:
        return True
    from .core.errors import NotARepository

    try:
        wt.repo  # noqa: B018 - outside a repository, list them all
    except NotARepository:
        return True
    return False


def cmd_list(wt: Worktrees, ns: argparse.Namespace) -> int:
    all_repos = _all_outside_a_repo(wt, ns.all)
    if ns.json or ns.no_status or not _stderr_on_terminal():
        rows = wt.list(all_repos=all_repos, with_status=not ns.no_status,
                       with_size=ns.size)
    else:
        from .render import Progress

        with Progress() as progress:
            progress.update("vwt: inspecting worktrees…")
            rows = wt.list(all_repos=all_repos, with_status=True, with_size=ns.size)
    if ns.json:
        _print_json([r.to_json() for r in rows])
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


def cmd_port(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .core.names import validate_name
    from .core.ports import worktree_port

    validate_name(ns.name, as_branch=False)
    bucket = wt.repo.bucket
    port = worktree_port(wt.root.home, bucket, ns.name)
    if ns.json:
        _print_json({"name": ns.name, "bucket": bucket, "port": port})
    else:
        print(port)
    return EXIT_OK


def cmd_shell_init(_wt: Worktrees, ns: argparse.Namespace) -> int:
    from .integrations.shell import init_script

    sys.stdout.write(init_script(ns.shell))
    return EXIT_OK


def cmd_skill(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .integrations import skill

    if ns.action == "show":
        if ns.json:
            _print_json({"name": skill.SKILL_NAME, "text": skill.skill_text()})
        else:
            sys.stdout.write(skill.skill_text())
        return EXIT_OK
    installed = skill.install(ns.target or skill.default_target(ns.agent, wt.root.home))
    if ns.json:
        _print_json(installed.to_json())
    else:
        print(installed.path)
        if not installed.changed:
            print("vwt: already up to date", file=sys.stderr)
    return EXIT_OK


def _complete(argv: list[str]) -> int:
    """`vwt __complete -- WORD...`: one candidate a line for the last WORD."""
    from .integrations.shell import candidates, wants_names

    words = argv[1:] if argv[:1] == ["--"] else argv
    names: list[str] = []
    if wants_names(words or [""]):
        names = _completion_names(words)
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
    from .api import Worktrees

    try:
        return [row.name for row in Worktrees(home=home, cwd=cwd).list(with_status=False)]
    except (VwtError, OSError):
        return []


def cmd_status(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .render import landed_words

    st = wt.status(ns.name)
    if ns.json:
        _print_json(st.to_json())
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
    from .lifecycle.remove import (
        FORGOTTEN,
        HOOK_FAILED,
        KEPT_DIRTY,
        KEPT_IN_USE,
        NOT_FOUND,
        REMOVED,
    )

    inside = _standing_in(wt, ns.name)
    terminal = _on_terminal()
    confirm_dirty: Any = True if ns.yes else (_ask if terminal else False)
    delete_branch = True if ns.delete_branch else None
    confirm_branch: Any = _ask if terminal else (lambda _q: False)
    result = wt.remove(ns.name, confirm_dirty=confirm_dirty, delete_branch=delete_branch,
                       confirm_branch=confirm_branch, hooks=not ns.no_hooks,
                       ask_hook=_hook_asker())
    code = {
        REMOVED: EXIT_OK, FORGOTTEN: EXIT_OK, KEPT_DIRTY: EXIT_NEEDS_CONFIRMATION,
        KEPT_IN_USE: EXIT_HELD, NOT_FOUND: EXIT_ERROR, HOOK_FAILED: EXIT_ERROR,
    }[result.outcome]
    if result.message:
        prefix = "vwt: " if code == EXIT_OK else "vwt: refused: "
        if result.outcome in (NOT_FOUND, HOOK_FAILED):
            prefix = "vwt: error: "
        print(f"{prefix}{result.message}", file=sys.stderr)
    if ns.json:
        _print_json(result.to_json())
    elif result.outcome in (REMOVED, FORGOTTEN):
        extra = f" (snapshot {result.snapshot_ref})" if result.snapshot_ref else ""
        print(f"{result.outcome} {result.name}{extra}")
    if result.outcome == REMOVED and inside:
        _say_left_behind(wt, ns.name)
    return code


def _standing_in(wt: Worktrees, name: str) -> bool:
    """This process (so, usually, the shell that started it) is inside NAME's checkout."""
    try:
        checkout = os.path.realpath(wt.claim(name).checkout)
        here = os.path.realpath(os.getcwd())
    except (VwtError, OSError):
        return False
    return here == checkout or here.startswith(checkout + os.sep)


def _say_left_behind(wt: Worktrees, name: str) -> None:
    print(f"vwt: warning: you were inside {name}, which is now removed; your shell stands in a "
          f"deleted folder: cd {wt.repo.info.repo_root} (the shell function of vwt shell-init "
          "does it for you)", file=sys.stderr)


def cmd_snapshot(wt: Worktrees, ns: argparse.Namespace) -> int:
    snap = wt.snapshot(ns.name)
    if ns.json:
        _print_json(snap.to_json())
    else:
        print(f"{snap.ref} {snap.commit}")
    return EXIT_OK


def cmd_restore(wt: Worktrees, ns: argparse.Namespace) -> int:
    _refuse_json_with_cd(ns)
    _stop_on_signals()
    created = wt.restore(ns.name, hooks=not ns.no_hooks, ask=_hook_asker())
    if ns.json:
        _print_json(created.to_json())
    else:
        print(created.path)
    return EXIT_OK


def cmd_prune(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .render import Progress

    with Progress(enabled=_stderr_on_terminal() and not ns.json) as progress:
        progress.update("vwt: pruning…" if not ns.dry_run else "vwt: planning the prune…")
        result = wt.prune(keep=ns.keep, dry_run=ns.dry_run, merged=ns.merged,
                          max_size=ns.max_size)
    if ns.json:
        _print_json(result.to_json())
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
        from .core.disk import human

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


def cmd_schema(_wt: Worktrees, ns: argparse.Namespace) -> int:
    from . import schema

    sys.stdout.write(schema.text(ns.name) if ns.name is not None else "".join(
        f"{name}\n" for name in schema.names()))
    return EXIT_OK


def cmd_hooks(wt: Worktrees, ns: argparse.Namespace) -> int:
    if ns.action is None:
        if ns.names or ns.all:
            raise VwtError("say what to do: vwt hooks approve|revoke NAME... (or --all)",
                           EXIT_USAGE)
        rows = wt.hooks()
    else:
        rows = wt.approve_hooks(ns.names, all_hooks=ns.all, approve=ns.action == "approve")
    if ns.json:
        _print_json({"hooks": [r.to_json() for r in rows]})
        return EXIT_OK
    if not rows:
        print("no hooks (add them to .vibe/worktree.toml or to the home's worktree.toml)",
              file=sys.stderr)
    for r in rows:
        h = r.hook
        state = "approved" if r.approved else "NOT APPROVED"
        mode = ", background" if h.background else ""
        print(f"{h.type:<12} {h.source:<8} {h.name:<20} {state}{mode}  {h.command}")
    return EXIT_OK


def _conflicts_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="only NAME's conflicts with its target and the pairs that include it")
    p.add_argument("--all", action="store_true",
                   help="all repositories (a pair never spans two repositories)")
    p.add_argument("--path", metavar="PATH",
                   help="only who changes PATH (a file or folder, relative to the top level)")
    p.add_argument("--check", action="store_true", help="exit 1 when anything would conflict")


def cmd_conflicts(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .render import Progress

    with Progress(enabled=_stderr_on_terminal() and not ns.json) as progress:
        progress.update("vwt: reading worktrees…")
        result = wt.conflicts(ns.name, all_repos=ns.all, path=ns.path)
    if ns.json:
        _print_json(result.to_json())
    else:
        from .landing.collisions import describe

        print("\n".join(describe(result, qualify=ns.all)))
    for row in result.worktrees:
        if row.error:
            print(f"vwt: warning: {row.name}: {row.error}", file=sys.stderr)
    return EXIT_ERROR if ns.check and result.conflicted else EXIT_OK


def cmd_mcp(wt: Worktrees, ns: argparse.Namespace) -> int:
    try:
        from .integrations.mcp_server import serve
    except ImportError as exc:
        raise VwtError(f"the MCP server needs the mcp extra: pip install 'vibe-worktree[mcp]' "
                       f"({exc})") from None
    gc.enable()  # a long-lived server
    return int(serve(wt))


def _board_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=0, metavar="N",
                   help="port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-open", action="store_true", help="do not open a browser")


def cmd_board(wt: Worktrees, ns: argparse.Namespace) -> int:
    try:
        from .board.server import serve
    except ImportError as exc:
        raise VwtError(f"the board needs the board extra: pip install 'vibe-worktree[board]' "
                       f"({exc})") from None
    gc.enable()  # a long-lived server
    return serve(wt, ns.port, open_browser=not ns.no_open)


TARGET_DEFAULT = ("the local branch named after the remote's default (origin/HEAD), else main, "
                  "else master")


def _merge_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the worktree whose commits to land")
    p.add_argument("--into", metavar="BRANCH",
                   help=f"target branch (default: {TARGET_DEFAULT})")
    modes = p.add_mutually_exclusive_group()
    modes.add_argument("--squash", dest="mode", action="store_const", const="squash",
                       help="one new commit on the target (the default)")
    modes.add_argument("--rebase", dest="mode", action="store_const", const="rebase",
                       help="replay the worktree's own commits onto the target")
    modes.add_argument("--ff-only", dest="mode", action="store_const", const="ff-only",
                       help="only fast-forward the target to the worktree's HEAD")
    p.set_defaults(mode="squash")
    p.add_argument("-m", "--message", help="message of the squash (or --commit) commit")
    p.add_argument("--commit", action="store_true",
                   help="commit uncommitted changes first (message: -m, or WIP: NAME)")
    p.add_argument("--keep", action="store_true",
                   help="keep the worktree, moved onto the target's new tip")
    p.add_argument("--no-fetch", action="store_true", help="do not fetch the remote first")
    p.add_argument("--no-hooks", action="store_true", help="run no lifecycle hooks")


def _sync_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the worktree to rebase")
    p.add_argument("--onto", metavar="BRANCH",
                   help=f"branch to rebase onto (default: {TARGET_DEFAULT}; its remote-tracking "
                        "branch when the fetch finds it ahead)")
    p.add_argument("--no-fetch", action="store_true", help="do not fetch the remote first")
    resolving = p.add_mutually_exclusive_group()
    resolving.add_argument("--stop-on-conflict", action="store_true",
                           help="on a conflict, leave the rebase stopped in the worktree to "
                                "resolve (instead of changing nothing)")
    resolving.add_argument("--continue", dest="resume", action="store_const", const="continue",
                           help="go on with a stopped sync once its files are fixed and "
                                "staged (git add)")
    resolving.add_argument("--abort", dest="resume", action="store_const", const="abort",
                           help="undo a stopped sync: branch, files and record as before")


def _say_outcome(message: str, code: int) -> None:
    if message:
        prefix = "vwt: " if code == 0 else ("vwt: refused: " if code in (3, 4) else "vwt: error: ")
        print(f"{prefix}{message}", file=sys.stderr)


def cmd_merge(wt: Worktrees, ns: argparse.Namespace) -> int:
    inside = _standing_in(wt, ns.name)
    result = wt.merge(ns.name, into=ns.into, mode=ns.mode, message=ns.message,
                      commit=ns.commit, keep=ns.keep, fetch=not ns.no_fetch,
                      hooks=not ns.no_hooks, ask=_hook_asker())
    _say_outcome(result.message, result.exit_code)
    if ns.json:
        _print_json(result.to_json())
    elif result.outcome == "merged":
        where = "kept" if not result.removed else "removed"
        print(f"merged {result.name} into {result.into} at {result.commit} "
              f"(worktree {where})")
    elif result.outcome == "up_to_date":
        print(f"{result.name} is already in {result.into}"
              + (" (worktree removed)" if result.removed else ""))
    elif result.conflicts:
        for path in result.conflicts:
            print(path)
    if result.removed and inside:
        _say_left_behind(wt, ns.name)
    return result.exit_code


def cmd_sync(wt: Worktrees, ns: argparse.Namespace) -> int:
    if ns.resume and (ns.onto or ns.no_fetch):
        raise VwtError(f"--{ns.resume} goes on with the stopped sync as it was started; "
                       "drop --onto and --no-fetch", EXIT_USAGE)
    if ns.resume == "continue":
        result = wt.sync_continue(ns.name)
    elif ns.resume == "abort":
        result = wt.sync_abort(ns.name)
    else:
        result = wt.sync(ns.name, onto=ns.onto, fetch=not ns.no_fetch,
                         stop_on_conflict=ns.stop_on_conflict)
    _say_outcome(result.message, result.exit_code)
    if ns.json:
        _print_json(result.to_json())
    elif result.outcome == "synced":
        print(f"synced {result.name} onto {result.onto}: {result.head}")
    elif result.outcome == "up_to_date":
        print(f"{result.name} already contains {result.onto}")
    elif result.outcome == "aborted":
        print(f"aborted the sync of {result.name}: back at {result.head}")
    elif result.conflicts:
        for path in result.conflicts:
            print(path)
    return result.exit_code


def _doctor_args(p: argparse.ArgumentParser) -> None:
    repair = p.add_mutually_exclusive_group()
    repair.add_argument("--archive-orphans", action="store_true",
                        help="archive each checkout whose repository is gone into "
                             "<root>/.orphans/<bucket>-<name>.tar.gz, then drop its claim")
    repair.add_argument("--relocate", action="store_true",
                        help="inside a moved repository: move its worktrees into its new "
                             "bucket and repair git's links (deletes nothing)")


def cmd_doctor(wt: Worktrees, ns: argparse.Namespace) -> int:
    if ns.archive_orphans or ns.relocate:
        done = wt.archive_orphans() if ns.archive_orphans else wt.relocate()
        key = "archived" if ns.archive_orphans else "relocated"
        failed = [r for r in done if r.outcome == "failed"]
        if ns.json:
            _print_json({key: [r.to_json() for r in done]})
        else:
            for r in done:
                if r.outcome != "failed":
                    print(f"{r.outcome} {r.bucket}/{r.name}: {r.path}"
                          + (f" ({r.detail})" if r.detail else ""))
            if not done:
                print(f"vwt: nothing to {'archive' if ns.archive_orphans else 'relocate'}",
                      file=sys.stderr)
        verb = "archive" if ns.archive_orphans else "relocate"
        for r in failed:  # an error is said on stderr (SPEC §5), with or without --json
            _error(f"could not {verb} {r.bucket}/{r.name} ({r.path}): {r.detail}")
        return 1 if failed else 0
    report = wt.doctor()
    if ns.json:
        _print_json(report.to_json())
    elif report.healthy:
        print("healthy")
    else:
        for p in report.problems:
            where = f"{p.bucket}/{p.name}" if p.bucket and p.name else p.bucket or p.path
            print(f"{p.kind}  {where}: {p.detail}\n    fix: {p.fix}")
    return 0 if report.healthy else 1


def _hook_args(p: argparse.ArgumentParser) -> None:
    from .agents import AGENTS

    p.add_argument("agent", choices=AGENTS, help="whose hook input is on stdin")


def cmd_hook(_wt: None, ns: argparse.Namespace) -> int:
    from .agents import AGENTS

    if ns.agent not in AGENTS:
        raise VwtError(f"unknown agent {ns.agent!r}; use one of {', '.join(AGENTS)}", EXIT_USAGE)
    from .agents.claude_code import handle

    return handle(ns.home)


def cmd_statusline(_wt: None, ns: argparse.Namespace) -> int:
    from .agents.statusline import print_line

    return print_line(ns.home)


def _install_args(p: argparse.ArgumentParser) -> None:
    from .agents import AGENTS
    from .agents.claude_settings import SCOPES

    p.add_argument("agent", choices=AGENTS, help="the agent whose settings to change")
    p.add_argument("--scope", choices=SCOPES, default="user",
                   help="user: ~/.claude/settings.json (default); project: .claude/settings.json;"
                        " local: .claude/settings.local.json")
    p.add_argument("--dry-run", action="store_true", help="print the resulting file, write nothing")


def cmd_install(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .agents.install import change_settings

    return change_settings(wt, ns.scope, install=True, dry_run=ns.dry_run, as_json=ns.json)


def cmd_uninstall(wt: Worktrees, ns: argparse.Namespace) -> int:
    from .agents.install import change_settings

    return change_settings(wt, ns.scope, install=False, dry_run=ns.dry_run, as_json=ns.json)
def _foreign_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all", action="store_true", help="every repository that has a bucket")


def cmd_foreign(wt: Worktrees, ns: argparse.Namespace) -> int:
    rows = wt.foreign(all_repos=_all_outside_a_repo(wt, ns.all))
    if ns.json:
        _print_json({"worktrees": [r.to_json() for r in rows]})
    elif rows:
        from .render import foreign_table

        print(foreign_table(rows))
    else:
        print("no worktrees made by other tools", file=sys.stderr)
    for r in rows:
        if r.problem:
            print(f"vwt: warning: {r.path}: {r.problem}", file=sys.stderr)
    return EXIT_OK


def _adopt_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="a worktree's top folder")
    p.add_argument("--all", action="store_true", help="every worktree vwt foreign lists here")


def cmd_adopt(wt: Worktrees, ns: argparse.Namespace) -> int:
    result = wt.adopt(ns.paths, all_foreign=ns.all)
    for refused in result.refused:
        print(f"vwt: refused: {refused.message}", file=sys.stderr)
    if ns.json:
        _print_json(result.to_json())
    for adopted in result.adopted if not ns.json else ():
        print(f"adopted {adopted.name}: {adopted.source} -> {adopted.path}")
    if not (result.adopted or result.refused):
        print("vwt: nothing to adopt", file=sys.stderr)
    return result.exit_code


def _pool_args(p: argparse.ArgumentParser) -> None:
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

        pools = [wt.pool_fill(ns.size, ask=_hook_asker(), progress=say)]
    elif ns.action == "drain":
        pools = wt.pool_drain(all_repos=ns.all)
    else:  # as `list`: outside a repository, every repository's
        pools = wt.pool_status(all_repos=_all_outside_a_repo(wt, ns.all))
    if ns.json:
        _print_json({"pools": [p.to_json() for p in pools]})
        return EXIT_OK
    if not pools:
        print("vwt: no pools", file=sys.stderr)
    from .render import pool_lines

    for p in pools:
        print(pool_lines(p))
    return EXIT_OK


# name: (help, handler, add its arguments, accepts --json)
SUBCOMMANDS: dict[str, tuple[str, Any, Any, bool]] = {
    "new": ("create (or reuse) a worktree of this repository", cmd_new, _new_args, True),
    "list": ("list managed worktrees", cmd_list, _list_args, True),
    "path": ("print a worktree's path", cmd_path, _name_arg, False),
    "cd": ("print a worktree's path; with vwt shell-init, change to it", cmd_cd, _name_arg,
           False),
    "port": ("print the worktree's stable port (exported as VWT_PORT by run and shell)",
             cmd_port, _name_arg, True),
    "status": ("inspect what removing a worktree would lose", cmd_status, _name_arg, True),
    "run": ("run a command inside a worktree while holding it", cmd_run, _run_args, False),
    "shell": ("open $SHELL inside a worktree while holding it", cmd_shell, _name_arg, False),
    "rm": ("remove a worktree safely", cmd_rm, _rm_args, True),
    "snapshot": ("save a worktree's full state to refs/vibe/reaped/NAME", cmd_snapshot,
                 _name_arg, True),
    "restore": ("recreate a snapshotted-and-removed worktree", cmd_restore, _restore_args,
                True),
    "prune": ("retention across all repositories", cmd_prune, _prune_args, True),
    "hooks": ("list lifecycle hooks; approve or revoke project hooks", cmd_hooks, _hooks_args,
              True),
    "merge": ("land a worktree's commits on the target branch, then remove it", cmd_merge,
              _merge_args, True),
    "sync": ("rebase a worktree's own commits onto the target branch", cmd_sync, _sync_args,
             True),
    "conflicts": ("where parallel sessions will conflict, before they do", cmd_conflicts,
                  _conflicts_args, True),
    "mcp": ("serve vwt as an MCP server on stdio", cmd_mcp, _no_args, False),
    "board": ("serve a local web page of every worktree and act on them (needs the board extra)",
              cmd_board, _board_args, False),
    "shell-init": ("print shell integration (cd, completion): eval \"$(vwt shell-init bash)\"",
                   cmd_shell_init, _shell_init_args, False),
    "skill": ("install or show the agent skill (SKILL.md) for Claude Code or Mistral Vibe",
              cmd_skill, _skill_args, True),
    "schema": ("print the JSON Schema of a command's --json document, or list them",
               cmd_schema, _schema_args, False),
    "doctor": ("check the whole home for problems, changing nothing (exit 1 when unhealthy)",
               cmd_doctor, _doctor_args, True),
    "hook": ("handle an agent's hook event (JSON on stdin): Claude Code's worktrees through vwt",
             cmd_hook, _hook_args, False),
    "install": ("register vwt's hooks in an agent's settings (Claude Code)", cmd_install,
                _install_args, True),
    "uninstall": ("take vwt's hooks out of an agent's settings again", cmd_uninstall,
                  _install_args, True),
    "statusline": ("one line for Claude Code's statusLine (its status JSON on stdin): name, "
                   "branch, changes, ahead/behind, collisions", cmd_statusline, _no_args, False),
    "foreign": ("list the git worktrees other tools made (Claude Code, Codex, Cursor, git)",
                cmd_foreign, _foreign_args, True),
    "adopt": ("move worktrees other tools made under management, keeping every file",
              cmd_adopt, _adopt_args, True),
    "pool": ("a warm pool of worktrees whose setup has already run: status, fill, drain",
             cmd_pool, _pool_args, True),
}
# name: what `vwt NAME --help` shows as its example (None: `vwt --help`), a command a line
EXAMPLES: dict[str | None, str] = {
    None: 'cd "$(vwt new -p "Fix the login bug")"\nvwt rm fix-the-login-bug',
    "new": ('cd "$(vwt new -p "Fix the login bug")"\nvwt new feature --from origin/main --json\n'
            'vwt new spike --move   # take the uncommitted work along, leave this checkout clean'),
    "list": "vwt list\nvwt list --all --no-status --json",
    "path": "ls \"$(vwt path feature)\"",
    "cd": "vwt cd feature",
    "port": "vwt port web --json",
    "status": "vwt status feature --json",
    "run": "vwt run feature -- make test",
    "shell": "vwt shell feature",
    "rm": "vwt rm feature\nvwt rm feature -y --delete-branch --json",
    "snapshot": "vwt snapshot feature",
    "restore": "vwt restore feature",
    "prune": "vwt prune --dry-run\nvwt prune --keep 5 --json\nvwt prune --merged",
    "merge": "vwt merge feature\nvwt merge feature --rebase --keep --into release --json",
    "sync": ("vwt sync feature\nvwt sync feature --onto release --json\n"
             "vwt sync feature --stop-on-conflict   # then fix the files, git add them\n"
             "vwt sync feature --continue   # or: vwt sync feature --abort"),
    "mcp": "claude mcp add vibe-worktree -- vwt mcp",
    "shell-init": "eval \"$(vwt shell-init bash)\"   # in ~/.bashrc",
    "skill": "vwt skill install --agent vibe\nvwt skill show",
    "schema": "vwt schema\nvwt schema list",
    "hooks": "vwt hooks\nvwt hooks approve deps\nvwt hooks revoke --all --json",
    "board": "vwt board\nvwt board --port 8765 --no-open   # then open the URL it prints",
    "conflicts": ("vwt conflicts\nvwt conflicts --path src/app.py --json   # before editing it\n"
                  "vwt conflicts feature --check   # before merging it"),
    "doctor": "vwt doctor --json\nvwt doctor --relocate   # inside a repository you moved",
    "hook": "echo '{\"hook_event_name\": \"WorktreeCreate\", \"cwd\": \"'$PWD'\", "
            "\"name\": \"feat/x\"}' | vwt hook claude-code",
    "install": ("vwt install claude-code\nvwt install claude-code --scope project --dry-run\n"
                "claude --worktree feat/login   # now made, held and removed by vwt"),
    "uninstall": "vwt uninstall claude-code\nvwt uninstall claude-code --scope local --json",
    "statusline": ('in ~/.claude/settings.json: "statusLine": {"type": "command", '
                   '"command": "vwt statusline"}'),
    "foreign": "vwt foreign\nvwt foreign --all --json",
    "adopt": "vwt adopt .claude/worktrees/feat-auth\nvwt adopt --all --json",
    "pool": "vwt pool\nvwt pool fill --size 4\nvwt pool status --all --json\nvwt pool drain",
}
COMPLETE = "__complete"

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
