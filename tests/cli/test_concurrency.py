"""Parallel use of one repository (SPEC §6 concurrency)."""

from __future__ import annotations

import json
import os
import signal

from conftest import wait_for

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


def _blocking_post_checkout_hook(repo, sandbox):
    """Make `git worktree add` (run by `vwt new`) pause until we release it."""
    started = sandbox.tmp / "hook.started"
    release = sandbox.tmp / "hook.release"
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text(
        "#!/bin/sh\n"
        f"touch '{started}'\n"
        f"i=0; while [ ! -e '{release}' ] && [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done\n"
    )
    hook.chmod(0o755)
    return started, release


def test_prune_during_creation_never_removes_the_starting_worktree(repo, vwt, sandbox):
    started, release = _blocking_post_checkout_hook(repo, sandbox)
    creating = vwt.spawn("new", "in-progress", "--json")
    wait_for(started.exists)
    pruned = vwt("prune", "--keep", "0", "--json")
    assert pruned.code == 0, str(pruned)
    out = pruned.json()
    assert "in-progress" not in [r["name"] for r in out["removed"]]
    assert "in-progress" not in [r["name"] for r in out["reservations_discarded"]]
    assert repo.record_path("in-progress").exists()
    release.touch()
    stdout, stderr = creating.communicate(timeout=60)
    assert creating.returncode == 0, stderr
    assert json.loads(stdout)["created"] is True
    assert vwt.entry("in-progress")["state"] == "ready"


def test_creation_killed_midway_is_repaired_by_prune(repo, vwt, sandbox):
    started, release = _blocking_post_checkout_hook(repo, sandbox)
    creating = vwt.spawn("new", "crashed", "--json", new_session=True)
    wait_for(started.exists)
    # SIGKILL to vwt and its git children, in the middle of `git worktree add`: no cleanup at all
    os.killpg(creating.pid, signal.SIGKILL)
    creating.wait(timeout=10)
    release.touch()
    listed = vwt("list", "--json")
    assert listed.code == 0, str(listed)
    pruned = vwt("prune", "--json")
    assert pruned.code == 0, str(pruned)
    assert not [p for p in repo.live_holders("crashed")], "no live holder survives its process"
    # the name is usable again: a new attempt reuses or recreates it
    again = vwt("new", "crashed", "--json")
    assert again.code == 0, str(again)
    assert vwt.entry("crashed")["state"] == "ready"
    assert repo.checkout("crashed") in repo.worktree_paths()
