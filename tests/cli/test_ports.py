"""Port leases (SPEC §17) through the commands: unique across the home, never a port
something listens on, kept for a worktree's life, given back on every removal, repaired by
prune; and many processes at once never share a port."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import Repo, Sandbox, Vwt, assert_error
from vibe_worktree.core.layout import Root
from vibe_worktree.core.leases import Lease, read_table
from vibe_worktree.core.ports import port_for


def table(sandbox: Sandbox) -> dict[str, int]:
    return read_table(Root.at(str(sandbox.vibe_home)))


def set_range(sandbox: Sandbox, low: int, high: int) -> None:
    sandbox.vibe_home.mkdir(parents=True, exist_ok=True)
    (sandbox.vibe_home / "config.toml").write_text(f"port_range = [{low}, {high}]\n")


def set_count(sandbox: Sandbox, count: int) -> None:
    sandbox.vibe_home.mkdir(parents=True, exist_ok=True)
    (sandbox.vibe_home / "worktree.toml").write_text(f"[ports]\ncount = {count}\n")


def assert_disjoint(blocks: list[list[int]]) -> None:
    seen: set[int] = set()
    for block in blocks:
        assert seen.isdisjoint(block), f"{block} overlaps another lease"
        seen.update(block)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def server(sandbox: Sandbox) -> Iterator[int]:
    """A real `python -m http.server` listening on a port of its own, outside any lease."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                                "127.0.0.1"], cwd=sandbox.tmp, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        wait_for_http(port)
        yield port
    finally:
        process.kill()
        process.wait()


def wait_for_http(port: int, timeout: float = 30) -> int:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                return int(answer.status)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


# -- made, unique, kept -------------------------------------------------------------------------
@pytest.mark.slow
def test_every_worktree_of_every_repository_leases_its_own_block(
        make_repo, sandbox: Sandbox, vwt: Vwt) -> None:
    set_count(sandbox, 3)
    first, second = make_repo("first"), make_repo("second")
    made = [vwt.new(f"w{i}", cwd=repo.path) for i in range(3) for repo in (first, second)]
    assert all(len(doc["ports"]) == 3 for doc in made)
    assert all(doc["ports"] == list(range(doc["ports"][0], doc["ports"][0] + 3)) for doc in made)
    assert_disjoint([doc["ports"] for doc in made])
    leases = table(sandbox)
    assert len(leases) == 6
    for doc in made:
        repo = first if doc["repo_root"] == str(first.path) else second
        assert leases[f"{doc['bucket']}/{doc['name']}"] == doc["ports"][0]
        assert repo.record(doc["name"])["ports"] == doc["ports"]
        assert vwt.ok("port", doc["name"], "--json", cwd=repo.path).json() == {
            "name": doc["name"], "bucket": doc["bucket"], "port": doc["ports"][0],
            "ports": doc["ports"]}
        assert vwt.ok("port", doc["name"], cwd=repo.path).out == f"{doc['ports'][0]}\n"
        assert vwt.ok("status", doc["name"], "--json", cwd=repo.path).json()["ports"] == \
            doc["ports"]
    listed = [tuple(row["ports"]) for row in vwt.list("--all", "--no-status")]
    assert sorted(listed) == sorted(tuple(d["ports"]) for d in made)


def test_the_first_lease_of_a_name_is_its_hash_port(repo: Repo, sandbox: Sandbox,
                                                     vwt: Vwt) -> None:
    before = int(vwt.ok("port", "web").out)  # a name that is no worktree yet: its hash port
    assert before == port_for(repo.bucket, "web", 20000, 29999)
    assert vwt.new("web")["ports"] == [before]


def test_a_worktree_keeps_its_lease_and_count_for_its_life(repo: Repo, sandbox: Sandbox,
                                                            vwt: Vwt) -> None:
    ports = vwt.new("web")["ports"]
    set_count(sandbox, 4)
    assert vwt.new("web")["ports"] == ports, "a reuse keeps the lease it had"
    assert vwt.ok("port", "web", "--json").json()["ports"] == ports
    assert len(vwt.new("later")["ports"]) == 4


@pytest.mark.slow
def test_a_port_a_real_server_listens_on_is_never_leased(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, server: int) -> None:
    set_range(sandbox, server, server + 20)
    made = [vwt.new(f"w{i}")["ports"] for i in range(12)]
    assert all(server not in ports for ports in made)
    assert_disjoint(made)


def test_no_free_block_fails_naming_port_range_and_makes_nothing(
        repo: Repo, sandbox: Sandbox, vwt: Vwt, server: int) -> None:
    set_range(sandbox, server, server)  # the only port of the range is in use
    branches = repo.git("branch", "--list")
    result = vwt("new", "web", "--json")
    assert_error(result, 1)
    assert "port_range" in result.err
    assert not repo.checkout("web").exists() and not repo.claim("web").exists()
    assert repo.git("branch", "--list") == branches
    assert table(sandbox) == {}


