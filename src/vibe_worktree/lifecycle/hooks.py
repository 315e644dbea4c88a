"""Lifecycle hooks: `.vibe/worktree.toml` (project) and `<home>/worktree.toml` (user), and
those a repository's setup file for another tool gives (`setup_files.py`).

A project hook comes with the code, so a branch or a pull request can add or change
one: it runs only once its exact (type, name, command) was approved for this
repository; so does a hook imported from another tool's file. User hooks are the user's
own and need no approval. This module reads the files and keeps the approvals;
`hook_runner.py` runs the hooks. Only `new`, `restore`, `rm`, `merge`, `land` and
`vwt hooks` call in here; housekeeping never does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from ..core.errors import NotFound, VwtError
from ..core.light import NamedTuple
from ..core.names import path_segment_problem
from .settings import (
    PROJECT_FILE,
    Approval,
    HooksFileError,
    LandSettings,
    approved_keys,
    land_settings,
    parse_toml,
    project_file,
    read_toml,
    user_file,
)
from .settings import change_approvals as _store_approvals

try:  # the builtin module avoids loading OpenSSL, which `hashlib` does
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

POST_CREATE = "post_create"
PRE_REMOVE = "pre_remove"
PRE_MERGE = "pre_merge"
POST_MERGE = "post_merge"
HOOK_TYPES = (POST_CREATE, PRE_REMOVE, PRE_MERGE, POST_MERGE)
ENV = "env"  # the [env] table in `vwt hooks`: approved as a hook, never run
USER = "user"
PROJECT = "project"
DEFAULT_TIMEOUT = 300.0
_ENTRY_KEYS = frozenset({"name", "type", "command", "timeout", "background", "description",
                         "inputs", "relocate"})

# statuses of a hook's result
OK = "ok"
FAILED = "failed"
TIMED_OUT = "timed_out"
SKIPPED_UNAPPROVED = "skipped_unapproved"
STARTED = "started"
POOLED = "pooled"  # ran when the worktree's pool entry was made, not again

Warn = Callable[[str], None]


class AgentGone(VwtError):
    """The agent process a foreground hook ran for died: the hook was stopped."""


class Hook(NamedTuple):
    name: str
    type: str
    command: str
    timeout: float = DEFAULT_TIMEOUT
    background: bool = False
    description: str = ""
    source: str = PROJECT
    file: str = ""
    # gitignore-style patterns: a worktree taken from the pool runs this post_create hook
    # again only when a changed path matches one (None: whenever the start point moved)
    inputs: tuple[str, ...] | None = None
    # gitignore-style patterns: the files this post_create hook writes that name the
    # checkout's path, rewritten after a pool entry moved (None: relocate.DEFAULT_PATTERNS)
    relocate: tuple[str, ...] | None = None

    @property
    def setup_id(self) -> str:
        """How the record's `setup_pending` names it (a name is unique within its file)."""
        return f"{self.source}:{self.name}"

    @property
    def key(self) -> str:
        """What an approval is kept by: a SHA-256 of exactly (type, name, command)."""
        digest: str = sha256(json.dumps([self.type, self.name, self.command]).encode()
                             ).hexdigest()
        return digest


class HookResult(NamedTuple):
    name: str
    type: str
    source: str
    status: str
    exit_code: int | None = None

    @property
    def failed(self) -> bool:
        return self.status in (FAILED, TIMED_OUT)

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "type": self.type, "source": self.source,
                "status": self.status, "exit_code": self.exit_code}


class Listed(NamedTuple):
    """A hook as `vwt hooks` shows it."""

    hook: Hook
    approved: bool

    def to_json(self) -> dict[str, object]:
        h = self.hook
        return {"name": h.name, "type": h.type, "source": h.source, "command": h.command,
                "background": h.background, "timeout": None if h.type == ENV else h.timeout,
                "description": h.description, "approved": self.approved}


Ask = Callable[[Hook], bool]  # asked before an unapproved hook runs: True runs it


