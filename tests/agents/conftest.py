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
    code: int | None  # None: detached, see `ended`
    out: str
    err: str
    outdir: Path | None = None  # detached: where the hook's out, err and code go

    @property
    def pid(self) -> int:
        return self.process.pid

    def ended(self) -> bool:
        """A detached hook has ended (its exit status is written); then `code`, `out` and
        `err` are its own."""
        assert self.outdir is not None
        if not (self.outdir / "code").is_file():
            return False
        self.code = int((self.outdir / "code").read_text())
        self.out = (self.outdir / "out").read_text()
        self.err = (self.outdir / "err").read_text()
        return True

    def kill(self) -> None:
        """SIGKILL the host's whole process group: the hook's shell and vwt with it."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def kill_alone(self) -> None:
        """SIGKILL the host process only: the hook's shell and vwt live on."""
        self.process.kill()
        self.process.wait()


@pytest.fixture
def fake_host(vwt: Vwt, tmp_path: Path) -> Iterator[Callable[..., Host]]:
    started: list[Host] = []

    def start(data: dict[str, Any], keep_stdin_open: bool = False, cwd: Path | None = None,
              timeout: float = 60, detached: bool = False) -> Host:
        """`detached`: return at once, while the hook still runs (see `Host.ended`)."""
        file = tmp_path / f"payload-{len(started)}.json"
        file.write_text(json.dumps(data))
        outdir = tmp_path / f"hook-{len(started)}" if detached else None
        if outdir is not None:
            outdir.mkdir()
        process = subprocess.Popen(
            [sys.executable, str(FAKE_HOST), VWT_BIN, str(file),
             "open" if keep_stdin_open else "close", *([str(outdir)] if outdir else [])],
            cwd=cwd or vwt.sandbox.default_cwd, env=vwt.env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, text=True, start_new_session=True,
        )
        assert process.stdout is not None
        line = _read_line(process, timeout)
        result = json.loads(line)
        host = Host(process, result["code"], result["out"], result["err"], outdir)
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
