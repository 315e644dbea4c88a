"""The `sync` tool of `vwt mcp` resolves a conflict as the CLI does (SPEC §8 "Resolving a
conflict"): stop at it, continue once resolved, or abort."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conftest import assert_matches_schema

from .vwt_support import Box

pytest.importorskip("mcp")
from mcp import Client

from .test_mcp_server import with_client


async def sync(client: Client, **arguments: Any) -> tuple[bool, Any]:
    result = await client.call_tool("sync", arguments)
    data = json.loads(result.content[0].text)
    assert result.structured_content == data
    assert_matches_schema("mcp-sync", data)
    return result.is_error, data


def conflicting(box: Box, name: str) -> str:
    path: str = box.new(name)["path"]
    with open(f"{path}/README.md", "w") as handle:
        handle.write(f"{name}\n")
    box.git("commit", "-q", "-am", name, cwd=path)
    return path


@pytest.mark.slow
def test_sync_tool_stops_continues_and_aborts(box: Box) -> None:
    fixed = conflicting(box, "fixed")
    undone = conflicting(box, "undone")
    with open(box.repo / "README.md", "w") as handle:
        handle.write("main moved\n")
    box.git("commit", "-q", "-am", "main moves")
    before = box.git("rev-parse", "undone").strip()

    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"stop_on_conflict", "resume"} <= set(tools["sync"].input_schema["properties"])
        error, data = await sync(client, name="fixed", fetch=False, stop_on_conflict=True)
        assert error and data["outcome"] == "conflict_stopped"
        assert data["conflicts"] == ["README.md"] and "--continue" in data["message"]
        with open(f"{fixed}/README.md", "w") as handle:
            handle.write("both\n")
        box.git("add", "README.md", cwd=fixed)
        error, data = await sync(client, name="fixed", resume="continue")
        assert not error and data["outcome"] == "synced"
        error, data = await sync(client, name="undone", fetch=False, stop_on_conflict=True)
        assert error and data["outcome"] == "conflict_stopped"
        error, data = await sync(client, name="undone", resume="abort")
        assert not error and data["outcome"] == "aborted" and data["head"] == before

    with_client(box, body)
    assert box.git("rev-parse", "fixed~1") == box.git("rev-parse", "main")
    assert box.git("status", "--porcelain", cwd=undone) == ""
    assert box.git("rev-parse", "HEAD", cwd=undone).strip() == before