# -- reading the files ------------------------------------------------------------------------


def hooks_of(data: dict[str, Any], path: str, source: str) -> list[Hook]:
    """Every entry of `[[hooks]]`, all validated before any is returned."""
    entries = data.get("hooks", [])
    if not isinstance(entries, list):
        raise HooksFileError(f"{path}: 'hooks' must be an array of tables ([[hooks]])")
    hooks: list[Hook] = []
    for number, entry in enumerate(entries, start=1):
        hook = _entry(entry, number, path, source)
        if any(h.name == hook.name for h in hooks):
            raise HooksFileError(f"{path}: hook {number} ({hook.name!r}): the name is used "
                                 "twice; names must be unique within a file")
        hooks.append(hook)
    return hooks


def _entry(entry: object, number: int, path: str, source: str) -> Hook:
    label = f"{path}: hook {number}"

    def bad(problem: str) -> HooksFileError:
        return HooksFileError(f"{label}: {problem}; fix it or pass --no-hooks")

    if not isinstance(entry, dict):
        raise bad("not a table")
    name = entry.get("name")
    if not isinstance(name, str) or path_segment_problem(name) or name.startswith("."):
        raise bad("'name' must be a short name usable as a file name")
    label = f"{path}: hook {number} ({name!r})"
    unknown = sorted(set(entry) - _ENTRY_KEYS)
    if unknown:
        raise bad(f"unknown key {unknown[0]!r}")
    kind = entry.get("type")
    if kind not in HOOK_TYPES:
        raise bad(f"'type' must be one of {', '.join(HOOK_TYPES)}")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip():
        raise bad("'command' must be a non-empty string")
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise bad("'timeout' must be a positive number of seconds")
    background = entry.get("background", False)
    if not isinstance(background, bool):
        raise bad("'background' must be true or false")
    if background and kind != POST_CREATE:
        raise bad("only post_create hooks can run in the background")
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise bad("'description' must be a string")
    inputs = entry.get("inputs")
    if inputs is not None and (not isinstance(inputs, list)
                               or not all(isinstance(p, str) for p in inputs)):
        raise bad("'inputs' must be a list of gitignore-style patterns")
    if inputs is not None and kind != POST_CREATE:
        raise bad("only post_create hooks have inputs")
    relocate = entry.get("relocate")
    if relocate is not None and (not isinstance(relocate, list)
                                 or not all(isinstance(p, str) for p in relocate)):
        raise bad("'relocate' must be a list of gitignore-style patterns")
    if relocate is not None and kind != POST_CREATE:
        raise bad("only post_create hooks have relocate")
    return Hook(name, kind, command, float(timeout), background, description, source, path,
                None if inputs is None else tuple(inputs),
                None if relocate is None else tuple(relocate))


def load_file(path: str, source: str) -> list[Hook]:
    data = read_toml(path)
    return [] if data is None else hooks_of(data, path, source)


def load_all(home: str, checkout: str, sparse_commit: str | None = None,
             repo_root: str | None = None, warn: Warn | None = None) -> list[Hook]:
    """User hooks, then project hooks: the order they run in. `sparse_commit`: the
    checkout is sparse (`.vibe/` is not in it), read the project's file from this commit.
    `repo_root`: the main checkout, whose setup file for another tool gives the hooks of the
    types the project's file leaves undefined (`warn`: told when that file is malformed)."""
    user = load_file(user_file(home), USER)
    if sparse_commit is None:
        project = load_file(project_file(checkout), PROJECT)
    else:
        from ..core.git import Git, file_at

        raw = file_at(Git(checkout), sparse_commit, PROJECT_FILE)
        label = f"{PROJECT_FILE} (at {sparse_commit[:12]})"
        project = [] if raw is None else hooks_of(parse_toml(raw, label), label, PROJECT)
    imported = [] if repo_root is None else _imported(repo_root, project, warn)
    return user + project + imported


