"""Mistral Vibe for the tests: its hook input, `vwt hook vibe` run as Vibe runs it, and the
real Vibe 3.0.3 (its strict `hooks.toml` loader and its hook executors), which needs
Python 3.12 and lives in a virtual environment of its own: `.venv-vibe` at the top of the
repository (`.ci/run` makes it), or the python named by `VWT_TEST_VIBE_PYTHON`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from conftest import VWT_BIN, Result, Vwt

SESSION = "4f3c2a1e-9b8d-4c7e-a6f5-0d1e2f3a4b5c"
DRIVER = Path(__file__).with_name("vibe_driver.py")
_REPO = Path(__file__).resolve().parents[2]
VIBE_PYTHON = os.environ.get("VWT_TEST_VIBE_PYTHON") or str(_REPO / ".venv-vibe" / "bin" / "python")


needs_vibe = pytest.mark.skipif(
    not os.path.isfile(VIBE_PYTHON),
    reason=f"the real Mistral Vibe 3.0.3 is not installed: no {VIBE_PYTHON} (.ci/run makes "
           "that virtual environment with a Python 3.12; or set VWT_TEST_VIBE_PYTHON)")


def vibe_input(event: str, cwd: Path | str, session: str = SESSION,
               parent: str | None = None, **fields: Any) -> dict[str, Any]:
    """The JSON object Vibe 3.0.3 writes to a hook's stdin, key for key as its executor
    builds it (`pre_tool`, `post_tool`, `post_agent`)."""
    data: dict[str, Any] = {"session_id": session, "transcript_path": "", "cwd": str(cwd),
                            "parent_session_id": parent, "hook_event_name": event}
    if event in ("pre_tool", "post_tool"):
        data.update(tool_name="file_system.bash", tool_call_id="call_1",
                    tool_input={"command": "ls"})
    if event == "post_tool":
        data.update(tool_status="success", tool_output=None, tool_output_text="",
                    tool_error=None, duration_ms=0)
    if event == "post_agent":
        data["agent_name"] = "default"
    data.update(fields)
    return data


HOOK_ARGV = [VWT_BIN, "hook", "vibe"]


def hook_command() -> str:
    """The hook's command line, as `vwt install vibe` writes it into hooks.toml."""
    import shlex

    return shlex.join(HOOK_ARGV)


def run_hook(vwt: Vwt, data: dict[str, Any] | str | bytes, cwd: Path | None = None,
             env_extra: dict[str, str | None] | None = None) -> Result:
    """`vwt hook vibe` through `sh -c`, as Vibe starts it, with `data` on stdin."""
    raw = data if isinstance(data, bytes) else (
        data if isinstance(data, str) else json.dumps(data)).encode()
    proc = subprocess.run(["/bin/sh", "-c", hook_command()], input=raw,
                          cwd=cwd or vwt.sandbox.default_cwd, env=vwt.env(env_extra),
                          capture_output=True, timeout=60)
    result = Result(["hook", "vibe"], proc.returncode, proc.stdout.decode(),
                    proc.stderr.decode())
    assert "Traceback" not in result.err, str(result)
    return result


def vibe_loads(path: Path) -> dict[str, Any]:
    """What Vibe's strict loader makes of the hooks file at `path`."""
    return _driver("load", str(path))


def vibe_runs(hooks_file: Path, cwd: Path, events: list[str], env: dict[str, str],
              parent: str | None = None) -> dict[str, Any]:
    """What Vibe does with the hooks of `hooks_file` at `events` of session SESSION in
    `cwd` (a subagent's, with `parent`): see vibe_driver.py."""
    extra = ["--parent", parent] if parent else []
    return _driver("run", str(hooks_file), str(cwd), SESSION, *events, *extra, env=env)


def _driver(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = subprocess.run([VIBE_PYTHON, str(DRIVER), *args], capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)
