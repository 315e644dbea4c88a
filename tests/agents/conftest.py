"""Claude Code's hook inputs and a stand-in host process for the agents tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import VWT_BIN, Vwt

PAYLOADS = Path(__file__).with_name("payloads")
FAKE_HOST = Path(__file__).with_name("fake_host.py")
SESSION = "663b9425-8800-40ee-afa9-d66c26cbb3a0"


def payload(event: str, **fields: Any) -> dict[str, Any]:
    """The recorded input of `event`; `fields` replace or add keys (None drops one). Every
    `{placeholder}` of the recording must be given."""
    data = json.loads((PAYLOADS / f"{event}.json").read_text())
    for key, value in fields.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = str(value) if isinstance(value, Path) else value
    unfilled = [k for k, v in data.items() if isinstance(v, str) and v.startswith("{")]
    assert not unfilled, f"fill in {unfilled}"
    return data


def hook(vwt: Vwt, data: dict[str, Any] | str, **kw: Any) -> Any:
    text = data if isinstance(data, str) else json.dumps(data)
    return vwt("hook", "claude-code", input=text, **kw)


@dataclass
class Host:
    """A fake Claude Code that ran the hook and lives on until killed."""

    process: subprocess.Popen[str]
    code: int
    out: str
    err: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def fake_host(vwt: Vwt, tmp_path: Path) -> Iterator[Callable[..., Host]]:
    started: list[Host] = []

    def start(data: dict[str, Any], keep_stdin_open: bool = False, cwd: Path | None = None,
              timeout: float = 60) -> Host:
        file = tmp_path / f"payload-{len(started)}.json"
        file.write_text(json.dumps(data))
        process = subprocess.Popen(
            [sys.executable, str(FAKE_HOST), VWT_BIN, str(file),
             "open" if keep_stdin_open else "close"],
            cwd=cwd or vwt.sandbox.default_cwd, env=vwt.env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, text=True, start_new_session=True,
        )
        assert process.stdout is not None
        line = _read_line(process, timeout)
        result = json.loads(line)
        host = Host(process, result["code"], result["out"], result["err"])
        started.append(host)
        assert "Traceback" not in host.err, host.err
        return host

    yield start
    for host in started:
        host.kill()


def _read_line(process: subprocess.Popen[str], timeout: float) -> str:
    import select

    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    if not ready:
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"the hook did not finish within {timeout} s (stdout held open?)")
    return process.stdout.readline()


def wait_until(condition: Callable[[], bool], timeout: float) -> float:
    """Seconds it took for `condition` to hold; AssertionError after `timeout`."""
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"not within {timeout} s")
        time.sleep(0.02)
    return time.monotonic() - start
