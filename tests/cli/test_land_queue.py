"""The land queue (SPEC §18) with real concurrent `vwt land` processes on one target: first
come first served, none lost, none landed twice."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path

import pytest

from land_support import Lander, on_main, tickets, with_work

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def land(vwt, sandbox):
    return Lander(vwt)


def _wait_until(predicate, procs, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        for proc in procs:
            if proc.poll() is not None and proc.returncode != 0:
                out, err = proc.communicate()
                raise AssertionError(f"a land ended early ({proc.returncode}):\n{out}\n{err}")
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _finish(procs) -> list[dict]:
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert "Traceback" not in err, err
        reports.append(json.loads(out))
    return reports


def test_lands_go_in_arrival_order(repo, vwt, land, sandbox):
    names = [f"w{i}" for i in range(5)]
    for name in names:
        with_work(repo, vwt, name)
    order, release = sandbox.tmp / "order.txt", sandbox.tmp / "release"
    gate = (f'echo "$VWT_NAME" >> {order}; while [ ! -e {release} ]; do sleep 0.02; done')
    procs = []
    for i, name in enumerate(names):
        procs.append(land.spawn(name, "--gate", gate, "--json"))
        if i == 0:  # the first has the turn (its gate waits); the others queue behind it
            _wait_until(order.exists, procs)
        else:
            _wait_until(lambda n=i: len(tickets(repo)) == n + 1, procs)
    release.write_text("")
    reports = _finish(procs)
    assert [p.returncode for p in procs] == [0] * 5
    assert order.read_text().split() == names
    assert [r["results"][0]["outcome"] for r in reports] == ["merged"] * 5
    landed = repo.git("log", "--format=%s", f"-{len(names)}", "main").splitlines()
    assert landed[::-1] == [f"{name}: work" for name in names]
    assert tickets(repo) == []


def test_racing_lands_land_each_worktree_exactly_once(repo, vwt, land):
    names = [f"w{i}" for i in range(6)]
    for name in names:
        with_work(repo, vwt, name)
    before = repo.git("rev-parse", "main")
    rng = random.Random(6)
    procs = [land.spawn(*rng.sample(names, len(names)), "--gate", "sleep 0.05", "--json")
             for _ in range(4)]
    reports = _finish(procs)
    results = [r for report in reports for r in report["results"]]
    merged = Counter(r["name"] for r in results if r["outcome"] == "merged")
    assert merged == Counter(names), results  # none lost, none twice
    assert {r["outcome"] for r in results} <= {"merged", "busy", "not_found"}
    assert repo.git("rev-list", "--count", f"{before}..main") == str(len(names))
    for name in names:
        assert on_main(repo, f"{name}.txt") == f"{name}'s work\n"
    assert tickets(repo) == []
    assert vwt("doctor").code == 0


@pytest.mark.slow
def test_racing_ready_lands_share_out_the_worktrees(repo, vwt, land):
    names = [f"r{i}" for i in range(5)]
    for name in names:
        with_work(repo, vwt, name)
    procs = [land.spawn("--ready", "--json") for _ in range(3)]
    reports = _finish(procs)
    results = [r for report in reports for r in report["results"]]
    merged = Counter(r["name"] for r in results if r["outcome"] == "merged")
    assert merged == Counter(names), results
    assert all(r["outcome"] == "merged" for r in results), results
    assert vwt("doctor").code == 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(8))
def test_many_racing_lands_of_random_subsets(repo, vwt, land, seed):
    rng = random.Random(seed)
    names = [f"s{i}" for i in range(8)]
    for name in names:
        with_work(repo, vwt, name)
    procs = [land.spawn(*rng.sample(names, rng.randint(1, len(names))), "--gate",
                        f"sleep {rng.choice(['0', '0.02', '0.1'])}", "--json")
             for _ in range(rng.randint(2, 6))]
    reports = _finish(procs)
    results = [r for report in reports for r in report["results"]]
    merged = Counter(r["name"] for r in results if r["outcome"] == "merged")
    asked = {r["name"] for r in results}
    assert merged == Counter(asked), (seed, results)
    for name in names:
        assert (on_main(repo, f"{name}.txt") is not None) == (name in asked)
    assert tickets(repo) == []
    assert vwt("doctor").code == 0
    assert Path(repo.path).is_dir()
