"""The `land` tool of `vwt mcp` (SPEC §18): the same queue, gate and document as `vwt land`;
the worktree the session created and holds is landed all the same (its own hold does not
count), and let go once removed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import assert_matches_schema

from .vwt_support import Box

pytest.importorskip("mcp")
from mcp import Client

from .test_mcp_server import call, with_client


async def land(client: Client, **arguments: Any) -> tuple[bool, Any]:
    result = await client.call_tool("land", arguments)
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    assert_matches_schema("mcp-land", data)
    return result.is_error, data


@pytest.mark.slow
def test_land_tool_lands_the_sessions_own_worktree_through_the_gate(box: Box) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"names", "ready", "gate", "no_wait", "dry_run"} <= set(
            tools["land"].input_schema["properties"])
        created = await call(client, "create", name="mine", fetch=False)
        path = Path(created["path"])
        (path / "mine.txt").write_text("mine\n")
        box.git("add", "-A", cwd=path)
        box.git("commit", "-q", "-m", "mine", cwd=path)
        error, plan = await land(client, names=["mine"], dry_run=True)
        assert not error and plan["dry_run"] and [p["name"] for p in plan["order"]] == ["mine"]
        error, data = await land(client, names=["mine"], gate="test -f mine.txt")
        assert not error, data
        [result] = data["results"]
        assert result["outcome"] == "merged" and result["removed"] is True
        assert result["gate"]["exit"] == 0 and result["attempts"] == 1
        assert box.git("show", "main:mine.txt") == "mine\n"
        error, data = await land(client, names=["mine"])
        assert error and data["results"][0]["outcome"] == "not_found"

    with_client(box, body)


@pytest.mark.slow
def test_land_tool_reports_a_failed_gate_as_an_error_result(box: Box) -> None:
    path = Path(box.new("failing")["path"])
    (path / "f.txt").write_text("f\n")
    box.git("add", "-A", cwd=path)
    box.git("commit", "-q", "-m", "f", cwd=path)

    async def body(client: Client) -> None:
        error, data = await land(client, names=["failing"], gate="exit 3")
        assert error
        [result] = data["results"]
        assert result["outcome"] == "gate_failed" and result["gate"]["exit"] == 3
        assert Path(result["gate"]["log"]).is_file()

    with_client(box, body)
