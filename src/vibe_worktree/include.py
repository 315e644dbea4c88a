"""Copy untracked-but-needed files (`.env` and the like) into a new worktree.

Which files: those of the main checkout that git ignores *and* that match a
pattern of `<repo_root>/.worktreeinclude` (gitignore syntax) or of
`worktree_include` in `<home>/config.toml`. They are copied, never linked, so a
session cannot change the main checkout's secrets through its worktree. They stay
ignored in the worktree too (the same .gitignore applies there), so a snapshot
never stages them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .config import include_patterns
from .errors import VwtError

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
    """Relative paths of ignored, untracked files of `repo_root` matching `patterns`."""
    import tempfile

    from .git import Git

    git = Git(repo_root)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".include") as spec:
        spec.write("\n".join(patterns) + "\n")
        spec.flush()
        # the patterns act as the "exclude" list, so --ignored selects what they match
        matching = _split_z(git.out("ls-files", "-z", "--others", "--ignored",
                                    f"--exclude-from={spec.name}"))
    if not matching:
        return []
    ignored = git.run("check-ignore", "-z", "--stdin", input="\0".join(matching) + "\0",
                      check=False)
    if ignored.returncode not in (0, 1):  # 1: none of them is ignored
        raise VwtError(f"git check-ignore failed: {ignored.stderr.strip()}")
    keep = set(_split_z(ignored.stdout))
    return [p for p in matching if p in keep]


def _make_parents(checkout: str, rel: str) -> bool:
    """Create the folders of `rel` in `checkout`; False when one of them is a symlink.

    A tracked symlink to a folder must not lead the copy outside the checkout.
    """
    current = checkout
    for part in rel.split("/")[:-1]:
        current = os.path.join(current, part)
        if os.path.islink(current):
            return False
        if not os.path.isdir(current):
            os.mkdir(current)
    return True


def _copy_one(repo_root: str, checkout: str, rel: str) -> bool:
    source = os.path.join(repo_root, rel)
    destination = os.path.join(checkout, rel)
    if os.path.lexists(destination) or not os.path.lexists(source):
        return False  # never overwrite what the checkout already has
    if not _make_parents(checkout, rel):
        return False
    import shutil

    shutil.copy2(source, destination, follow_symlinks=False)
    return True


def copy_included_files(repo_root: str, checkout: str, home: str,
                        warn: Warn = _ignore_warnings) -> list[str]:
    """Copy the included files into `checkout`; return their relative paths, sorted.

    Never fails a creation: a file that cannot be copied is reported through
    `warn` and skipped.
    """
    try:
        patterns = patterns_for(repo_root, home)
        if not patterns:
            return []
        wanted = included_files(repo_root, patterns)
    except VwtError as exc:
        warn(f"files of {INCLUDE_FILE} not copied: {exc.message}")
        return []
    copied = []
    for rel in sorted(wanted):
        try:
            if _copy_one(repo_root, checkout, rel):
                copied.append(rel)
        except OSError as exc:
            warn(f"could not copy {rel} into the worktree: {exc.strerror or exc}")
    return copied
