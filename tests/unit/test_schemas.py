"""The shipped JSON Schemas: valid draft 2020-12, strict, one for every JSON document."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from vibe_worktree import cli, schema
from vibe_worktree.integrations import mcp_server


def raw(name: str) -> dict[str, Any]:
    with open(os.path.join(schema.SCHEMA_DIR, f"{name}.json"), encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def objects(node: Any, where: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every subschema that describes an object's properties, with where it is."""
    if isinstance(node, dict):
        if "properties" in node:
            yield where, node
        for key, value in node.items():
            yield from objects(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from objects(value, f"{where}/{i}")


def json_commands() -> set[str]:
    """The commands whose parser (or a sub-parser of it) takes --json."""
    import argparse

    def takes_json(parser: argparse.ArgumentParser) -> bool:
        nested = [p for action in parser._actions
                  if isinstance(action, argparse._SubParsersAction)
                  for p in action.choices.values()]
        return "--json" in parser._option_string_actions or any(map(takes_json, nested))

    commands = next(a for a in cli.build_parser()._actions
                    if isinstance(a, argparse._SubParsersAction))
    return {name for name, p in commands.choices.items() if takes_json(p)}


@pytest.mark.parametrize("name", schema.names())
def test_each_schema_is_a_valid_draft_2020_12_schema(name):
    document = raw(name)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document.get("title") and document.get("description"), "say what it describes"
    Draft202012Validator.check_schema(document)
    Draft202012Validator.check_schema(schema.load(name))


@pytest.mark.parametrize("name", schema.names())
def test_each_object_we_own_is_closed_and_names_its_required_keys(name):
    for where, node in objects(raw(name)):
        assert node.get("additionalProperties") is False, f"{name}.json {where}"
        assert set(node["required"]) <= set(node["properties"]), f"{name}.json {where}"


@pytest.mark.parametrize("name", schema.names())
def test_each_ref_points_at_a_shipped_schema_and_is_bundled(name):
    bundled = schema.load(name)
    for other in schema._refs(raw(name)):
        assert other in schema.names(), f"{name}.json refers to a missing {other}.json"
        assert bundled["$defs"][other]["$id"] == f"{other}.json"


def test_every_command_that_prints_json_has_a_schema():
    missing = json_commands() - set(schema.names())
    assert not missing, f"add src/vibe_worktree/schemas/<command>.json for {sorted(missing)}"
    assert {"new", "list", "status", "rm", "snapshot", "restore", "prune"} <= json_commands()


def test_every_mcp_tool_has_a_schema():
    tools = set(mcp_server.DESCRIPTIONS)
    assert {"create", "list", "remove"} <= tools
    missing = {f"mcp-{tool}" for tool in tools} - set(schema.names())
    assert not missing, f"add src/vibe_worktree/schemas/<name>.json for {sorted(missing)}"


def test_no_schema_is_left_without_a_document():
    documents = json_commands() | {f"mcp-{tool}" for tool in mcp_server.DESCRIPTIONS}
    assert set(schema.names()) <= documents


def test_schema_lists_the_names_alone(vwt):
    result = vwt("schema")
    assert result.code == 0, str(result)
    assert result.out.split("\n") == [*schema.names(), ""]
    assert "list" in result.out.split("\n") and not result.out.startswith("mcp-")


def test_schema_name_prints_the_complete_schema(vwt):
    result = vwt("schema", "mcp-list")
    assert result.code == 0, str(result)
    printed = json.loads(result.out)
    assert printed == schema.load("mcp-list")
    assert printed["$defs"]["list"]["type"] == "array"
    Draft202012Validator(printed).validate({"worktrees": []})


@pytest.mark.parametrize("name", ["nope", "../cli", "list.json", ""])
def test_unknown_schema_name_is_a_usage_error_in_one_line(vwt, name):
    result = vwt("schema", name)
    assert result.code == 2 and result.out == ""
    assert len(result.err_lines) == 1 and "`vwt schema` lists them" in result.err
