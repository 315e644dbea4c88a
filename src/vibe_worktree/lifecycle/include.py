"""Copy untracked-but-needed files (`.env` and the like) into a new worktree.

Which files: those of the main checkout (whole ignored folders such as `node_modules/`
included) that git ignores *and* that match a
pattern of `<repo_root>/.worktreeinclude` (gitignore syntax) or of
`worktree_include` in `<home>/config.toml`. They are copied (`copies.py`: clones where the
filesystem can, in parallel), never linked, so a
session cannot change the main checkout's secrets through its worktree. They stay
ignored in the worktree too (the same .gitignore applies there), so a snapshot
never stages them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..core.config import include_patterns
from ..core.errors import VwtError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..core.git import Git

INCLUDE_FILE = ".worktreeinclude"
Warn = Callable[[str], None]


def _ignore_warnings(_message: str) -> None:
    pass


def patterns_for(repo_root: str, home: str) -> list[str]:
    """The repository's `.worktreeinclude` lines, then the home's configured ones."""
    lines: list[str] = []
    try:
        with open(os.path.join(repo_root, INCLUDE_FILE), encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (FileNotFoundError, NotADirectoryError):
        pass
    lines.extend(include_patterns(home))
    return [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]


def _split_z(text: str) -> list[str]:
    return [p for p in text.split("\0") if p]


def included_files(repo_root: str, patterns: list[str]) -> list[str]:
    """Relative paths of ignored, untracked files of `repo_root` matching `patterns`; a
    whole folder that both select is one entry ending in `/` (`node_modules/`)."""
    import tempfile

    from ..core.git import Git

    git = Git(repo_root)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".include") as spec:
        spec.write("\n".join(patterns) + "\n")
        spec.flush()
        # The patterns act as the "exclude" list, so --ignored selects what they match;
        # --directory names a folder whose every file they match once, not file by file.
        listed = _ls_ignored(git, spec.name, ["--directory"], [])
        ignored = _ignored_by_repo(git, listed)
        # A folder the patterns select whole but the repository ignores only in part:
        # ask again about its files one by one.
        partial = [p for p in listed if p.endswith("/") and p not in ignored]
        if partial:
            more = _ls_ignored(git, spec.name, [], partial)
            listed += more
            ignored |= _ignored_by_repo(git, more)
    return [p for p in listed if p in ignored]


def _ls_ignored(git: Git, spec: str, options: list[str], folders: list[str]) -> list[str]:
    return _split_z(git.out("ls-files", "-z", "--others", "--ignored", *options,
                            f"--exclude-from={spec}", "--", *folders,
                            env={"GIT_LITERAL_PATHSPECS": "1"}))


def _ignored_by_repo(git: Git, paths: list[str]) -> set[str]:
    if not paths:
        return set()
    ignored = git.run("check-ignore", "-z", "--stdin", input="\0".join(paths) + "\0",
                      check=False)
    if ignored.returncode not in (0, 1):  # 1: none of them is ignored
        raise VwtError(f"git check-ignore failed: {ignored.stderr.strip()}")
    return set(_split_z(ignored.stdout))


def copy_included_files(repo_root: str, checkout: str, home: str,
                        warn: Warn = _ignore_warnings, repair: bool = False) -> list[str]:
    """Copy the included files into `checkout`; return their relative paths, sorted.

    Never fails a creation: a file that cannot be copied is reported through
    `warn` and skipped. `repair`: finish a copy a killed creation left half done.
    """
    try:
        patterns = patterns_for(repo_root, home)
        if not patterns:
            return []
        wanted = included_files(repo_root, patterns)
    except VwtError as exc:
        warn(f"files of {INCLUDE_FILE} not copied: {exc.message}")
        return []
    from .copies import copy_files, walk

    paths = []
    for rel in sorted(wanted):
        paths += walk(repo_root, rel.rstrip("/")) if rel.endswith("/") else [rel]
    return [p for p in copy_files(repo_root, checkout, paths, warn, repair=repair).copied
            if not p.endswith("/")]
