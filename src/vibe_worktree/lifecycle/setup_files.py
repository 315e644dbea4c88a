"""Setup written for other tools, used by `vwt` too (SPEC §19): Cursor's
`.cursor/worktrees.json`, Conductor's `conductor.json` and Codex's
`.codex/environments/environment.toml` become hooks, so a project does not write its setup a
fourth time.

Only the first of the three files present in the main checkout is read, and only for the hook
types the repository's own `.vibe/worktree.toml` leaves undefined. Each imported command is a
hook like any other (approved by its exact text, listed by `vwt hooks`, run by the pool's fill),
whose `source` is the file it came from. A file that cannot be parsed or has the wrong shape
is one problem, naming the file: no hook comes from it, and the caller warns and goes on.

What each tool's file holds, and what it becomes:

- Cursor: `setup-worktree-unix`, else `setup-worktree` (`setup-worktree-windows` is not ours):
  an array of commands, run in order in one shell that stops at the first failure (the
  commands share a shell in Cursor: a `cd` or a variable carries to the next), or a string
  naming a script relative to the JSON file. -> post_create `cursor-setup`.
- Conductor: `scripts.setup` -> post_create `conductor-setup`, `scripts.archive` ->
  pre_remove `conductor-archive` (`scripts.run` starts a dev server: not a hook).
- Codex: `[setup] script` -> post_create `codex-setup`, `[cleanup] script` -> pre_remove
  `codex-cleanup`; `[setup.linux]` / `[setup.darwin]` (and the same under `[cleanup]`) win
  on that platform, as in the Codex app. An empty script is no hook.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Collection
from typing import Any

from ..core.light import NamedTuple

CURSOR = ".cursor/worktrees.json"
CONDUCTOR = "conductor.json"
CODEX = ".codex/environments/environment.toml"
FILES = (CURSOR, CONDUCTOR, CODEX)  # the first one present wins
# The other tools put no limit on a setup script (a first `npm ci` and a build can take long);
# this one only stops a script that hangs, as the land gate's default does.
TIMEOUT = 1800.0
_PLATFORM = "darwin" if sys.platform == "darwin" else "linux"
POST_CREATE = "post_create"  # the hook types, as hooks.py names them
PRE_REMOVE = "pre_remove"


class Command(NamedTuple):
    """One imported command: what hooks.py makes a hook of."""

    name: str
    type: str
    command: str
    source: str  # the file it came from, relative to the main checkout
    file: str  # the same, absolute
    timeout: float = TIMEOUT

    @property
    def description(self) -> str:
        return f"from {self.source}"


class Imported(NamedTuple):
    """What the main checkout's setup file gives: its commands, or why it gives none."""

    source: str | None  # the file read, relative to the main checkout; None: none present
    hooks: tuple[Command, ...] = ()
    problem: str | None = None  # one line naming the file and what is wrong with it


class _Bad(Exception):
    """The file's shape is wrong: `str(exc)` says how."""


def present(repo_root: str) -> str | None:
    """The first of the three files the main checkout has (one stat each, at most)."""
    return next((f for f in FILES if os.path.lexists(f"{repo_root}/{f}")), None)


def imported_hooks(repo_root: str, undefined: Collection[str]) -> Imported:
    """The hooks of the types in `undefined` (those `.vibe/worktree.toml` does not define)
    that the main checkout's first setup file gives. Nothing is read when no type is left."""
    if not {POST_CREATE, PRE_REMOVE} & set(undefined):
        return Imported(None)
    source = present(repo_root)
    if source is None:
        return Imported(None)
    path = f"{repo_root}/{source}"
    try:
        found = _READERS[source](path)
    except _Bad as exc:
        return Imported(source, (), f"{path}: {exc}; no hook came from it")
    return Imported(source, tuple(Command(name, kind, command, source, path)
                                  for name, kind, command in found if kind in undefined))


def is_imported(source: str) -> bool:
    """A hook's `source` says it came from another tool's file."""
    return source in FILES


def tool_environment(source: str, *, path: str, name: str, repo_root: str,
                     port: str) -> dict[str, str]:
    """The variables the tool whose file `source` is sets for its own setup scripts, for the
    worktree at `path` named `name` (`port`: its VWT_PORT)."""
    if source == CURSOR:
        return {"ROOT_WORKTREE_PATH": repo_root}
    if source == CONDUCTOR:
        return {"CONDUCTOR_ROOT_PATH": repo_root, "CONDUCTOR_WORKSPACE_PATH": path,
                "CONDUCTOR_WORKSPACE_NAME": name, "CONDUCTOR_PORT": port}
    if source == CODEX:
        return {"CODEX_WORKTREE_PATH": path, "CODEX_SOURCE_TREE_PATH": repo_root}
    return {}


