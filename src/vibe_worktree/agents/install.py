"""`vwt install claude-code|vibe` and `vwt uninstall ...`: the CLI side of the settings
merge in `claude_settings` (Claude Code's settings.json) and `vibe_settings` (Mistral Vibe's
hooks.toml)."""

from __future__ import annotations

import json
import sys

from ..core.errors import EXIT_OK, NotARepository
from . import claude_settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..api import Worktrees
    from .settings_files import Installed


def project_dir(wt: Worktrees) -> str:
    """The project whose `.claude/` (`.vibe/`) the project and local scopes mean: the top
    level of the repository containing the current directory, else the current directory."""
    try:
        return wt.repo.info.toplevel
    except NotARepository:
        return wt.cwd


def change_settings(wt: Worktrees, agent: str, scope: str, *, install: bool, dry_run: bool,
                    as_json: bool) -> int:
    project = project_dir(wt) if scope != "user" else wt.cwd
    if agent == "vibe":
        from . import vibe_settings

        result: Installed = vibe_settings.change(
            vibe_settings.hooks_path(scope, wt.root.home, project), install, dry_run)
    else:
        result = claude_settings.change(claude_settings.settings_path(scope, project),
                                        install, dry_run)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json()) + "\n")
    elif dry_run:
        sys.stdout.write(result.text)
    else:
        print(result.path)
    if not as_json:
        print(f"vwt: {_what_happened(result.added or result.removed, install, dry_run)}",
              file=sys.stderr)
    return EXIT_OK


def _what_happened(events: list[str], install: bool, dry_run: bool) -> str:
    """The words match what was done (or, with `--dry-run`, what would be)."""
    if events:
        verb = ("would add" if dry_run else "added") if install else \
            ("would remove" if dry_run else "removed")
        return f"{verb} the hook for {', '.join(events)}"
    if install:
        nothing = "nothing would change" if dry_run else "nothing changed"
        return f"the hook is registered for every event already; {nothing}"
    return "no hook of vwt's is registered; nothing to remove"
