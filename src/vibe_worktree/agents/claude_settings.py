"""Claude Code's settings files: the worktree settings a hook must honour, and the hook
entries `vwt install claude-code` merges in (and `vwt uninstall claude-code` takes out).

Claude Code reads, from lowest to highest precedence, the user's
`~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR/settings.json` when that is set), the
project's `.claude/settings.json`, the project's `.claude/settings.local.json` and the
managed policy file; a key set in a later file wins.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from ..core.errors import EXIT_USAGE, VwtError
from ..core.light import NamedTuple
from .settings_files import Installed, runs_vwt, vwt_command, write_settings

SCOPES = ("user", "project", "local")
EVENTS = ("WorktreeCreate", "WorktreeRemove", "UserPromptSubmit", "PreToolUse",
          "Notification", "Stop", "SessionEnd")
# A creation may fetch and run post_create hooks: more than Claude Code's default wait.
_TIMEOUTS = {"WorktreeCreate": 600, "WorktreeRemove": 600}
HOOK_ARGS = ("hook", "claude-code")
_MANAGED = ("/Library/Application Support/ClaudeCode/managed-settings.json"
            if sys.platform == "darwin" else "/etc/claude-code/managed-settings.json")


def user_dir() -> str:
    return os.environ.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")


def settings_path(scope: str, project: str) -> str:
    if scope == "user":
        return os.path.join(user_dir(), "settings.json")
    if scope == "project":
        return os.path.join(project, ".claude", "settings.json")
    if scope == "local":
        return os.path.join(project, ".claude", "settings.local.json")
    raise VwtError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}", EXIT_USAGE)


# -- the worktree settings a WorktreeCreate hook honours ---------------------------------------
class WorktreeSettings(NamedTuple):
    base_ref: str | None  # "head" or "fresh" (the default: the remote's default branch)
    sparse_paths: tuple[str, ...] | None


def worktree_settings(project: str, warn: Any) -> WorktreeSettings:
    """`worktree.baseRef` and `worktree.sparsePaths`, each from the file of highest
    precedence that sets it. An unreadable file is skipped with a warning."""
    base_ref: str | None = None
    sparse: tuple[str, ...] | None = None
    files = [settings_path("user", project), settings_path("project", project),
             settings_path("local", project), _MANAGED]
    for path in files:
        try:
            data = _load(path)
        except VwtError as exc:
            warn(f"{exc.message}; ignoring its worktree settings")
            continue
        section = data.get("worktree") if data else None
        if not isinstance(section, dict):
            continue
        if "baseRef" in section:
            value = section["baseRef"]
            if value in ("head", "fresh"):
                base_ref = value
            else:
                warn(f"{path}: worktree.baseRef {value!r} is neither 'head' nor 'fresh'; "
                     "ignored")
        if "sparsePaths" in section:
            paths = section["sparsePaths"]
            if isinstance(paths, list) and all(isinstance(p, str) for p in paths):
                sparse = tuple(paths)
            else:
                warn(f"{path}: worktree.sparsePaths is not a list of paths; ignored")
    return WorktreeSettings(base_ref, sparse)


def _load(path: str) -> dict[str, Any] | None:
    """The file's JSON object, None when there is no file; VwtError when unusable."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise VwtError(f"cannot read {path}: {exc.strerror}") from None
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise VwtError(f"{path} is not valid JSON ({exc}); fix it first") from None
    if not isinstance(data, dict):
        raise VwtError(f"{path} does not hold a JSON object; fix it first")
    return data


# -- install / uninstall -------------------------------------------------------------------
def hook_command() -> str:
    """`vwt hook claude-code`, by the absolute path when needed (settings_files)."""
    return vwt_command(HOOK_ARGS)


def is_ours(entry: object) -> bool:
    """An entry `install` adds: a command running `vwt hook claude-code`, by any path."""
    return (isinstance(entry, dict) and entry.get("type") == "command"
            and runs_vwt(entry.get("command"), HOOK_ARGS))


def change(path: str, install: bool, dry_run: bool) -> Installed:
    """Merge our entries into the settings file at `path` (or take them out), keeping
    everything else; write atomically unless `dry_run`. Refuses an unusable file."""
    data = _load(path)
    settings: dict[str, Any] = {} if data is None else data
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise VwtError(f"{path}: 'hooks' is not a JSON object; fix it first")
    for event in EVENTS:
        groups = hooks.get(event, [])
        if not isinstance(groups, list) or not all(
                isinstance(g, dict) and isinstance(g.get("hooks", []), list) for g in groups):
            raise VwtError(f"{path}: hooks.{event} is not a list of matcher groups; fix it first")
    added, removed = (_add(hooks) if install else _remove(hooks))
    changed = bool(added or removed)
    if install and changed:
        settings["hooks"] = hooks
    elif not install and "hooks" in settings and not hooks and removed:
        del settings["hooks"]
    text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    if changed and not dry_run:
        write_settings(path, text)
    return Installed(path, added, removed, changed, text)


def _add(hooks: dict[str, Any]) -> tuple[list[str], list[str]]:
    added = []
    command = hook_command()
    for event in EVENTS:
        groups = hooks.setdefault(event, [])
        if any(is_ours(h) for g in groups for h in g.get("hooks", [])):
            continue
        entry: dict[str, Any] = {"type": "command", "command": command}
        if event in _TIMEOUTS:
            entry["timeout"] = _TIMEOUTS[event]
        groups.append({"hooks": [entry]})
        added.append(event)
    return added, []


def _remove(hooks: dict[str, Any]) -> tuple[list[str], list[str]]:
    removed = []
    for event in EVENTS:
        groups = hooks.get(event)
        if not groups:
            continue
        kept = []
        for group in groups:
            entries = group.get("hooks", [])
            ours = [h for h in entries if is_ours(h)]
            if not ours:
                kept.append(group)
                continue
            rest = [h for h in entries if not is_ours(h)]
            if rest:
                kept.append({**group, "hooks": rest})
        if len(kept) != len(groups) or kept != groups:
            removed.append(event)
            if kept:
                hooks[event] = kept
            else:
                del hooks[event]
    return [], removed
