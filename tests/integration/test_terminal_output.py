"""What a person sees: the coloured `list` table and progress, only on a terminal."""

from __future__ import annotations

import re

from .vwt_support import VWT, Box, run_on_terminal

ESC = "\033["


def test_list_on_a_terminal_is_a_coloured_aligned_table(box: Box) -> None:
    box.new("a")
    box.new("much-longer-name")
    code, out = run_on_terminal([VWT, "list"], box.repo, box.env)
    assert code == 0
    assert f"{ESC}32mready{ESC}0m" in out
    lines = [ln for ln in out.replace("\r", "").splitlines() if "ready" in ln]
    plain = [_strip(ln) for ln in lines]
    assert len(plain) == 2
    assert plain[0].index("ready") == plain[1].index("ready"), "aligned despite colour codes"
    header = _strip(next(ln for ln in out.replace("\r", "").splitlines() if "NAME" in ln))
    for column in ("NAME", "BRANCH", "STATE", "AHEAD", "CHANGES", "HOLDERS", "AGE", "PATH"):
        assert column in header


def test_no_colour_when_piped_or_with_no_color(box: Box) -> None:
    box.new("a")
    assert ESC not in box.ok("list").out
    code, out = run_on_terminal([VWT, "list"], box.repo, {**box.env, "NO_COLOR": "1"})
    assert code == 0 and "ready" in out
    assert "m" not in "".join(re.findall(r"\033\[[0-9;]*[A-Za-z]", out)), "no colour codes"


def test_json_and_pipes_stay_silent_even_on_a_terminal(box: Box) -> None:
    box.new("a")
    code, out = run_on_terminal([VWT, "prune", "--keep", "5", "--json"], box.repo, box.env)
    assert code == 0 and ESC not in out and "pruning" not in out
    code, out = run_on_terminal([VWT, "list", "--json"], box.repo, box.env)
    assert code == 0 and out.lstrip().startswith("[") and ESC not in out
    piped = box.ok("prune", "--keep", "5")
    assert "pruning" not in piped.err


def test_prune_shows_a_progress_line_on_a_terminal_then_erases_it(box: Box) -> None:
    box.new("a")
    code, out = run_on_terminal([VWT, "prune", "--keep", "5"], box.repo, box.env)
    assert code == 0
    assert "vwt: pruning" in out and f"\r{ESC}K" in out


def _strip(text: str) -> str:
    return re.sub(r"\033\[[0-9;]*[A-Za-z]", "", text)

