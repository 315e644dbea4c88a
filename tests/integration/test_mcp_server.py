"""`vwt mcp` end to end, driven by the MCP SDK's own client over stdio."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import assert_matches_schema

from .vwt_support import VWT, Box

mcp = pytest.importorskip("mcp")
from mcp import Client, StdioServerParameters  # noqa: E402

Call = Callable[..., Awaitable[Any]]


def with_client(box: Box, body: Callable[[Client], Awaitable[None]]) -> None:
    params = StdioServerParameters(command=VWT, args=["mcp"], env=box.env, cwd=str(box.repo))

    async def main() -> None:
        async with Client(params, read_timeout_seconds=60) as client:
            await body(client)

    asyncio.run(asyncio.wait_for(main(), 120))


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """The tool's JSON text result, parsed; asserts the text and structured forms agree and
    match the tool's shipped schema."""
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    data = json.loads(result.content[0].text)
    structured = data if isinstance(data, dict) else {"worktrees": data}
    assert result.structured_content == structured
    assert_matches_schema(f"mcp-{tool}", result.structured_content)
    return data


def holders(box: Box, name: str) -> int:
    rows = box.ok("list", "--json").json()
    return next(r["holders"] for r in rows if r["name"] == name)


class HeldByAnotherSession:
    """`vwt run NAME -- sleep 30` in a process of its own, once its hold shows, for the
    block; killed afterwards."""

    def __init__(self, box: Box, name: str) -> None:
        self.box, self.name = box, name

    def __enter__(self) -> None:
        self.proc = subprocess.Popen([VWT, "run", self.name, "--", "sleep", "30"],
                                     cwd=self.box.repo, env=self.box.env)
        for _ in range(100):
            if holders(self.box, self.name) == 1:
                break
            time.sleep(0.05)

    def __exit__(self, *_exc: object) -> None:
        self.proc.kill()
        self.proc.wait()


def test_tools_are_listed_with_descriptions_and_object_schemas(box: Box) -> None:
    async def body(client: Client) -> None:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) >= {"create", "list", "status", "remove", "snapshot", "restore",
                              "prune"}
        for tool in tools.values():
            assert tool.description and len(tool.description) > 40
            assert tool.input_schema["type"] == "object"
        assert "name" in tools["remove"].input_schema["required"]

    with_client(box, body)


def test_created_worktrees_are_held_until_the_client_disconnects(box: Box) -> None:
    async def body(client: Client) -> None:
        named = await call(client, "create", name="feature")
        assert named["name"] == "feature" and named["created"] is True
        auto = await call(client, "create", prompt="Fix the login bug")
        assert auto["branch"] == "vibe/fix-the-login-bug"
        assert holders(box, "feature") == 1 and holders(box, auto["name"]) == 1
        refused = box.vwt("rm", "feature", "--json")
        assert refused.code == 4 and refused.json()["outcome"] == "kept_in_use"
        again = await call(client, "create", name="feature")
        assert again["created"] is False and holders(box, "feature") == 1

    with_client(box, body)
    assert holders(box, "feature") == 0
    assert all(r["holders"] == 0 for r in box.ok("list", "--json").json())


@pytest.mark.slow
def test_list_and_status_match_the_cli_json(box: Box) -> None:
    box.new("a")

    async def body(client: Client) -> None:
        listed = await call(client, "list")
        assert listed == box.ok("list", "--json").json()
        status = await call(client, "status", name="a")
        assert status == box.ok("status", "a", "--json").json()
        quick = await call(client, "list", status=False)
        assert quick[0]["changes"] is None

    with_client(box, body)


def test_remove_refuses_dirty_work_until_confirmed_and_restore_brings_it_back(box: Box) -> None:
    async def body(client: Client) -> None:
        created = await call(client, "create", name="dirty")
        with open(f"{created['path']}/notes.txt", "w") as handle:
            handle.write("unsaved\n")
        refused = await call(client, "remove", name="dirty")
        assert refused["outcome"] == "kept_dirty" and refused["message"]
        assert refused["snapshot_ref"] is None
        assert holders(box, "dirty") == 1, "a refused removal keeps the session's hold"
        removed = await call(client, "remove", name="dirty", confirm=True)
        assert removed["outcome"] == "removed"
        assert removed["snapshot_ref"] == "refs/vibe/reaped/dirty"
        restored = await call(client, "restore", name="dirty")
        assert restored["created"] is True
        with open(f"{restored['path']}/notes.txt") as handle:
            assert handle.read() == "unsaved\n"
        assert holders(box, "dirty") == 1

    with_client(box, body)


