"""Property-based tests of name validation and prompt slugs (spec section 3)."""

from __future__ import annotations

import os
import re
import subprocess
import unicodedata

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from vibe_worktree.core.errors import InvalidName
from vibe_worktree.core.names import (
    branch_name_problem,
    path_segment_problem,
    slugify,
    validate_name,
)

FORBIDDEN = set('<>:"/\\|?*')
DEVICES = {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$", "CLOCK$",
           *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
STOP = {"a", "an", "and", "at", "for", "in", "is", "it", "me", "my", "of", "on", "the", "to",
        "with"}

name_chars = st.characters(codec="utf-8", exclude_characters="\x00")
names = st.one_of(
    st.text(name_chars, min_size=0, max_size=110),
    st.text(st.sampled_from("abcXYZ019-_.@{}/~^: \t*[]\\"), min_size=1, max_size=20),
    st.sampled_from(sorted(DEVICES)).flatmap(
        lambda d: st.sampled_from([d, d.lower(), f"{d}.txt", f"{d} .txt", f"{d}  "])),
)


def git_accepts_branch(name: str) -> bool:
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    proc = subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True,
                          env=env, cwd="/", timeout=10)
    printed = proc.stdout.decode(errors="surrogateescape").removesuffix("\n")
    return proc.returncode == 0 and printed == name


def accepted(name: str) -> bool:
    try:
        validate_name(name, as_branch=True)
        return True
    except InvalidName:
        return False


def portable_segment(name: str) -> bool:
    return bool(name) and len(name) <= 100 and name not in (".", "..") \
        and not (FORBIDDEN & set(name)) \
        and not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in name) \
        and name[-1] not in " ." \
        and name.split(".", 1)[0].rstrip(" ").upper() not in DEVICES


@settings(max_examples=1500, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(names)
@example("")
@example("nul.txt")
@example("CON .txt")
@example("a..b")
@example("@")
@example("x.lock")
@example("-x")
def test_every_accepted_name_is_a_portable_segment(name: str) -> None:
    if accepted(name):
        assert portable_segment(name), name
        assert branch_name_problem(name) is None
        assert path_segment_problem(name) is None
        assert os.path.basename(name) == name and os.sep not in name


@settings(max_examples=250, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(names)
@example("a..b")
@example("x.lock")
@example("@")
@example("HEAD")
@example("-x")
@example("a@{b")
@example("é")
@example("a\u200bb")
@example("\x85")
def test_branch_validation_agrees_with_git(name: str) -> None:
    assume("\n" not in name)
    ours = branch_name_problem(name) is None
    if ours:  # everything we accept, git accepts (the property that protects us)
        assert git_accepts_branch(name), f"we accept {name!r}, git refuses it"
    if accepted(name):
        assert git_accepts_branch(name)


@settings(max_examples=1500, deadline=None, derandomize=True)
@given(st.text(max_size=300))
@example("résumé of the day")
@example("Fix the login bug for me")
@example("the the the")
@example("a" * 80)
@example("\u00bc \ufb01le \uff21\uff22\uff23")
def test_every_slug_satisfies_the_spec(prompt: str) -> None:
    slug = slugify(prompt)
    assert slug == slug.strip("-")
    assert re.fullmatch(r"([a-z0-9]+(-[a-z0-9]+)*)?", slug), slug
    assert len(slug) <= 40
    words = slug.split("-") if slug else []
    assert len(words) <= 6
    if len(words) > 1:
        assert words[-1] not in STOP
    ascii_text = unicodedata.normalize("NFKD", prompt).encode("ascii", "ignore").decode()
    source = [w for w in re.split(r"[^a-z0-9]+", ascii_text.lower()) if w]
    if source:
        assert slug, prompt
        assert source[:len(words)][:-1] == words[:-1] or len(words) == 1
        if len(words) > 1:
            assert words == source[:len(words)]  # whole words, in order, from the start
    else:
        assert slug == ""
    if slug:  # an auto name (and its -N forms) is itself a valid worktree name and branch
        # a bare device-name slug (`nul`, `com1`) is skipped by auto-naming, which goes on
        # to `nul-2`; every numbered form must be valid
        assert path_segment_problem(slug) is None or slug.upper() in DEVICES
        assert path_segment_problem(f"{slug}-2") is None
        assert path_segment_problem(f"{slug}-100") is None
        assert branch_name_problem(f"vibe/{slug}-100") is None


@pytest.mark.parametrize("prompt,slug", [
    ("résumé", "resume"), ("Fix the login bug", "fix-the-login-bug"),
    ("add tests for the", "add-tests"), ("", ""), ("!!!", ""),
    ("one two three four five six seven", "one-two-three-four-five-six"),
])
def test_slug_examples(prompt: str, slug: str) -> None:
    assert slugify(prompt) == slug
