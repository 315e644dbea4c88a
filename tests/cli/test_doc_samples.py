"""The console samples of the README and docs/landing.md are real runs (tools/gen_samples.py):
each sample's commands run in a fresh sandbox and must print what the sample shows, ages and
column widths aside. A new column or a reworded message makes this fail until the samples are
regenerated with `python tools/gen_samples.py`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
