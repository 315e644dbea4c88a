"""The project's own files agree with each other: CI, README, version, packaging."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

import vibe_worktree

PROJECT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command_then_the_wheel_smoke_test():
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    ci = (PROJECT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    command = next(line for line in ci if "python -m pytest" in line)
    assert f"```sh\n{command}\n```" in readme
    assert ci.index(".ci/smoke-wheel") > ci.index(command)
    assert (PROJECT / ".ci" / "smoke-wheel").stat().st_mode & 0o111


def test_the_version_has_one_source():
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "vibe_worktree.__version__"}
    assert importlib.metadata.version("vibe-worktree") == vibe_worktree.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", vibe_worktree.__version__)


def test_the_wheel_ships_the_skill_the_schemas_and_the_type_marker():
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["vibe_worktree"]
    assert {"py.typed", "SKILL.md", "schemas/*.json"} <= set(shipped)


def test_the_changelog_has_an_unreleased_section():
    changelog = (PROJECT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog\n") and "\n## Unreleased\n" in changelog
