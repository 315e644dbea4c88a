"""`<home>/config.toml`: the optional settings the integrations read.

Keys used here: `worktree_include` (list of gitignore-style patterns copied into
new worktrees) and `port_range` (two whole numbers, inclusive). Unknown keys are
ignored; Mistral Vibe keeps its own settings in the same file.
"""

from __future__ import annotations

import os

from .errors import VwtError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_PORT_RANGE = (20000, 29999)


def config_path(home: str) -> str:
    return os.path.join(home, "config.toml")


def read_config(home: str) -> dict[str, Any]:
    """The parsed file, or {} when there is none; a broken file is an error to fix."""
    path = config_path(home)
    try:
        with open(path, "rb") as handle:
            import tomllib

            return tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise VwtError(f"cannot read {path}: {exc}; fix the file") from None


def include_patterns(home: str) -> list[str]:
    value = read_config(home).get("worktree_include", [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise VwtError(f"worktree_include in {config_path(home)} must be a list of strings")
    return list(value)


def port_range(home: str) -> tuple[int, int]:
    value = read_config(home).get("port_range")
    if value is None:
        return DEFAULT_PORT_RANGE
    if (
        not isinstance(value, list) or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
        or not 1 <= value[0] <= value[1] <= 65535
    ):
        raise VwtError(
            f"port_range in {config_path(home)} must be [LOW, HIGH] with 1 <= LOW <= HIGH <= 65535"
        )
    return value[0], value[1]
