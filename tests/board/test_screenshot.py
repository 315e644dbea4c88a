"""The README's screenshot comes from tools/board_screenshot.py; it must keep working."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


@pytest.mark.slow
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")
def test_the_screenshot_tool_photographs_a_live_board(tmp_path, sandbox):
    out = tmp_path / "board.png"
    subprocess.run([sys.executable, str(ROOT / "tools" / "board_screenshot.py"), "--out",
                    str(out)], check=True, timeout=180, env=sandbox.env)
    width, height = _png_size(out.read_bytes())
    assert width >= 1000 and 150 <= height <= 1000


def test_the_committed_screenshot_is_a_small_png():
    data = (ROOT / "docs" / "board.png").read_bytes()
    width, _height = _png_size(data)
    assert width >= 1000 and len(data) < 200_000
    assert "docs/board.png" in (ROOT / "README.md").read_text()
