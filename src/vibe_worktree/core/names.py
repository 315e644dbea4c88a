"""Worktree names: validation of explicit names and branch names, slugs from prompts."""

from __future__ import annotations

import os
import re
from functools import cache

from .errors import InvalidName

MAX_NAME_LENGTH = 100
MAX_SLUG_LENGTH = 40
MAX_SLUG_WORDS = 6
AUTO_BRANCH_PREFIX = "vibe/"

_FORBIDDEN_CHARS = frozenset('<>:"/\\|?*')
_RESERVED_DEVICES = frozenset(
    ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$"]
    + [f"{dev}{digit}" for dev in ("COM", "LPT") for digit in "123456789\u00b9\u00b2\u00b3"]
)
_STOP_WORDS = frozenset(
    ["a", "an", "and", "at", "for", "in", "is", "it", "me", "my", "of", "on", "the", "to", "with"]
)
_ADJECTIVES = (
    "amber brisk calm clever cosmic crisp daring eager fuzzy gentle golden happy humble "
    "jolly keen lively lucky mellow nimble plucky quick quiet rapid shiny silent snappy "
    "steady sunny swift tidy vivid witty"
).split()
_NOUNS = (
    "badger beacon comet falcon fern gecko harbor heron koala lantern lynx maple marten "
    "meadow narwhal otter panda pebble puffin quokka raven river robin salmon sparrow "
    "spruce tiger walrus willow wombat"
).split()


@cache  # compiled on first use, not at import: start-up time
def _unportable() -> re.Pattern[str]:
    return re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f-\x9f]')  # forbidden or control characters


def _is_control(char: str) -> bool:
    code = ord(char)
    return code < 0x20 or 0x7F <= code <= 0x9F


def is_reserved_device_name(name: str) -> bool:
    """True for names Windows maps to a device, also with an extension or trailing spaces."""
    stem = name.split(".", 1)[0].rstrip(" ")
    return stem.upper() in _RESERVED_DEVICES


def path_segment_problem(name: str) -> str | None:
    """Why `name` is not one portable path segment, or None when it is."""
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return "it is '.' or '..'"
    if len(name) > MAX_NAME_LENGTH:
        return f"it is longer than {MAX_NAME_LENGTH} characters"
    if _unportable().search(name):
        bad = sorted({c for c in name if c in _FORBIDDEN_CHARS})
        if bad:
            return f"it contains {''.join(bad)!r}"
        return "it contains a control character"
    if name[-1] in " .":
        return "it ends with a space or a dot"
    if is_reserved_device_name(name):
        return "it is a reserved device name on Windows"
    return None


def branch_name_problem(branch: str) -> str | None:
    """Why git would refuse `branch` as a branch name (`git check-ref-format --branch`)."""
    if not branch:
        return "it is empty"
    if branch.startswith("-"):
        return "it starts with '-'"
    if branch == "HEAD" or branch == "@":
        return f"'{branch}' is reserved by git"
    if "@{" in branch:
        return "it contains '@{'"
    if ".." in branch:
        return "it contains '..'"
    if any(_is_control(c) and ord(c) < 0x80 for c in branch):
        return "it contains a control character"
    bad = sorted({c for c in branch if c in " ~^:?*[\\"})
    if bad:
        return f"it contains {''.join(bad)!r}"
    if branch.startswith("/") or branch.endswith("/") or "//" in branch:
        return "it has an empty path component"
    if branch.endswith("."):
        return "it ends with a dot"
    for component in branch.split("/"):
        if component.startswith("."):
            return "a component starts with a dot"
        if component.endswith(".lock"):
            return "a component ends with '.lock'"
    return None


def validate_name(name: str, *, as_branch: bool) -> str:
    """Return `name` if it is a valid explicit worktree name, else raise InvalidName."""
    problem = path_segment_problem(name)
    if problem is None and as_branch:
        problem = branch_name_problem(name)
    if problem is not None:
        raise InvalidName(f"invalid worktree name {name!r}: {problem}; choose another name")
    return name


def validate_branch(branch: str) -> str:
    problem = branch_name_problem(branch)
    if problem is not None:
        raise InvalidName(f"invalid branch name {branch!r}: {problem}; choose another branch")
    return branch


def slugify(prompt: str) -> str:
    """Readable slug of a task prompt per the spec; may be empty."""
    import unicodedata  # only auto-naming pays for it

    ascii_text = unicodedata.normalize("NFKD", prompt).encode("ascii", "ignore").decode()
    words = [w for w in re.split(r"[^a-z0-9]+", ascii_text.lower()) if w][:MAX_SLUG_WORDS]
    kept: list[str] = []
    for word in words:
        if len("-".join([*kept, word])) > MAX_SLUG_LENGTH:
            break
        kept.append(word)
    if not kept and words:
        kept = [words[0][:MAX_SLUG_LENGTH]]
    while len(kept) > 1 and kept[-1] in _STOP_WORDS:
        kept.pop()
    return "-".join(kept)


def random_slug() -> str:
    """A readable random name such as `brisk-otter-4f2a`."""
    raw = os.urandom(4)
    adjective = _ADJECTIVES[raw[0] % len(_ADJECTIVES)]
    noun = _NOUNS[raw[1] % len(_NOUNS)]
    return f"{adjective}-{noun}-{raw[2:].hex()}"


def candidate_names(slug: str) -> list[str]:
    """Names auto-naming tries in order: the slug, then `<slug>-2` ... `<slug>-100`."""
    return [slug] + [f"{slug}-{n}" for n in range(2, 101)]
