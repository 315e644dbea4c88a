"""Names and automatic slugs (SPEC §3)."""

from __future__ import annotations

import re

import pytest

from conftest import assert_error

INVALID_NAMES = {
    "empty": "",
    "less-than": "a<b",
    "greater-than": "a>b",
    "colon": "a:b",
    "double-quote": 'a"b',
    "slash": "a/b",
    "backslash": "a\\b",
    "pipe": "a|b",
    "question-mark": "a?b",
    "asterisk": "a*b",
    "control-char": "a\x01b",
    "tab": "a\tb",
    "escape": "a\x1bb",
    "newline": "a\nb",
    "trailing-space": "name ",
    "trailing-dot": "name.",
    "dot": ".",
    "dotdot": "..",
    "CON": "CON",
    "con-lowercase": "con",
    "PRN": "PRN",
    "AUX": "Aux",
    "NUL": "NUL",
    "nul-with-extension": "nul.txt",
    "con-space-extension": "CON .txt",
    "aux-with-double-extension": "aux.tar.gz",
    "CONIN$": "CONIN$",
    "conout$": "conout$",
    "CLOCK$": "CLOCK$",
    "COM1": "COM1",
    "com9-with-extension": "com9.log",
    "LPT1": "LPT1",
    "lpt9": "lpt9",
    "too-long": "x" * 101,
    "too-long-in-characters": "é" * 101,
    "branch-double-dot": "foo..bar",
    "branch-dot-lock": "foo.lock",
    "branch-tilde": "foo~1",
    "branch-caret": "foo^",
    "branch-at-brace": "a@{b",
    "branch-leading-dot": ".hidden",
    "branch-bracket": "a[b",
    "branch-space": "a b",
}


@pytest.mark.parametrize("name", list(INVALID_NAMES.values()), ids=list(INVALID_NAMES))
def test_invalid_name_is_rejected_with_exit_2(repo, vwt, name):
    before = repo.worktree_paths()
    result = vwt("new", name, "--json")
    assert_error(result, 2)
    assert repo.worktree_paths() == before
    assert repo.git("branch", "--list") == "* main"


@pytest.mark.parametrize(
    "name",
    ["x" * 100, "é" * 100, "com0", "console", "nul-ish", "a.b", "CON-1", "Mixed_Case-9", "café"],
    ids=["exactly-100", "100-characters-200-bytes", "com0", "console", "nul-ish", "inner-dot",
         "con-dash", "mixed", "unicode"],
)
def test_valid_name_is_accepted(repo, vwt, name):
    result = vwt.new(name)
    assert result["name"] == name
    assert result["path"] == str(repo.checkout(name))


def test_empty_name_is_not_a_request_for_an_automatic_name(repo, vwt):
    result = vwt("new", "")
    assert_error(result, 2)
    assert len(repo.worktree_paths()) == 1


# --- slugs ---------------------------------------------------------------------------------

SLUGS = {
    "basic": ("Fix the login bug", "fix-the-login-bug"),
    "accents-dropped-not-separators": ("résumé", "resume"),
    "accents-in-words": ("Naïve café résumé parser", "naive-cafe-resume-parser"),
    "nfkd-ligatures": ("ﬁx the ﬂag", "fix-the-flag"),
    "non-ascii-words-dropped": ("日本 update docs", "update-docs"),
    "punctuation-runs": ("Hello, World!!  __foo__", "hello-world-foo"),
    "leading-trailing-separators": ("  --Deploy!--  ", "deploy"),
    "six-words": ("one two three four five six seven eight", "one-two-three-four-five-six"),
    "forty-chars-word-boundary": (
        "internationalization localization globalization",
        "internationalization-localization",
    ),
    "trailing-stop-words": ("add tests for the", "add-tests"),
    "trailing-stop-word-it": ("Fix it", "fix"),
    "stop-words-after-six-word-cut": (
        "fix bug in the parser of the module",
        "fix-bug-in-the-parser",
    ),
    "stop-words-after-length-cut": (
        "configuration management for the distributed systems",
        "configuration-management",
    ),
    "single-stop-word-kept": ("the", "the"),
    "only-stop-words-keep-one": ("to to to", "to"),
    "digits": ("Bump version 2 0 1", "bump-version-2-0-1"),
}


@pytest.mark.parametrize("prompt,slug", list(SLUGS.values()), ids=list(SLUGS))
def test_prompt_becomes_slug_and_vibe_branch(repo, vwt, prompt, slug):
    result = vwt.new("-p", prompt)
    assert result["name"] == slug
    assert result["branch"] == f"vibe/{slug}"
    assert result["path"] == str(repo.checkout(slug))
    assert repo.current_branch(cwd=repo.checkout(slug)) == f"vibe/{slug}"


def test_long_prompt_option(repo, vwt):
    result = vwt.new("--prompt", "Write the README")
    assert result["name"] == "write-the-readme"
    assert result["branch"] == "vibe/write-the-readme"


def test_slug_collisions_get_numbered_suffixes(repo, vwt):
    names = [vwt.new("-p", "Refactor cache")["name"] for _ in range(3)]
    assert names == ["refactor-cache", "refactor-cache-2", "refactor-cache-3"]
    assert repo.branch_exists("vibe/refactor-cache-3")


def test_taken_branch_moves_the_slug_to_a_suffix(repo, vwt):
    repo.git("branch", "vibe/add-logging")
    result = vwt.new("-p", "add logging")
    assert result["name"] == "add-logging-2"
    assert result["branch"] == "vibe/add-logging-2"


def test_snapshot_reservation_is_not_taken_by_auto_naming(repo, vwt):
    first = vwt.new("-p", "write docs")
    repo.write("draft.md", "draft\n", base=first["path"])
    assert vwt("rm", "write-docs", "-y").code == 0
    assert repo.recovery_path("write-docs").exists()
    # the branch was ours and is gone; the name is still reserved by its recovery record
    second = vwt.new("-p", "write docs")
    assert second["name"] == "write-docs-2"
    assert repo.recovery_path("write-docs").exists()


def test_explicit_name_is_not_suffixed(repo, vwt):
    vwt.new("-p", "same thing")
    result = vwt.new("same-thing")  # explicit: reuse, not a new suffix
    assert result["name"] == "same-thing"
    assert result["created"] is False


READABLE_SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


@pytest.mark.parametrize("args", [(), ("-p", ""), ("-p", "!!! ???"), ("-p", "日本語")],
                         ids=["no-prompt", "empty-prompt", "punctuation-only", "non-ascii-only"])
def test_missing_or_empty_slug_gets_a_random_readable_name(repo, vwt, args):
    result = vwt.new(*args)
    name = result["name"]
    assert READABLE_SLUG.match(name), name
    assert result["branch"] == f"vibe/{name}"
    assert result["created"] is True
    assert result["path"] == str(repo.checkout(name))


def test_random_names_differ(repo, vwt):
    a = vwt.new()["name"]
    b = vwt.new()["name"]
    assert a != b
