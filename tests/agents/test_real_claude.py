"""The real client: `claude --worktree NAME -p hi` with vwt's hooks installed makes its
worktree through vwt, which holds it while claude lives and lets go once claude is killed.

Claude Code gets a dummy API key and a base URL whose port accepts connections and never
answers: it runs the WorktreeCreate hook at start-up, then waits on the API until killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import VWT_BIN

from .conftest import wait_until

CLAUDE = shutil.which("claude")
pytestmark = pytest.mark.skipif(CLAUDE is None, reason="claude (npm @anthropic-ai/claude-code) "
                                                       "is not installed")


@pytest.fixture
def silent_api() -> Iterator[str]:
    """A local URL whose server accepts every connection and never says a word."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def claude_env(vwt, api: str) -> dict[str, str]:
    env = vwt.env({"CLAUDE_CONFIG_DIR": None, "CLAUDECODE": None,
                   "CLAUDE_CODE_ENTRYPOINT": None})
    env.update(
        PATH=f"{Path(VWT_BIN).parent}{os.pathsep}{env.get('PATH', '')}",
        ANTHROPIC_API_KEY="sk-ant-dummy-key-for-tests", ANTHROPIC_BASE_URL=api,
        DISABLE_AUTOUPDATER="1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    return env


@pytest.mark.slow
def test_claude_worktree_is_made_held_and_released_through_vwt(vwt, repo, silent_api,
                                                                 tmp_path):
    env = claude_env(vwt, silent_api)
    installed = vwt.ok("install", "claude-code", "--json", env_extra={"PATH": env["PATH"]})
    assert installed.json()["added"][0] == "WorktreeCreate"
    log = (tmp_path / "claude.log").open("w")
    started = time.monotonic()
    claude = subprocess.Popen([str(CLAUDE), "--worktree", "feat/04-config", "-p", "hi"],
                              cwd=repo.path, env=env, stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        checkout = repo.checkout("feat-04-config")
        wait_until(lambda: any(h.name.startswith("claude-")
                               for h in repo.live_holders("feat-04-config"))
                   and "agent" in repo.record("feat-04-config"), 60)
        made_after = time.monotonic() - started
        [holder] = repo.live_holders("feat-04-config")
        record = repo.record("feat-04-config")
        print(f"claude's worktree made and held {made_after:.2f} s after start: "
              f"{checkout} on {repo.current_branch(checkout)}, holder {holder.name}")
        assert record["agent"] == "claude-code" and record["session"]
        assert record["branch"] == "feat/04-config"
        assert holder.name == f"claude-{record['session']}-{claude.pid}"
        assert claude.poll() is None, "claude exited: it could not stay alive on a silent API"
        assert not (repo.path / ".claude" / "worktrees").exists(), "claude made its own"
        assert vwt("rm", "feat-04-config", "-y", cwd=repo.path).code == 4
        row = vwt.entry("feat-04-config", cwd=repo.path)
        assert row["held"] and row["agent"] == "claude-code"
    finally:
        os.killpg(claude.pid, signal.SIGKILL)
        claude.wait()
        log.close()
    released = wait_until(lambda: not repo.live_holders("feat-04-config"), 2.0)
    print(f"released {released:.2f} s after claude was killed")
    print((tmp_path / "claude.log").read_text()[-2000:])
    assert vwt.entry("feat-04-config", cwd=repo.path)["holders"] == 0
    vwt.ok("rm", "feat-04-config", "-y", cwd=repo.path)
