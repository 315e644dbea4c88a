"""The code stays ruff- and mypy-clean: CI fails otherwise."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


def _tool(name: str) -> str:
    candidate = Path(sys.executable).with_name(name)
    found = str(candidate) if candidate.exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed; pip install -e '.[test]'")
    return found


def test_ruff_finds_nothing() -> None:
    result = subprocess.run(
        [_tool("ruff"), "check", "src", "tests", "benchmarks", "tools"], cwd=PROJECT,
        capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing() -> None:
    result = subprocess.run([_tool("mypy")], cwd=PROJECT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
