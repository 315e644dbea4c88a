"""The argparse-free parse of the hot commands agrees with argparse, or steps aside."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vibe_worktree.cli import _command_name, _parse_hot, build_parser

TOKENS = [
    "new", "list", "rm", "--all", "--no-status", "--json", "--no-fetch", "--cd", "-p", "--prompt",
    "-b", "--branch", "--from", "--home", "-C", "--no-s", "--prompt=x", "-pfoo", "-h", "--", "-",
    "-x", "name", "other", "", "fix the bug", "/tmp/h", "--no-hooks",
]


def argparse_result(argv: list[str]) -> dict[str, object] | None:
    command = _command_name(argv)
    try:
        ns = build_parser(only=command).parse_args(argv)
    except SystemExit:
        return None
    return vars(ns)


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=7))
def test_agrees_with_argparse_whenever_it_answers(argv: list[str]) -> None:
    fast = _parse_hot(argv, _command_name(argv))
    if fast is None:
        return
    assert argparse_result(argv) == vars(fast), argv


@pytest.mark.parametrize("argv", [
    ["list", "--no-status", "--json"],
    ["--home", "/tmp/h", "-C", "/tmp", "list", "--all"],
    ["new", "task", "--no-fetch"],
    ["new", "-p", "fix the bug", "--json", "--from", "main"],
    ["new", "--branch", "b", "name", "--cd"],
    ["new", "task", "--no-hooks", "--json"],
])
def test_the_common_forms_take_the_fast_path(argv: list[str]) -> None:
    fast = _parse_hot(argv, _command_name(argv))
    assert fast is not None
    assert vars(fast) == argparse_result(argv)


@pytest.mark.parametrize("argv", [
    ["list", "--no-s"], ["list", "-h"], ["new", "-pfoo"], ["new", "--prompt=x"],
    ["new", "a", "b"], ["new", "-p", "-x"], ["list", "--home", "/tmp"], ["new", "--", "a"],
    ["rm", "a"], ["--home"], ["--json", "list"],
])
def test_anything_unusual_is_left_to_argparse(argv: list[str]) -> None:
    assert _parse_hot(argv, _command_name(argv)) is None


def test_namespace_has_what_handlers_read() -> None:
    fast = _parse_hot(["new", "x"], "new")
    assert isinstance(build_parser(only="new").parse_args(["new", "x"]), argparse.Namespace)
    assert fast is not None and fast.name == "x" and fast.prompt is None and not fast.json