def _imported(repo_root: str, project: list[Hook], warn: Warn | None) -> list[Hook]:
    """The hooks of the main checkout's setup file for another tool, of the types `project`
    defines none of (SPEC §19)."""
    from .setup_files import imported_hooks

    found = imported_hooks(repo_root, [t for t in (POST_CREATE, PRE_REMOVE)
                                       if not any(h.type == t for h in project)])
    if found.problem is not None and warn is not None:
        warn(found.problem)
    return [Hook(c.name, c.type, c.command, c.timeout, False, c.description, c.source, c.file)
            for c in found.hooks]


# -- approvals --------------------------------------------------------------------------------


def is_approved(hook: Hook, keys: set[str]) -> bool:
    return hook.source == USER or hook.key in keys


def change_approvals(home: str, bucket: str, hooks: Sequence[Hook], approve: bool) -> None:
    """Approve or revoke `hooks` for `bucket` (by their exact type, name and command)."""
    _store_approvals(home, bucket, [Approval(h.key, {"type": h.type, "name": h.name,
                                                     "command": h.command}) for h in hooks],
                     approve)


def listing(home: str, bucket: str, checkout: str, repo_root: str | None = None,
            warn: Warn | None = None) -> list[Listed]:
    """Every hook of the user and of the checkout's project file (or the setup file of
    another tool it imports), then the project's `[env]` table and its `vwt land` gate,
    approved as a hook is: what `vwt hooks` shows and `vwt hooks approve` approves."""
    keys = approved_keys(home, bucket)
    found = load_all(home, checkout, repo_root=repo_root, warn=warn)
    gate = gate_hook(land_settings(_read_bytes(project_file(checkout)), project_file(checkout)))
    return [Listed(h, is_approved(h, keys))
            for h in [*found, *env_entry(checkout), *filter(None, [gate])]]


def env_entry(checkout: str) -> list[Hook]:
    """The checkout's `[env]` table as an entry of `vwt hooks`: type and name `env`, its
    KEY = "VALUE" lines as the command, so that its approval is kept by the same key
    (`environment.EnvTable.key`) and `vwt hooks approve env` gives it."""
    from .environment import ENV_NAME, project_env_table

    table = project_env_table(checkout)
    if table is None or not table.items:
        return []
    return [Hook(ENV_NAME, ENV, table.text, description="the repository's [env] table "
                 "(docs/runtime.md)", source=PROJECT, file=table.where)]


LAND_GATE = "land"  # the type of the `[land]` table's gate, as approvals and listings name it
GATE_NAME = "gate"


def gate_hook(settings: LandSettings) -> Hook | None:
    """The `[land]` table's gate as an entry of the approvals store (kept by its exact
    command, as a hook is: a changed command needs approval again, a changed timeout does
    not); None when the table names no gate."""
    if settings.gate is None:
        return None
    return Hook(GATE_NAME, LAND_GATE, settings.gate, settings.timeout,
                description="the check vwt land runs on each worktree", source=PROJECT,
                file=settings.file)


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise HooksFileError(f"{path}: cannot be read ({exc.strerror})") from None


def check_user_file(home: str) -> None:
    """Fail before anything is created when the user's own file is broken."""
    load_file(user_file(home), USER)


def approve_named(home: str, bucket: str, listed: Sequence[Listed], names: Sequence[str],
                  all_hooks: bool, approve: bool) -> None:
    """`vwt hooks approve|revoke`: approve (or revoke) the project hooks of `listed` named
    `names`, or all of them (those imported from another tool's setup file included)."""
    project = [row.hook for row in listed if row.hook.source != USER]
    if not all_hooks:
        if not names:
            raise VwtError("name the hooks, or pass --all", 2)
        unknown = [n for n in names if n not in {h.name for h in project}]
        if unknown:
            raise NotFound(f"no project hook named {unknown[0]!r}; see vwt hooks")
        project = [h for h in project if h.name in names]
    if project:
        change_approvals(home, bucket, project, approve)
