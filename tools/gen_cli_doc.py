"""Write docs/cli.md, the command-line reference, from the parser in `vibe_worktree.cli`.

    python tools/gen_cli_doc.py           # rewrite docs/cli.md
    python tools/gen_cli_doc.py --check   # exit 1 when docs/cli.md is out of date

Rendered from the parser's actions rather than argparse's own help text, so the page does
not change with the Python version or the terminal's width.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT / "src"))

from vibe_worktree import cli  # noqa: E402
from vibe_worktree.core.errors import (  # noqa: E402
    EXIT_ERROR,
    EXIT_HELD,
    EXIT_NEEDS_CONFIRMATION,
    EXIT_OK,
    EXIT_USAGE,
)

OUTPUT = PROJECT / "docs" / "cli.md"

INTRO = """\
# Command-line reference

Generated from the parser by `python tools/gen_cli_doc.py`; do not edit by hand (a test fails
when this page and the parser disagree). `vwt COMMAND --help` prints the same.

Global options go before the command: `vwt [--home DIR] [-C DIR] COMMAND ...`. Every command
that prints data takes `--json` after the command and then prints one JSON document on stdout
(see [json.md](json.md)); progress and warnings go to stderr.
"""

EXIT_CODES = {
    EXIT_OK: "success",
    EXIT_ERROR: "error: not a repository, not found, git failed, validation failed",
    EXIT_USAGE: "bad usage or an invalid name",
    EXIT_NEEDS_CONFIRMATION: "refused: needs confirmation (dirty work would be lost)",
    EXIT_HELD: "refused: held by a live session",
    130: "interrupted (Ctrl-C, SIGINT); `new` and `restore` undo what they were making, or "
         "say what they leave and how to finish it (see [hooks.md](hooks.md#an-unfinished-setup))",
    143: "stopped by SIGTERM; `new` and `restore` tidy up as for Ctrl-C",
}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _arguments(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions
            if not isinstance(a, argparse._HelpAction | argparse._SubParsersAction)]


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:
        return "|".join(map(str, action.choices))
    return str(action.dest).upper()


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _synopsis_part(action: argparse.Action) -> str:
    if not action.option_strings:
        text = _metavar(action)
        return f"[{text}]" if action.nargs in ("?", "*") else text
    flag = min(action.option_strings, key=len) if action.option_strings[0].startswith("--") \
        else action.option_strings[0]
    text = f"{flag} {_metavar(action)}" if _takes_value(action) else flag
    return text if action.required else f"[{text}]"


def _term(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{_metavar(action)}`"
    suffix = f" {_metavar(action)}" if _takes_value(action) else ""
    return ", ".join(f"`{flag}{suffix}`" for flag in action.option_strings)


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%(" in text:
        text = text % {**vars(action), "prog": prog}
    if action.choices is not None and action.metavar is not None:
        text += f" (one of {', '.join(f'`{c}`' for c in action.choices)})"
    return _cell(text)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")  # a bare | ends a table cell, even inside backticks


def _table(actions: list[argparse.Action], prog: str) -> list[str]:
    if not actions:
        return []
    rows = ["| argument | meaning |", "| --- | --- |"]
    rows += [f"| {_cell(_term(a))} | {_help(a, prog)} |" for a in actions]
    return [*rows, ""]


def _command(prog: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    actions = _arguments(parser)
    nested = _subcommands(parser)
    in_usage_order = sorted(actions, key=lambda a: not a.option_strings)  # options first
    synopsis = " ".join([prog, *map(_synopsis_part, in_usage_order),
                         *(["COMMAND"] if nested else [])])
    lines = [f"{'#' * level} `{prog}`", "", parser.description or "", "", "```",
             synopsis, "```", "", *_table(actions, prog)]
    if parser.epilog:
        heading, *examples = parser.epilog.splitlines()
        lines += [heading.capitalize(), "", "```sh"]
        lines += [line.strip() for line in examples if line.strip()]
        lines += ["```", ""]
    for name, sub in nested.items():
        lines += _command(f"{prog} {name}", sub, level + 1)
    return lines


def render() -> str:
    parser = cli.build_parser()
    commands = _subcommands(parser)
    lines = [INTRO, "## Commands", ""]
    lines += [f"- [`vwt {name}`](#vwt-{name}): {p.description}" for name, p in commands.items()]
    lines += ["", "## Global options", "", *_table(_arguments(parser), "vwt")]
    lines += ["## Exit status", "", "| status | meaning |", "| --- | --- |"]
    lines += [f"| {code} | {meaning} |" for code, meaning in sorted(EXIT_CODES.items())]
    lines += ["", "An error is one line on stderr starting with `vwt: error:`, a refusal one "
              "starting with `vwt: refused:`; never a traceback.", ""]
    for name, sub in commands.items():
        lines += _command(f"vwt {name}", sub, 2)
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if argv == ["--check"]:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print("docs/cli.md is out of date: run python tools/gen_cli_doc.py", file=sys.stderr)
            return 1
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
