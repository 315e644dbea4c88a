"""The argparse parser of `vwt`: built only when a command is out of the ordinary (the hot
commands' usual forms are parsed without it, in `cli/__init__.py`), for `--help`, and for
the generated command reference; with each command's examples for its `--help`."""

from __future__ import annotations

import argparse
import os

from .. import __version__

TYPE_CHECKING = False  # `typing` is slow to import; mypy treats this as True
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    # name: (what it does, its handler, what adds its arguments, whether it has --json),
    # as `cli.SUBCOMMANDS` has them
    Commands = Mapping[str, tuple[str, str, str, bool]]


def _terminal_width() -> int:
    try:
        columns = int(os.environ.get("COLUMNS", "0")) or os.get_terminal_size(2).columns
    except (OSError, ValueError):
        columns = 80
    return max(40, columns - 2)


def build(commands: Commands, resolve: Callable[[str], Any], only: str | None = None
          ) -> argparse.ArgumentParser:
    """The parser of `commands` (`resolve` finds the function that adds a command's
    arguments); with `only`, just that subcommand's (building all costs start-up time)."""
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
    wanted = [only] if only is not None and only in commands else list(commands)
    for name in wanted:
        help_text, handler, configure, json_flag = commands[name]
        p = sub.add_parser(name, help=help_text, description=help_text,
                           epilog=_examples(EXAMPLES.get(name, "")), formatter_class=formatter)
        p.set_defaults(handler=handler)
        if json_flag:
            p.add_argument("--json", action="store_true", help="print one JSON document")
        if configure:
            resolve(configure)(p)
    return parser


def _examples(text: str) -> str:
    lines = text.splitlines()
    heading = "examples:" if len(lines) > 1 else "example:"
    return heading + "\n" + "".join(f"  {line}\n" for line in lines) if lines else ""


# name: what `vwt NAME --help` shows as its example (None: `vwt --help`), a command a line
EXAMPLES: dict[str | None, str] = {
    None: 'cd "$(vwt new -p "Fix the login bug")"\nvwt rm fix-the-login-bug',
    "new": ('cd "$(vwt new -p "Fix the login bug")"\nvwt new feature --from origin/main --json\n'
            'vwt new spike --move   # take the uncommitted work along, leave this checkout clean'),
    "list": "vwt list\nvwt list --all --no-status --json",
    "path": "ls \"$(vwt path feature)\"",
    "cd": "vwt cd feature",
    "port": "vwt port web --json",
    "env": ('vwt env web --json\neval "$(vwt env --shell sh)"   # inside the worktree\n'
            "vwt env web --shell fish | source"),
    "ps": ("vwt ps\nvwt ps web --check   # before testing the server on web's port\n"
           "vwt ps --all --json"),
    "status": "vwt status feature --json",
    "run": "vwt run feature -- make test",
    "shell": "vwt shell feature",
    "rm": ("vwt rm feature\nvwt rm feature -y --delete-branch --json\n"
           "vwt rm feature --stop   # stop the dev server running in it first"),
    "snapshot": "vwt snapshot feature",
    "restore": "vwt restore feature",
    "prune": "vwt prune --dry-run\nvwt prune --keep 5 --json\nvwt prune --merged",
    "merge": "vwt merge feature\nvwt merge feature --rebase --keep --into release --json",
    "land": ("vwt land --gate 'pytest -q'   # an agent's last step, from inside its worktree\n"
             "vwt land --ready --dry-run\nvwt land fix-login add-search --no-wait --json"),
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
                "claude --worktree feat/login   # now made, held and removed by vwt\n"
                "vwt install vibe   # Mistral Vibe's activity, in ~/.vibe/hooks.toml"),
    "uninstall": ("vwt uninstall claude-code\nvwt uninstall claude-code --scope local --json\n"
                  "vwt uninstall vibe --scope project"),
    "activity": ("vwt activity set working --agent codex   # in the agent's hook for a prompt\n"
                 "vwt activity set idle --agent codex --session \"$SESSION\"   # turn over\n"
                 "vwt activity clear"),
    "statusline": ('in ~/.claude/settings.json: "statusLine": {"type": "command", '
                   '"command": "vwt statusline"}'),
    "foreign": "vwt foreign\nvwt foreign --all --json",
    "adopt": "vwt adopt .claude/worktrees/feat-auth\nvwt adopt --all --json",
    "pool": "vwt pool\nvwt pool fill --size 4\nvwt pool status --all --json\nvwt pool drain",
}
