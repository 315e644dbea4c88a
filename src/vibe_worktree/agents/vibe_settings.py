"""Mistral Vibe's `hooks.toml`: the `[[hooks]]` entries `vwt install vibe` adds, and
`vwt uninstall vibe` takes out, so that Vibe runs `vwt hook vibe` at its events.

Vibe 3.0.3 reads `<cwd>/.vibe/hooks.toml` of the folder a session starts in (when that
folder is trusted), then `$VIBE_HOME/hooks.toml` (`~/.vibe/hooks.toml`). An entry has
`name` (unique: a name in both files is reported and the project's entry wins), `type`
(`pre_tool`, `post_tool`, `post_agent`), `command` (run with `sh -c`), and optionally
`match`, `timeout` (seconds, default 60), `strict` and `description`; its strict loader
refuses any other key.

The file is edited as text, never re-serialised: Python reads TOML (`tomllib`) but writes
none, and a TOML writer would be the package's first runtime dependency. Our entries are
appended at the end, each a block of its own, and taken out as exactly those blocks, so
every other byte (comments, order, formatting) stays. Each edit is checked by parsing its
result, which must hold exactly the entries there were plus (or minus) ours; anything else
is refused and nothing is written.
"""

from __future__ import annotations

import os
import re
from typing import Any

from ..core.errors import EXIT_USAGE, VwtError
from ..core.light import NamedTuple
from .settings_files import Installed, runs_vwt, vwt_command, write_settings

SCOPES = ("user", "project")
HOOK_ARGS = ("hook", "vibe")
TIMEOUT = 10.0  # seconds: an event takes milliseconds; Vibe waits 60 s by default


class Entry(NamedTuple):
    name: str
    type: str
    match: str | None  # None: every tool (or agent)
    description: str


ENTRIES = (
    Entry("vwt-activity-pre-tool", "pre_tool", None,
          "vwt: mark this worktree's session as working"),
    Entry("vwt-activity-post-tool", "post_tool", None,
          "vwt: mark this worktree's session as working"),
    # "main": the session's own turn, never a subagent's (Vibe's alias for the main agent)
    Entry("vwt-activity-post-agent", "post_agent", "main",
          "vwt: mark this worktree's session as idle (its turn is over)"),
)
EVENTS = tuple(e.type for e in ENTRIES)


def hooks_path(scope: str, home: str, project: str) -> str:
    """`user`: the home's `hooks.toml` (the home vwt uses, where Vibe reads it);
    `project`: `.vibe/hooks.toml` at the top of the project."""
    if scope == "user":
        return f"{home}/hooks.toml"
    if scope == "project":
        return os.path.join(project, ".vibe", "hooks.toml")
    raise VwtError(f"unknown scope {scope!r}; use one of {', '.join(SCOPES)}", EXIT_USAGE)


def hook_command() -> str:
    """`vwt hook vibe`, by the absolute path when needed (settings_files)."""
    return vwt_command(HOOK_ARGS)


def is_ours(entry: object) -> bool:
    """An entry `install` adds: its command runs `vwt hook vibe`, by any path."""
    return isinstance(entry, dict) and runs_vwt(entry.get("command"), HOOK_ARGS)


def change(path: str, install: bool, dry_run: bool) -> Installed:
    """Add our entries to the hooks file at `path` (or take them out), keeping every other
    byte; write atomically unless `dry_run`. Refuses a file it cannot edit safely."""
    text, data = _load(path)
    hooks = _hooks_of(data, path)
    if install:
        missing = _missing(hooks)
        new_text, added, removed = _add(text, hooks, path), _types(missing), []
        expected = [*hooks, *(_entry_table(e, hook_command()) for e in missing)]
    else:
        new_text, removed = _take_out(text, hooks, path), _types(h for h in hooks if is_ours(h))
        added, expected = [], [h for h in hooks if not is_ours(h)]
    changed = new_text != text
    if changed:
        _check(new_text, data, expected, path, install)
        if not dry_run:
            write_settings(path, new_text)
    return Installed(path, added if changed else [], removed if changed else [], changed,
                     new_text)


def _load(path: str) -> tuple[str, dict[str, Any]]:
    """The file's text and what it holds ("" and {} when there is no file)."""
    import tomllib

    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return "", {}
    except OSError as exc:
        raise VwtError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
        return text, tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise VwtError(f"{path} is not valid TOML ({exc}); fix it first") from None


def _hooks_of(data: dict[str, Any], path: str) -> list[dict[str, Any]]:
    hooks = data.get("hooks", [])
    if not isinstance(hooks, list) or not all(isinstance(h, dict) for h in hooks):
        raise VwtError(f"{path}: 'hooks' is not a list of [[hooks]] tables; fix it first")
    return hooks


def _types(entries: Any) -> list[str]:
    """The event types of entries (tables or `Entry`s), each once."""
    return list(dict.fromkeys(str(e.type if isinstance(e, Entry) else e.get("type"))
                              for e in entries))


