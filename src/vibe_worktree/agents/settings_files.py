"""What `vwt install` writes into agents' settings files, for every agent: the command that
runs vwt, and the file written through a symlink, atomically, keeping its mode."""

from __future__ import annotations

import os
import shlex
import sys

from ..core.light import NamedTuple

_PROGRAMS = ("vwt", "vibe-worktree")


class Installed(NamedTuple):
    """What `install` or `uninstall` did to one agent's settings file."""

    path: str
    added: list[str]  # the events (hook types) whose entry was added
    removed: list[str]  # the events (hook types) whose entry was taken out
    changed: bool
    text: str  # the resulting file

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "added": self.added, "removed": self.removed,
                "changed": self.changed}


def vwt_command(args: tuple[str, ...]) -> str:
    """`vwt ARGS...`, with the program's absolute path when `vwt` on PATH is not this very
    program (a virtual environment that is not activated, say)."""
    import shutil

    program = os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    found = shutil.which("vwt")
    if (not program or os.path.basename(program) not in _PROGRAMS
            or (found and os.path.realpath(found) == program)):
        return shlex.join(["vwt", *args])
    return shlex.join([program, *args])


def runs_vwt(command: object, args: tuple[str, ...]) -> bool:
    """`command` is `vwt ARGS...` (or `vibe-worktree ARGS...`), by any path."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (len(words) == len(args) + 1 and tuple(words[1:]) == args
            and os.path.basename(words[0]) in _PROGRAMS)


def write_settings(path: str, text: str) -> None:
    """Atomically (core.files); a symlinked settings file (dotfiles) is written through to
    its target, and the file's mode is kept."""
    from ..core.files import write_atomically

    target = os.path.realpath(path)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    try:
        mode = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o644
    write_atomically(target, text.encode("utf-8"), mode)