# -- reading each tool's file -----------------------------------------------------------------
Found = tuple[str, str, str]  # (name, type, command)


def _read_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read(1 << 20)
    except IsADirectoryError:
        raise _Bad("is a folder, not a file") from None
    except OSError as exc:
        raise _Bad(f"cannot be read ({exc.strerror})") from None


def _json_object(path: str) -> dict[str, Any]:
    import json

    try:
        data = json.loads(_read_bytes(path).decode("utf-8"))
    except UnicodeDecodeError:
        raise _Bad("is not UTF-8 text") from None
    except ValueError as exc:
        raise _Bad(f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _Bad("must hold a JSON object")
    return data


def _cursor(path: str) -> list[Found]:
    data = _json_object(path)
    for key in ("setup-worktree-unix", "setup-worktree"):
        if key in data:
            command = _cursor_command(path, key, data[key])
            return [] if command is None else [("cursor-setup", POST_CREATE, command)]
    return []


def _cursor_command(path: str, key: str, value: object) -> str | None:
    if isinstance(value, list):
        if not all(isinstance(c, str) for c in value):
            raise _Bad(f"{key!r} must be an array of commands (strings) or a script's path")
        lines = [c for c in value if c.strip()]
        # one shell for all of them (Cursor's own run shares one: `cd app` reaches the next
        # command), stopping at the first that fails
        return "set -e\n" + "\n".join(lines) if lines else None
    if isinstance(value, str):
        return _script(path, key, value) if value.strip() else None
    raise _Bad(f"{key!r} must be an array of commands (strings) or a script's path")


def _script(path: str, key: str, relative: str) -> str:
    """How to run a script named relative to the JSON file: by itself when it is executable
    (its `#!` line picks the interpreter), else with its `#!` line's interpreter, else sh."""
    script = os.path.normpath(os.path.join(os.path.dirname(path), relative))
    try:
        info = os.stat(script)
    except OSError:
        raise _Bad(f"{key!r} names the script {relative!r}, and {script} is not there"
                   ) from None
    if not stat.S_ISREG(info.st_mode):
        raise _Bad(f"{key!r} names {script}, which is not a file")
    import shlex

    quoted = shlex.quote(script)
    if info.st_mode & 0o111:
        return quoted
    return f"{_interpreter(script)} {quoted}"


def _interpreter(script: str) -> str:
    try:
        with open(script, "rb") as handle:
            first = handle.readline(256)
    except OSError:
        return "/bin/sh"
    line = first.decode("utf-8", "replace").strip()
    return line[2:].strip() if line.startswith("#!") and line[2:].strip() else "/bin/sh"


def _conductor(path: str) -> list[Found]:
    scripts = _json_object(path).get("scripts", {})
    if not isinstance(scripts, dict):
        raise _Bad("'scripts' must be an object")
    found = []
    for key, name, kind in (("setup", "conductor-setup", POST_CREATE),
                            ("archive", "conductor-archive", PRE_REMOVE)):
        value = scripts.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise _Bad(f"'scripts.{key}' must be a string (a shell command)")
        if value.strip():
            found.append((name, kind, value))
    return found


def _codex(path: str) -> list[Found]:
    import tomllib

    try:
        data = tomllib.loads(_read_bytes(path).decode("utf-8"))
    except UnicodeDecodeError:
        raise _Bad("is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise _Bad(f"is not valid TOML ({exc})") from None
    found = []
    for table, name, kind in (("setup", "codex-setup", POST_CREATE),
                              ("cleanup", "codex-cleanup", PRE_REMOVE)):
        script = _codex_script(data, table)
        if script is not None and script.strip():
            found.append((name, kind, script))
    return found


def _codex_script(data: dict[str, Any], table: str) -> str | None:
    """`[table] script`, or the platform's `[table.linux]` / `[table.darwin]` one."""
    section = data.get(table)
    if section is None:
        return None
    if not isinstance(section, dict):
        raise _Bad(f"'{table}' must be a table ([{table}])")
    for platform in ("darwin", "linux", "win32"):
        sub = section.get(platform)
        if sub is not None and not (isinstance(sub, dict)
                                    and isinstance(sub.get("script", ""), str)):
            raise _Bad(f"[{table}.{platform}] must be a table with a string 'script'")
    script = section.get("script")
    if script is not None and not isinstance(script, str):
        raise _Bad(f"'{table}.script' must be a string (a shell script)")
    mine = section.get(_PLATFORM)
    if isinstance(mine, dict) and "script" in mine:
        return str(mine["script"])
    return script


_READERS = {CURSOR: _cursor, CONDUCTOR: _conductor, CODEX: _codex}