def test_a_dev_server_of_a_worktree_runs_on_its_leased_port(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    port = vwt.new("web")["ports"][0]
    server = vwt.spawn("run", "web", "--", "sh", "-c",
                       f'exec "{sys.executable}" -m http.server "$PORT" --bind 127.0.0.1',
                       new_session=True)
    try:
        assert wait_for_http(port) == 200
        assert port not in vwt.new("other")["ports"]
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # vwt run and its server
        server.communicate(timeout=30)


# -- given back ---------------------------------------------------------------------------------
def test_every_removal_gives_the_lease_back(repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    for name in ("removed", "merged", "pruned", "kept"):
        vwt.new(name)
    repo.commit("work", {"work.txt": "work\n"}, cwd=repo.checkout("merged"))
    vwt.ok("rm", "removed", "-y")
    vwt.ok("merge", "merged", "--no-fetch")
    repo.edit_record("pruned", claimed_at="2001-01-01T00:00:00Z")
    assert [r["name"] for r in vwt.ok("prune", "--keep", "1", "--json").json()["removed"]] \
        == ["pruned"]
    assert list(table(sandbox)) == [f"{repo.bucket}/kept"]


def test_restore_gets_the_same_block_back_when_it_is_still_free(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    set_count(sandbox, 2)
    ports = vwt.new("web")["ports"]
    (repo.checkout("web") / "work.txt").write_text("work\n")
    vwt.ok("rm", "web", "-y")
    assert repo.recovery("web")["ports"] == ports
    set_count(sandbox, 5)
    assert vwt.ok("restore", "web", "--json").json()["ports"] == ports

    (repo.checkout("web") / "work.txt").write_text("more work\n")
    vwt.ok("rm", "web", "-y")
    with socket.socket() as squatter:  # something else now listens on its old port
        squatter.bind(("127.0.0.1", ports[1]))
        squatter.listen()
        again = vwt.ok("restore", "web", "--json").json()["ports"]
    assert len(again) == 2 and ports[1] not in again


# -- repaired ----------------------------------------------------------------------------------
def test_prune_drops_the_lease_of_a_creation_killed_after_leasing(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    killed = vwt("new", "web", "--json", env_extra={"VWT_CRASH_AT": "new.leased"})
    assert killed.code == -9, str(killed)
    assert f"{repo.bucket}/web" in table(sandbox)
    pruned = vwt.ok("prune", "--json").json()
    assert pruned["reservations_discarded"] == [{"name": "web", "bucket": repo.bucket}]
    assert table(sandbox) == {}, "discarding the reservation gave its lease back"
    assert vwt.new("web")["ports"]


def test_a_vibe_worktree_gets_its_hash_block_until_prune_leases_it(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    set_count(sandbox, 2)
    repo.add_vibe_worktree("vibe-made", vibe_session={"id": "abc"})
    hashed = port_for(repo.bucket, "vibe-made", 20000, 29999)
    assert vwt.ok("port", "vibe-made", "--json").json()["ports"] == [hashed, hashed + 1]
    assert vwt.ok("env", "vibe-made", "--json").json()["env"]["VWT_PORTS"] == \
        f"{hashed} {hashed + 1}"
    assert table(sandbox) == {}, "reading commands lease nothing"
    vwt.ok("prune", "--json")
    assert table(sandbox) == {f"{repo.bucket}/vibe-made": hashed}
    record = repo.record("vibe-made")
    assert record["ports"] == [hashed, hashed + 1]
    assert record["vibe_session"] == {"id": "abc"}, "Vibe's own fields are kept"
    # Vibe removes its worktree its own way, knowing nothing of leases: prune drops the lease
    repo.git("worktree", "remove", "--force", str(repo.checkout("vibe-made")))
    repo.record_path("vibe-made").unlink()
    pruned = vwt.ok("prune", "--json").json()
    assert pruned["leases_dropped"] == [{"name": "vibe-made", "bucket": repo.bucket}]
    assert table(sandbox) == {}


def test_a_table_that_is_not_one_is_rebuilt_by_prune(repo: Repo, sandbox: Sandbox,
                                                      vwt: Vwt) -> None:
    ports = vwt.new("web")["ports"]
    path = sandbox.vibe_home / "worktrees" / ".claims" / ".ports.json"
    path.write_text("{ not json")
    refused = vwt("new", "other", "--json")
    assert_error(refused, 1)
    assert "vwt prune" in refused.err
    assert vwt.ok("port", "web").out == f"{ports[0]}\n", "a reader takes the record's word"
    vwt.ok("prune")
    assert table(sandbox) == {f"{repo.bucket}/web": ports[0]}


def test_prune_gives_back_a_lease_the_table_lost(repo: Repo, sandbox: Sandbox,
                                                 vwt: Vwt) -> None:
    """A power cut can take the (unflushed) table back to before a lease: the record still
    names the block, and prune leases it again, or a new one when another took it since."""
    set_count(sandbox, 2)
    kept = vwt.new("kept")["ports"]
    moved = vwt.new("moved")["ports"]
    path = sandbox.vibe_home / "worktrees" / ".claims" / ".ports.json"
    path.write_text(json.dumps({f"{repo.bucket}/moved": moved[0]}))  # "kept" was lost
    vwt.ok("prune")
    assert table(sandbox) == {f"{repo.bucket}/kept": kept[0], f"{repo.bucket}/moved": moved[0]}
    # "moved" was lost, and another worktree leased the second port of its block since
    vwt.new("other")
    repo.edit_record("other", ports=[moved[1]])
    path.write_text(json.dumps({f"{repo.bucket}/kept": kept[0],
                                f"{repo.bucket}/other": moved[1]}))
    vwt.ok("prune")
    again = repo.record("moved")["ports"]
    assert len(again) == 2 and moved[1] not in again and not set(again) & set(kept)
    assert table(sandbox)[f"{repo.bucket}/moved"] == again[0]


# -- every path that makes a managed worktree ----------------------------------------------------
@pytest.mark.slow
def test_adopt_and_the_pool_take_lease_and_pool_entries_do_not(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    repo.commit("pool", {".vibe/worktree.toml": "[pool]\nsize = 1\n"})
    vwt.ok("pool", "fill")
    assert table(sandbox) == {}, "a pool entry holds no lease"
    taken = vwt.new("taken", "--no-fetch")
    assert taken["pooled"] is True and taken["ports"]
    source = sandbox.tmp / "theirs"
    repo.git("worktree", "add", "-q", "-b", "theirs", str(source))
    adopted = vwt.ok("adopt", str(source), "--json").json()["adopted"][0]
    leases = table(sandbox)
    assert leases[f"{repo.bucket}/taken"] == taken["ports"][0]
    assert leases[f"{repo.bucket}/{adopted['name']}"] == repo.record(adopted["name"])["ports"][0]
    assert_disjoint([repo.record(n)["ports"] for n in ("taken", adopted["name"])])


# -- many at once --------------------------------------------------------------------------------
@pytest.mark.slow
def test_64_concurrent_news_get_64_disjoint_blocks(repo: Repo, sandbox: Sandbox,
                                                   vwt: Vwt) -> None:
    set_count(sandbox, 2)
    set_range(sandbox, 30000, 30199)  # 100 blocks of two for 64: hash starts collide often
    procs = [vwt.spawn("new", f"c{i:02d}", "--no-fetch", "--json") for i in range(64)]
    made = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        made.append(json.loads(out))
    blocks = [doc["ports"] for doc in made]
    assert all(len(b) == 2 for b in blocks)
    assert_disjoint(blocks)
    leases = table(sandbox)
    assert len(leases) == 64
    assert {(f"{d['bucket']}/{d['name']}", d["ports"][0]) for d in made} == set(leases.items())
    for doc in made:
        assert repo.record(doc["name"])["ports"] == doc["ports"]


LEASER = r"""
import json, os, sys
from vibe_worktree.core.layout import Root
from vibe_worktree.core.leases import leasing
root, name = Root.at(sys.argv[1]), sys.argv[2]
with leasing(root, "app-0123456789ab", name, 2) as lease:
    folder = f"{root.claims}/app-0123456789ab/{name}"
    os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/record.json", "w") as out:
        json.dump({"version": 1, "name": name, "ports": list(lease.ports)}, out)
print(json.dumps(list(lease.ports)))
"""


def test_64_processes_leasing_at_once_get_64_disjoint_blocks(tmp_path: Path) -> None:
    root = Root.at(str(tmp_path))
    Path(root.path).mkdir()
    # room for 100 blocks of two: the hash starts of 64 names collide often
    Path(root.config_file).write_text("port_range = [41000, 41199]\n")
    procs = [subprocess.Popen([sys.executable, "-c", LEASER, root.home, f"s{i:02d}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(64)]
    blocks = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        blocks.append(tuple(json.loads(out)))
    assert_disjoint([list(Lease(b[0], len(b)).ports) for b in blocks])
    assert len(read_table(root)) == 64
    assert {(p, p + 1) for p in read_table(root).values()} == set(blocks)