@pytest.mark.slow
def test_remove_never_overrides_another_sessions_hold(box: Box) -> None:
    box.new("busy")
    with HeldByAnotherSession(box, "busy"):

        async def body(client: Client) -> None:
            result = await call(client, "remove", name="busy", confirm=True)
            assert result["outcome"] == "kept_in_use"

        with_client(box, body)


@pytest.mark.slow
def test_merge_never_overrides_another_sessions_hold_even_with_keep(box: Box) -> None:
    path = box.new("busy")["path"]
    with open(f"{path}/work.txt", "w") as handle:
        handle.write("work\n")
    box.git("add", "work.txt", cwd=path)
    box.git("commit", "-q", "-m", "work", cwd=path)
    main = box.git("rev-parse", "main")
    with HeldByAnotherSession(box, "busy"):

        async def body(client: Client) -> None:
            for keep in (False, True):
                result = await call(client, "merge", name="busy", keep=keep)
                assert result["outcome"] == "kept_in_use" and result["message"]

        with_client(box, body)
        assert box.git("rev-parse", "main") == main


@pytest.mark.slow
def test_merge_of_a_worktree_the_session_created_lands_it(box: Box) -> None:
    async def body(client: Client) -> None:
        created = await call(client, "create", name="mine")
        with open(f"{created['path']}/mine.txt", "w") as handle:
            handle.write("mine\n")
        box.git("add", "mine.txt", cwd=created["path"])
        box.git("commit", "-q", "-m", "mine", cwd=created["path"])
        listed = {r["name"]: r for r in await call(client, "list")}
        assert listed["mine"]["integrated"] is None and listed["mine"]["target"] == "main"
        result = await call(client, "merge", name="mine")
        assert result["outcome"] == "merged" and result["removed"] is True

    with_client(box, body)
    assert box.git("show", "main:mine.txt") == "mine\n"


@pytest.mark.slow
def test_snapshot_and_prune(box: Box) -> None:
    async def body(client: Client) -> None:
        await call(client, "create", name="keep-me")
        snap = await call(client, "snapshot", name="keep-me")
        assert snap["ref"] == "refs/vibe/reaped/keep-me" and len(snap["commit"]) == 40
        plan = await call(client, "prune", keep=0, dry_run=True)
        assert plan["kept"] == [{"name": "keep-me", "bucket": plan["kept"][0]["bucket"],
                                 "reason": plan["kept"][0]["reason"]}]
        assert plan["removed"] == []

    with_client(box, body)
    box.new("other")
    assert box.ok("prune", "--keep", "0", "--json").json()["removed"]


def test_every_tool_result_matches_its_schema(box: Box) -> None:
    seen: set[str] = set()

    async def checked(client: Client, tool: str, **arguments: Any) -> Any:
        seen.add(tool)
        return await call(client, tool, **arguments)

    async def body(client: Client) -> None:
        created = await checked(client, "create", name="tour")
        await checked(client, "list")
        await checked(client, "list", status=False)
        await checked(client, "status", name="tour")
        await checked(client, "snapshot", name="tour")
        await checked(client, "conflicts", name="tour")
        env = await checked(client, "env", name="tour")
        assert env["env"]["VWT_PORT"] == str(created["ports"][0])
        with open(f"{created['path']}/notes.txt", "w") as handle:
            handle.write("unsaved\n")
        assert (await checked(client, "remove", name="tour"))["message"]
        await checked(client, "remove", name="tour", confirm=True)
        await checked(client, "restore", name="tour")
        assert (await checked(client, "sync", name="tour"))["outcome"] == "kept_dirty"
        merged = await checked(client, "merge", name="tour", commit=True, message="Notes")
        assert merged["outcome"] == "merged" and merged["removed"] is True
        box.git("worktree", "add", "-q", "-b", "theirs", str(box.tmp / "theirs"))
        assert (await checked(client, "foreign"))["worktrees"][0]["branch"] == "theirs"
        adopted = await checked(client, "adopt", paths=[str(box.tmp / "theirs")])
        assert adopted["adopted"][0]["name"] == "theirs"
        planned = await checked(client, "land", names=["theirs"], dry_run=True)
        assert [p["name"] for p in planned["order"]] == ["theirs"]
        assert (await checked(client, "prune", keep=0, dry_run=True,
                              max_size="1G"))["freed_bytes"] == 0
        assert (await checked(client, "pool"))["pools"][0]["ready"] == 0
        assert (await checked(client, "ps"))["mismatches"] == []
        missing = await client.call_tool("remove", {"name": "nobody"})
        assert missing.is_error
        assert_matches_schema("mcp-remove", missing.structured_content)
        tools = {t.name for t in (await client.list_tools()).tools}
        assert seen == tools

    with_client(box, body)


