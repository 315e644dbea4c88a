"""`vwt install claude-code` and `vwt uninstall claude-code`: the CLI side of the settings
merge in `claude_settings`."""

from __future__ import annotations

import json
import sys

from ..core.errors import EXIT_OK, NotARepository
from .claude_settings import change, settings_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..api import Worktrees


def project_dir(wt: Worktrees) -> str:
    """The project whose `.claude/` the project and local scopes mean: the top level of
    the repository containing the current directory, else the current directory."""
    try:
        return wt.repo.info.toplevel
    except NotARepository:
        return wt.cwd


def change_settings(wt: Worktrees, scope: str, *, install: bool, dry_run: bool,
                    as_json: bool) -> int:
    project = project_dir(wt) if scope != "user" else wt.cwd
    result = change(settings_path(scope, project), install, dry_run)
    if as_json:
        sys.stdout.write(json.dumps(result.to_json()) + "\n")
    elif dry_run:
        sys.stdout.write(result.text)
    else:
        print(result.path)
    if not as_json:
        events = result.added or result.removed
        verb = ("would " if dry_run else "") + ("add" if install else "remove")
        if events:
            print(f"vwt: {verb} the hook for {', '.join(events)}", file=sys.stderr)
        else:
            print("vwt: nothing to change" if install or not dry_run else
                  "vwt: nothing to remove", file=sys.stderr)
    return EXIT_OK
