"""`vwt mcp`: an MCP server on stdio (SPEC §4)."""

from __future__ import annotations

import subprocess

import pytest

from conftest import MCP_INSTALLED, VWT_BIN, mcp_answer, mcp_send


@pytest.mark.skipif(MCP_INSTALLED, reason="the mcp extra is installed")
def test_mcp_without_the_extra_fails_cleanly(repo, vwt):
    result = vwt("mcp", input="")
    assert result.code != 0
    assert "mcp" in result.err
    assert 1 <= len(result.err_lines) <= 2, result.err


@pytest.mark.skipif(not MCP_INSTALLED, reason="needs the optional mcp extra")
def test_mcp_server_initializes_and_lists_tools(repo, vwt):
    proc = subprocess.Popen([VWT_BIN, "mcp"], cwd=repo.path, env=vwt.env(), text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        mcp_send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                               "clientInfo": {"name": "acceptance", "version": "0"}}})
        init = mcp_answer(proc, 1)
        assert init is not None, f"vwt mcp did not answer:\n{proc.stderr.read()}"
        assert "result" in init, init
        assert "serverInfo" in init["result"]
        assert "tools" in init["result"].get("capabilities", {})
        mcp_send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        mcp_send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        listed = mcp_answer(proc, 2)
        assert listed is not None, "no answer to tools/list"
        tools = listed["result"]["tools"]
        assert len(tools) >= 5, tools
        for tool in tools:
            assert tool["name"]
            assert tool["inputSchema"]["type"] == "object"
        text = " ".join(t["name"] for t in tools)
        for op in ("list", "status", "snapshot", "restore", "prune"):
            assert op in text, (op, text)
        proc.stdin.close()
        assert proc.wait(timeout=15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
