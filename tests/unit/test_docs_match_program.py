"""The README and the docs say what the program does: the commands they name exist, the MCP
tools they list are the server's, with all their arguments."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from vibe_worktree.cli import SUBCOMMANDS, build_parser

PROJECT = Path(__file__).resolve().parents[2]
DOCS = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]
HIDDEN = {"__complete"}  # the shell completion's helper, documented as hidden


def server_tools() -> dict[str, list[str]]:
    """Each MCP tool's name and arguments (`directory` aside), from the server itself."""
    from vibe_worktree.integrations.mcp_server import _tools

    return {name: [p for p in inspect.signature(fn).parameters if p != "directory"]
            for name, fn in _tools(None)}  # type: ignore[arg-type]


def test_every_vwt_command_the_docs_name_exists():
    named = {(doc.name, m.group(1)) for doc in DOCS
             for m in re.finditer(r"`vwt ([a-z_][a-z_-]*)", doc.read_text(encoding="utf-8"))}
    missing = sorted((doc, word) for doc, word in named
                     if word not in SUBCOMMANDS and word not in HIDDEN)
    assert not missing, f"the docs name commands vwt does not have: {missing}"


def test_every_mcp_tool_is_documented_with_all_its_arguments():
    text = (PROJECT / "docs" / "integrations.md").read_text(encoding="utf-8")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([a-z_]+)` \|.*$", text, re.M)}
    for tool, arguments in server_tools().items():
        assert tool in rows, f"docs/integrations.md has no row for the MCP tool {tool}"
        cells = rows[tool].split("|")[2]
        absent = [a for a in arguments if f"`{a}`" not in cells]
        assert not absent, f"docs/integrations.md: {tool}'s row omits {absent}"


def test_the_readme_lists_every_mcp_tool():
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    line = " ".join(readme[readme.index("- **MCP**"):].split("\n- ", 1)[0].split())
    listed = re.findall(r"`([a-z_]+)`", line.split("Tools", 1)[1].split("return", 1)[0])
    assert listed == list(server_tools()), "the README's MCP tools differ from the server's"


def test_every_positional_argument_of_a_command_is_described():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    undescribed = [f"{name} {a.metavar or a.dest}" for name, p in sub.choices.items()
                   for a in p._actions if not a.option_strings and not a.help]
    assert not undescribed, f"--help leaves these undescribed: {undescribed}"


def test_every_json_sample_of_docs_json_md_matches_its_schema():
    """Each ```json block is a document of the section's schema (`(schema NAME)` in its
    heading): a new required key or a renamed value fails here until the sample shows it."""
    import json

    from jsonschema import Draft202012Validator

    from vibe_worktree import schema

    text = (PROJECT / "docs" / "json.md").read_text(encoding="utf-8")
    checked = 0
    heading = None
    for match in re.finditer(r"^## .*?\(schema `([a-z-]+)`\)|^```json\n(.*?)\n```", text,
                             re.M | re.S):
        if match.group(1):
            heading = match.group(1)
            continue
        assert heading is not None, "a JSON sample before any schema heading"
        errors = [e.message for e in
                  Draft202012Validator(schema.load(heading)).iter_errors(json.loads(match[2]))]
        assert not errors, f"docs/json.md's {heading} sample: {errors}"
        checked += 1
    assert checked >= 5


def test_the_readmes_command_table_has_every_command_with_all_its_options():
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    start = readme.index("| command | does |")
    rows = readme[start:readme.index("\n\n", start)].splitlines()[2:]
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    missing = []
    for name, parser in sub.choices.items():
        if name in HIDDEN:
            continue
        text = " ".join(r.split(" | ")[0] for r in rows if re.search(rf"`vwt {name}\b", r))
        if not text:
            missing.append(f"vwt {name}")
            continue
        missing += [f"vwt {name} {action.option_strings[-1]}" for action in parser._actions
                    if action.option_strings and "--help" not in action.option_strings
                    and not any(option in text for option in action.option_strings)]
    assert not missing, f"the README's command table lacks: {missing}"
