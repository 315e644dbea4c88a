"""The CLI reference is generated from the parser, and every command explains itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vibe_worktree.cli import SUBCOMMANDS
from vibe_worktree.cli.parser import EXAMPLES

PROJECT = Path(__file__).resolve().parents[2]


def test_docs_cli_md_is_what_the_parser_generates():
    result = subprocess.run([sys.executable, "tools/gen_cli_doc.py", "--check"], cwd=PROJECT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr + result.stdout


def test_the_reference_covers_every_command_and_flag():
    page = (PROJECT / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in SUBCOMMANDS:
        assert f"## `vwt {name}`" in page
    for flag in ("--no-fetch", "--delete-branch", "--dry-run", "--no-status", "--target"):
        assert f"`{flag}" in page


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_each_command_says_what_it_does_in_one_line_and_shows_an_example(vwt, name):
    help_text = SUBCOMMANDS[name][0]
    assert help_text and "\n" not in help_text
    assert f"vwt {name}" in EXAMPLES.get(name, ""), \
        f"add an example of {name} to cli.parser.EXAMPLES"
    result = vwt(name, "--help")
    assert result.code == 0, str(result)
    assert f"\n{help_text}\n" in result.out  # the description, unwrapped
    assert "example" in result.out and EXAMPLES[name].splitlines()[0] in result.out


def test_top_level_help_lists_the_commands_and_shows_an_example(vwt):
    result = vwt("--help")
    assert result.code == 0, str(result)
    assert all(name in result.out for name in SUBCOMMANDS)
    assert "example" in result.out and 'vwt new -p' in result.out
