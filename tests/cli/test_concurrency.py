"""Parallel use of one repository (SPEC §6 concurrency)."""

from __future__ import annotations

import json

N = 4


def test_parallel_creates_of_one_name_create_exactly_once(repo, vwt):
    procs = [vwt.spawn("new", "shared", "--json") for _ in range(N)]
    results = [(p.wait(timeout=60), *p.communicate()) for p in procs]
    created = []
    for code, out, err in results:
        assert "Traceback" not in err, err
        if code == 0:
            created.append(json.loads(out)["created"])
        else:
            assert code == 1, (code, out, err)
            assert err.strip()
    assert created.count(True) == 1, results
    assert repo.worktree_paths().count(repo.checkout("shared")) == 1
    assert len(repo.worktree_paths()) == 2
    entry = vwt.entry("shared")
    assert entry["state"] == "ready"


def test_parallel_auto_naming_gives_distinct_worktrees(repo, vwt):
    procs = [vwt.spawn("new", "-p", "Same task", "--json") for _ in range(N)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert "Traceback" not in err
        outs.append(json.loads(out))
    names = [o["name"] for o in outs]
    assert len(set(names)) == N, names
    assert all(n == "same-task" or n.startswith("same-task-") for n in names), names
    assert len({o["branch"] for o in outs}) == N
    assert len(repo.worktree_paths()) == N + 1
    assert all(o["created"] for o in outs)


def test_prune_racing_new_leaves_every_worktree_whole(repo, vwt):
    """prune --keep 0 may reap a finished creation (with a snapshot), never a half-made one."""
    creators = [vwt.spawn("new", f"fresh-{i}", "--json") for i in range(3)]
    pruners = [vwt.spawn("prune", "--keep", "0", "--json") for _ in range(2)]
    for p in creators:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
    for p in pruners:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert json.loads(out)["reservations_discarded"] == []
    states = {e["name"]: e["state"] for e in vwt.list()}
    worktrees = repo.worktree_paths()
    for i in range(3):
        name = f"fresh-{i}"
        assert states.get(name) in ("ready", "snapshot"), states
        if states[name] == "ready":
            assert repo.checkout(name) in worktrees
        else:
            assert repo.ref_exists(f"refs/vibe/reaped/{name}")
            assert not repo.checkout(name).exists()
