"""Gitignore-style patterns over paths relative to a checkout (a hook's `inputs`)."""

from __future__ import annotations

import re
from collections.abc import Sequence


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """One gitignore-style pattern as a regex over a file's path (matching the file, or
    any folder above it)."""
    dir_only = pattern.endswith("/")
    pattern = pattern.rstrip("/")
    anchored = "/" in pattern
    pattern = pattern.lstrip("/")
    body, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            body, i = body + "(?:.*/)?", i + 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            body, i = body + "/.*", i + 3
        elif pattern.startswith("**", i):
            body, i = body + ".*", i + 2
        elif pattern[i] == "*":
            body, i = body + "[^/]*", i + 1
        elif pattern[i] == "?":
            body, i = body + "[^/]", i + 1
        elif pattern[i] == "[" and "]" in pattern[i + 1:]:
            end = pattern.index("]", i + 1)
            body, i = body + "[" + pattern[i + 1:end].replace("!", "^", 1) + "]", end + 1
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            body, i = body + re.escape(pattern[i + 1]), i + 2
        else:
            body, i = body + re.escape(pattern[i]), i + 1
    prefix = "" if anchored else "(?:.*/)?"
    suffix = "/.*" if dir_only else "(?:/.*)?"
    return re.compile(f"{prefix}{body}{suffix}")


def any_matches(patterns: Sequence[str], paths: Sequence[str]) -> bool:
    """True when one of `paths` is matched by the gitignore-style `patterns` (the last
    matching pattern decides; `!` negates)."""
    compiled = [(p.startswith("!"), _pattern_regex(p.removeprefix("!")))
                for p in patterns if p.strip() and not p.startswith("#")]
    for path in paths:
        matched = False
        for negated, regex in compiled:
            if regex.fullmatch(path):
                matched = not negated
        if matched:
            return True
    return False