@pytest.mark.slow
def test_ps_is_the_cli_document_and_check_is_an_error_on_a_mismatch(box: Box) -> None:
    import socket
    import sys

    path = box.new("web")["path"]
    port = box.ok("port", "web", "--json").json()["port"]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1"], cwd=box.repo, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)

        async def body(client: Client) -> None:
            found = await call(client, "ps")
            assert found == box.ok("ps", "--json").json()
            assert found["mismatches"][0]["pid"] == server.pid
            checked = await client.call_tool("ps", {"name": "web", "check": True})
            assert checked.is_error
            assert_matches_schema("mcp-ps", checked.structured_content)
            assert Path(path).is_dir()

        with_client(box, body)
    finally:
        server.kill()
        server.wait()


def test_errors_are_tool_errors_with_the_cli_message(box: Box) -> None:
    async def body(client: Client) -> None:
        result = await client.call_tool("status", {"name": "nope"})
        assert result.is_error
        assert "nope" in result.content[0].text
        bad = await client.call_tool("create", {"name": "a:b"})
        assert bad.is_error and "exit 2" in bad.content[0].text

    with_client(box, body)


@pytest.mark.slow
def test_create_runs_hooks_as_a_caller_without_a_terminal(box: Box) -> None:
    """User hooks run; an unapproved project hook is skipped, never asked about."""
    (box.repo / ".vibe").mkdir()
    marker = box.tmp / "project-ran"
    (box.repo / ".vibe" / "worktree.toml").write_text(
        f'[[hooks]]\nname = "deps"\ntype = "post_create"\ncommand = "touch {marker}"\n')
    box.git("add", ".vibe")
    box.git("commit", "-q", "-m", "hooks")
    box.vibe_home.mkdir(parents=True, exist_ok=True)
    (box.vibe_home / "worktree.toml").write_text(
        '[[hooks]]\nname = "mine"\ntype = "post_create"\ncommand = "touch mine.txt"\n')

    async def body(client: Client) -> None:
        created = await call(client, "create", name="feature")
        statuses = {h["name"]: h["status"] for h in created["hooks"]}
        assert statuses == {"mine": "ok", "deps": "skipped_unapproved"}

    with_client(box, body)
    assert not marker.exists()
    assert list((box.vibe_home / "worktrees").glob("*/feature/mine.txt"))


@pytest.mark.slow
def test_list_and_status_carry_an_agent_sessions_activity(box: Box) -> None:
    path = box.new("agent-work")["path"]
    box.ok("hook", "claude-code", input=json.dumps(
        {"session_id": "s-9", "hook_event_name": "UserPromptSubmit", "cwd": path}))

    async def body(client: Client) -> None:
        [row] = await call(client, "list")
        assert row["activity"]["state"] == "working" and row["activity"]["session"] == "s-9"
        status = await call(client, "status", name="agent-work")
        assert status["activity"] == row["activity"]

    with_client(box, body)


def test_remove_refuses_a_worktree_a_process_runs_in_and_stop_stops_it_first(box: Box) -> None:
    path = box.new("busy")["path"]
    sleeper = subprocess.Popen(["sleep", "60"], cwd=path)
    try:
        async def body(client: Client) -> None:
            refused = await call(client, "remove", name="busy", confirm=True)
            assert refused["outcome"] == "kept_in_use"
            assert [p["pid"] for p in refused["processes"]] == [sleeper.pid]
            assert Path(path).is_dir() and sleeper.poll() is None
            removed = await call(client, "remove", name="busy", confirm=True, stop=True)
            assert removed["outcome"] == "removed"
            assert removed["stopped"] == [sleeper.pid]

        with_client(box, body)
        assert sleeper.wait(timeout=10) == -15  # SIGTERM was enough
        assert not Path(path).exists()
    finally:
        sleeper.kill()
        sleeper.wait()
