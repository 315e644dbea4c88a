"""`vwt skill`: the agent skill shipped with the package (SKILL.md).

Default install locations (a folder per skill holding `SKILL.md`, as both agents
expect):

- Claude Code (`--agent claude`, the default): `~/.claude/skills/vibe-worktree/SKILL.md`
- Mistral Vibe (`--agent vibe`): `<vibe home>/skills/vibe-worktree/SKILL.md`, where the
  vibe home is `--home`, else `$VIBE_HOME`, else `~/.vibe` (Vibe's user-level skills)

`--target DIR` installs to `DIR/SKILL.md` instead.
"""

from __future__ import annotations

import os

from ..core.light import NamedTuple

SKILL_NAME = "vibe-worktree"
SKILL_FILE = "SKILL.md"
AGENTS = ("claude", "vibe")


class Installed(NamedTuple):
    path: str
    changed: bool  # False: an identical copy was already there

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "changed": self.changed}


def skill_text() -> str:
    with open(os.path.join(os.path.dirname(__file__), SKILL_FILE), encoding="utf-8") as handle:
        return handle.read()


def default_target(agent: str, vibe_home: str) -> str:
    if agent == "vibe":
        return os.path.join(vibe_home, "skills", SKILL_NAME)
    return os.path.join(os.path.expanduser("~"), ".claude", "skills", SKILL_NAME)


def install(target_dir: str) -> Installed:
    """Write SKILL.md into `target_dir` atomically (our own file: an older one is replaced)."""
    from ..core.files import write_atomically

    text = skill_text()
    path = os.path.abspath(os.path.join(os.path.expanduser(target_dir), SKILL_FILE))
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == text:
                return Installed(path, False)
    except (FileNotFoundError, NotADirectoryError, UnicodeDecodeError):
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomically(path, text.encode("utf-8"), 0o644)
    return Installed(path, True)
