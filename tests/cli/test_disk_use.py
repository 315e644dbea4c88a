"""Disk use (SPEC §15): `vwt list --size` counts as `du -s` does; `vwt prune --max-size`
bounds what managed worktrees and the pool take, pool entries first, snapshots first."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import Repo, Sandbox, Vwt

MIB = 1024 * 1024


def du_bytes(path: Path) -> int:
    return int(subprocess.run(["du", "-sB1", str(path)], capture_output=True, text=True,
                              check=True).stdout.split()[0])


def fill_with(path: Path, mib: int) -> None:
    (path / "big.bin").write_bytes(os.urandom(mib * MIB))


def test_list_size_counts_each_checkout_as_du_does(repo: Repo, sandbox: Sandbox,
                                                   vwt: Vwt) -> None:
    one = Path(vwt.new("one")["path"])
    two = Path(vwt.new("two")["path"])
    fill_with(one, 1)
    os.link(one / "big.bin", one / "again.bin")  # a hard link: counted once
    (two / "outside").symlink_to(one)  # a symlink is never followed
    rows = {r["name"]: r for r in vwt.list("--size")}
    assert rows["one"]["size"] == du_bytes(one)
    assert rows["two"]["size"] == du_bytes(two)
    assert MIB <= rows["one"]["size"] < 2 * MIB
    assert rows["two"]["size"] < MIB
    assert "size" not in vwt.list()[0]
    table = vwt.ok("list", "--size", "--no-status").out.splitlines()
    assert table[0].split()[-2:] == ["SIZE", "PATH"]
    assert table[1].split()[-2].endswith("M")


@pytest.mark.slow
def test_prune_max_size_removes_pool_entries_first_then_the_oldest_unheld_worktrees(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, holder) -> None:
    repo.commit("pool", {".vibe/worktree.toml": "[pool]\nsize = 1\n"})
    for name in ("oldest", "held", "middle", "newest"):
        fill_with(Path(vwt.new(name, "--no-hooks")["path"]), 2)
        time.sleep(0.01)
    vwt.ok("pool", "fill")
    pool_bytes = sum(du_bytes(p) for p in (vwt.layout.root / ".pool" / repo.bucket).iterdir()
                     if p.is_dir())
    sizes = {r["name"]: r["size"] for r in vwt.list("--size")}
    keep_alive = holder(repo.bucket, "held")
    wt = vwt.layout.root / repo.bucket
    (wt / "oldest" / "notes.txt").write_text("unsaved work\n")
    limit = sizes["middle"] + sizes["newest"] + 64 * 1024  # room for two worktrees
    plan = vwt.ok("prune", "--keep", "50", "--max-size", str(limit), "--dry-run",
                  "--json").json()
    assert [r["name"] for r in plan["removed"]] == ["oldest", "middle"]
    assert (wt / "oldest").exists()
    done = vwt.ok("prune", "--keep", "50", "--max-size", f"{limit / MIB:.3f}M",
                  "--json").json()
    assert len(done["pool_removed"]) == 1
    assert [(r["name"], r["reason"]) for r in done["removed"]] == [("oldest", "max_size"),
                                                                    ("middle", "max_size")]
    assert done["kept"] == [{"name": "held", "bucket": repo.bucket, "reason": "held"}]
    # the pool entry, and the oldest worktree with the note written after it was measured
    freed = pool_bytes + sizes["oldest"] + sizes["middle"]
    assert 0 <= done["freed_bytes"] - freed <= 8192
    assert abs(plan["freed_bytes"] - done["freed_bytes"]) <= 8192  # the plan said as much
    assert not (wt / "oldest").exists() and (wt / "held").exists()
    assert (wt / "newest").exists() and not (wt / "middle").exists()
    assert repo.git("show", "refs/vibe/reaped/oldest:notes.txt") == "unsaved work"
    keep_alive.kill()


def test_max_size_of_config_toml_applies_when_no_flag_is_given(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    for name in ("first", "second"):
        fill_with(Path(vwt.new(name)["path"]), 1)
        time.sleep(0.01)
    (sandbox.vibe_home / "config.toml").write_text('max_size = "1500K"\n')
    done = vwt.ok("prune", "--json").json()
    assert [r["name"] for r in done["removed"]] == ["first"]
    assert done["freed_bytes"] >= 1024 * 1024
    bad = vwt("prune", "--max-size", "lots")
    assert bad.code == 2 and "not a size" in bad.err


def test_list_size_shows_no_size_where_there_is_no_checkout_and_adds_a_total(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    one = Path(vwt.new("one")["path"])
    fill_with(one, 1)
    two = Path(vwt.new("two")["path"])
    gone = Path(vwt.new("gone")["path"])
    (gone / "work.txt").write_text("work\n")
    vwt.ok("rm", "gone", "-y")  # a snapshot: restorable, no checkout
    rows = {r["name"]: r for r in vwt.list("--size")}
    assert rows["gone"]["state"] == "snapshot"
    assert rows["gone"]["size"] is None
    assert rows["one"]["size"] == du_bytes(one)
    table = vwt.ok("list", "--size", "--no-status").out.splitlines()
    [gone_row] = [line for line in table if line.startswith("gone ")]
    assert gone_row.split()[-2] == "-"
    from vibe_worktree.core.disk import human

    total = du_bytes(one) + du_bytes(two)
    assert table[-1] == f"total {human(total)} in 2 checkouts"


@pytest.mark.slow
def test_list_size_mentions_what_the_pool_takes(repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    repo.commit("pool", {".vibe/worktree.toml": "[pool]\nsize = 1\n"})
    one = Path(vwt.new("one", "--no-hooks")["path"])
    vwt.ok("pool", "fill")
    [entry] = [p for p in (vwt.layout.root / ".pool" / repo.bucket).iterdir() if p.is_dir()]
    from vibe_worktree.core.disk import human

    last = vwt.ok("list", "--size", "--no-status").out.splitlines()[-1]
    assert last == (f"total {human(du_bytes(one))} in 1 checkout; the warm pool takes "
                    f"{human(du_bytes(entry))} more (vwt pool)")
    assert vwt.ok("pool", "--json").json()["pools"][0]["bytes"] == du_bytes(entry)
