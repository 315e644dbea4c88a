"""The `foreign` and `adopt` tools of `vwt mcp` give the documents of the CLI's `--json`."""

from __future__ import annotations

import json

import pytest

from conftest import assert_matches_schema

from .vwt_support import Box

pytest.importorskip("mcp")
from mcp import Client

from .test_mcp_server import call, with_client


@pytest.mark.slow
def test_foreign_and_adopt_tools_match_the_cli_and_report_refusals(box: Box) -> None:
    claude = box.repo / ".claude" / "worktrees" / "feat"
    box.git("worktree", "add", "-q", "-b", "worktree-feat", str(claude))
    box.git("worktree", "add", "-q", "--detach", str(box.tmp / "detached"))

    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert {"paths", "all", "directory"} <= set(tools["adopt"].input_schema["properties"])
        assert {"all_repos", "directory"} <= set(tools["foreign"].input_schema["properties"])
        listed = await call(client, "foreign")
        assert listed == box.ok("foreign", "--json").json()
        assert {w["made_by"] for w in listed["worktrees"]} == {"claude-code", "git"}
        adopted = await call(client, "adopt", paths=[".claude/worktrees/feat"],
                             directory=str(box.repo))
        assert [a["from"] for a in adopted["adopted"]] == [str(claude)]
        refused = await client.call_tool("adopt", {"all": True})
        assert refused.is_error
        assert_matches_schema("mcp-adopt", refused.structured_content)
        document = json.loads(refused.content[0].text)
        assert [r["reason"] for r in document["refused"]] == ["detached_head"]

    with_client(box, body)
    assert [r["name"] for r in box.ok("list", "--json").json()] == ["feat"]
