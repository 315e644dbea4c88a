"""The project's own files agree with each other: CI, README, version, packaging."""

from __future__ import annotations

import fnmatch
import importlib.metadata
import re
import tomllib
from pathlib import Path

import vibe_worktree

PROJECT = Path(__file__).resolve().parents[2]


def test_ci_runs_the_readme_test_command_then_the_slow_tests_and_benchmarks_then_the_wheel():
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    ci = (PROJECT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    command, slow = [line for line in ci if "python -m pytest" in line]
    bench = next(line for line in ci if "python -m benchmarks" in line)
    for line in (command, slow.removesuffix(" || exit 1"),
                 bench.removesuffix(" || benchmarks=$?")):
        assert f"```sh\n{line}\n```" in readme, line
    # the test command tests: no timing in it, and a failed benchmark never stops it
    assert "benchmarks" not in command and command.endswith("python -m pytest -n 2")
    assert slow.endswith("-m slow || exit 1") and bench.endswith("|| benchmarks=$?")
    order = [ci.index(bench), ci.index("readme_test_command || exit 1"), ci.index(slow),
             ci.index(next(line for line in ci if line.startswith('[ "$benchmarks" = 0 ]'))),
             ci.index(".ci/smoke-wheel")]
    assert order == sorted(order)
    assert (PROJECT / ".ci" / "smoke-wheel").stat().st_mode & 0o111


def test_the_default_run_leaves_the_slow_tests_to_ci():
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "-m 'not slow'" in pyproject["tool"]["pytest"]["ini_options"]["addopts"]


def test_the_version_has_one_source():
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "vibe_worktree.__version__"}
    assert importlib.metadata.version("vibe-worktree") == vibe_worktree.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", vibe_worktree.__version__)


def test_the_wheel_ships_every_data_file_of_the_package():
    pyproject = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = pyproject["tool"]["setuptools"]["package-data"]["vibe_worktree"]
    assert {"py.typed", "integrations/SKILL.md", "schemas/*.json"} <= set(shipped)
    package = PROJECT / "src" / "vibe_worktree"
    data = [path.relative_to(package).as_posix() for path in package.rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc")
            and "__pycache__" not in path.parts]
    assert "schemas/new.json" in data
    unshipped = [f for f in data if not any(fnmatch.fnmatch(f, glob) for glob in shipped)]
    assert not unshipped, f"add them to [tool.setuptools.package-data]: {unshipped}"


def test_the_changelog_has_an_unreleased_section():
    changelog = (PROJECT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert changelog.startswith("# Changelog\n") and "\n## Unreleased\n" in changelog
