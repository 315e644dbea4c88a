"""The console samples of the README, docs/landing.md, docs/collisions.md and docs/hooks.md are
real runs (tools/gen_samples.py):
each sample's commands run in a fresh sandbox and must print what the sample shows, ages and
column widths aside. A new column or a reworded message makes this fail until the samples are
regenerated with `python tools/gen_samples.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(PROJECT / "tools"))

import gen_samples  # noqa: E402


def test_the_samples_match_a_real_run():
    done = subprocess.run([sys.executable, str(PROJECT / "tools" / "gen_samples.py"), "--check"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_check_sees_a_sample_that_drifted():
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    assert gen_samples.samples(text), "the README's tour is no longer a checked sample"
    drifted = text.replace("BEHIND  ", "", 1).replace("  clean      no (1 change(s))",
                                                        "  clean      no", 1)
    assert drifted != text
    assert gen_samples.normalised(gen_samples.regenerate(drifted)) != \
        gen_samples.normalised(drifted)
    assert gen_samples.normalised(text.replace(" 0s ", " 3m ")) == gen_samples.normalised(text)


@pytest.mark.parametrize(("rel", "name"), [("docs/collisions.md", "collisions"),
                                           ("docs/hooks.md", "hooks")])
def test_the_collisions_and_hooks_samples_are_checked_runs(rel, name):
    text = (PROJECT / rel).read_text(encoding="utf-8")
    assert rel in gen_samples.FILES
    assert [found for found, _start, _end in gen_samples.samples(text)] == [name]


def test_the_check_sees_a_collisions_sample_with_the_pair_named_the_other_way_round():
    """How the sample was written by hand: pairs are named in name order, `a` before `b`."""
    text = (PROJECT / "docs/collisions.md").read_text(encoding="utf-8")
    drifted = text.replace("conflict  fix-typo and login-page", "conflict  login-page and fix-typo")
    assert drifted != text
    assert gen_samples.normalised(gen_samples.regenerate(drifted)) != \
        gen_samples.normalised(drifted)
