"""The `conflicts` tool of `vwt mcp` gives the same document as `vwt conflicts --json`."""

from __future__ import annotations

import pytest

from .vwt_support import Box

pytest.importorskip("mcp")
from mcp import Client

from .test_mcp_server import call, with_client


@pytest.mark.slow
def test_conflicts_tool_matches_the_cli_for_every_scope(box: Box) -> None:
    for name in ("alpha", "beta"):
        path = box.new(name)["path"]
        with open(f"{path}/README.md", "w") as handle:
            handle.write(f"{name} was here\n")

    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"name", "all_repos", "path"} <= set(tools["conflicts"].input_schema["properties"])
        everything = await call(client, "conflicts")
        assert everything == box.ok("conflicts", "--json").json()
        assert everything["pairs"][0]["conflicts"] == ["README.md"]
        one = await call(client, "conflicts", name="alpha", path="README.md")
        assert one == box.ok("conflicts", "alpha", "--path", "README.md", "--json").json()
        assert [w["name"] for w in one["worktrees"]] == ["alpha"]
        assert await call(client, "conflicts", all_repos=True) == everything

    with_client(box, body)