def _missing(hooks: list[dict[str, Any]]) -> list[Entry]:
    """Our entries whose event has none of ours yet."""
    present = {h.get("type") for h in hooks if is_ours(h)}
    return [e for e in ENTRIES if e.type not in present]


# -- adding ------------------------------------------------------------------------------------
def _add(text: str, hooks: list[dict[str, Any]], path: str) -> str:
    missing = _missing(hooks)
    taken = {h.get("name") for h in hooks}
    for entry in missing:
        if entry.name in taken:
            raise VwtError(f"{path} has a hook named {entry.name!r} that does not run "
                           f"vwt hook vibe; rename it, then try again")
    if not missing:
        return text
    newline = "\r\n" if "\r\n" in text else "\n"
    if text and not text.endswith("\n"):
        text += newline
    command = hook_command()
    blocks = [_block(_entry_table(e, command), newline) for e in missing]
    return text + (newline if text.strip() else "") + newline.join(blocks)


def _entry_table(entry: Entry, command: str) -> dict[str, Any]:
    table: dict[str, Any] = {"name": entry.name, "type": entry.type, "command": command}
    if entry.match is not None:
        table["match"] = entry.match
    table.update(timeout=TIMEOUT, description=entry.description)
    return table


def _block(table: dict[str, Any], newline: str) -> str:
    lines = ["[[hooks]]", *(f"{key} = {_value(value)}" for key, value in table.items())]
    return newline.join(lines) + newline


def _value(value: object) -> str:
    """A TOML float or basic string (escaped so that any text comes back as it was)."""
    if isinstance(value, float):
        return repr(value)
    out = []
    for ch in str(value):
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


# -- taking out --------------------------------------------------------------------------------
_HEADER = re.compile(r"[ \t]*\[")  # a table header (the next one ends a block)
_HOOKS_HEADER = re.compile(r"[ \t]*\[\[[ \t]*hooks[ \t]*\]\][ \t]*(#.*)?\r?\n?")
_HOOKS_SUBTABLE = re.compile(r"[ \t]*\[\[?[ \t]*hooks[ \t]*\.")


def _take_out(text: str, hooks: list[dict[str, Any]], path: str) -> str:
    ours = sum(1 for h in hooks if is_ours(h))
    if not ours:
        return text
    lines = text.splitlines(keepends=True)
    doomed: set[int] = set()
    found = 0
    for start, end in _our_blocks(lines):
        found += 1
        doomed.update(_span(lines, start, end))
    if found != ours:
        raise VwtError(f"{path}: vwt's entries are not all in the form vwt wrote them; "
                       "take out the [[hooks]] whose command is 'vwt hook vibe' by hand")
    if len(lines) - 1 in doomed:  # what is left ends where ours began: no blank tail
        first = len(lines) - 1
        while first - 1 in doomed:
            first -= 1
        while first > 0 and not lines[first - 1].strip():
            first -= 1
            doomed.add(first)
    return "".join(line for i, line in enumerate(lines) if i not in doomed)


def _our_blocks(lines: list[str]) -> list[tuple[int, int]]:
    """(first, end) line indices of each `[[hooks]]` block that holds one entry of ours
    and nothing else (no sub-table follows it)."""
    import tomllib

    blocks = []
    for i, line in enumerate(lines):
        if not _HOOKS_HEADER.fullmatch(line):
            continue
        end = i + 1
        while end < len(lines) and not _HEADER.match(lines[end]):
            end += 1
        if end < len(lines) and _HOOKS_SUBTABLE.match(lines[end]):
            continue
        try:
            alone = tomllib.loads("".join(lines[i:end]))
        except tomllib.TOMLDecodeError:
            continue
        if list(alone) == ["hooks"] and len(alone["hooks"]) == 1 and is_ours(alone["hooks"][0]):
            blocks.append((i, end))
    return blocks


def _span(lines: list[str], start: int, end: int) -> range:
    """The lines a block of ours takes: its header to its last key, and the blank lines
    after it. Comments after its last key belong to what follows and stay."""
    last = start
    for i in range(start, end):
        stripped = lines[i].strip()
        if stripped and not stripped.startswith("#"):
            last = i
    stop = last + 1
    while stop < end and not lines[stop].strip():
        stop += 1
    return range(start, stop)


# -- checking and writing ----------------------------------------------------------------------
def _check(new_text: str, data: dict[str, Any], hooks: list[dict[str, Any]], path: str,
           install: bool) -> None:
    """The edited text must parse to what was there with exactly our entries changed."""
    import tomllib

    expected = {k: v for k, v in data.items() if k != "hooks"}
    if hooks:
        expected["hooks"] = hooks
    try:
        result = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        result = None
    if result != expected:
        what = "add its entries to" if install else "take its entries out of"
        raise VwtError(f"vwt cannot {what} {path} without touching the rest (are its "
                       "hooks an inline array?); nothing was changed: edit it by hand "
                       "(docs/agents.md shows the entries)")
