"""The warm pool (SPEC §15): fill, take, hooks run again by `inputs`, refill, failures,
changed entries, drain, races for the last entry, a kill in the middle of a fill."""

from __future__ import annotations

import json
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import Repo, Sandbox, Vwt, days_ago, is_locked

HOOK_LOG = "hook-runs.log"


def pool_config(size: int, *hooks: str) -> str:
    return f"[pool]\nsize = {size}\n\n" + "".join(hooks)


def hook(name: str, command: str, inputs: list[str] | None = None) -> str:
    text = f'[[hooks]]\nname = "{name}"\ntype = "post_create"\ncommand = {json.dumps(command)}\n'
    if inputs is not None:
        text += f"inputs = {json.dumps(inputs)}\n"
    return text + "\n"


def deps_hook(sandbox: Sandbox, inputs: list[str] | None = None, extra: str = "") -> str:
    """A stand-in for `npm ci`: makes an ignored node_modules and counts its runs."""
    log = sandbox.tmp / HOOK_LOG
    return hook("deps", f"mkdir -p node_modules && cp package.json node_modules/installed "
                        f"&& echo \"$VWT_POOL\" >> {log}{extra}", inputs)


def setup_pool(repo: Repo, vwt: Vwt, size: int, *hooks: str) -> None:
    repo.commit("pool", {".vibe/worktree.toml": pool_config(size, *hooks),
                         ".gitignore": "node_modules/\n", "package.json": "{}\n"})
    if hooks:
        vwt.ok("hooks", "approve", "--all")


def runs(sandbox: Sandbox) -> list[str]:
    path = sandbox.tmp / HOOK_LOG
    return path.read_text().splitlines() if path.exists() else []


def pool_dir(vwt: Vwt, repo: Repo) -> Path:
    return vwt.layout.root / ".pool" / repo.bucket


def status(vwt: Vwt) -> dict:
    pools = vwt.ok("pool", "--json").json()["pools"]
    assert len(pools) == 1
    return pools[0]


def wait_for_fillers(vwt: Vwt, repo: Repo, timeout: float = 60) -> None:
    """Until no background filler holds or waits for this pool's lock (`new` takes the
    waiting place for the filler it starts before it returns)."""
    folder = pool_dir(vwt, repo)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(is_locked(folder / name) for name in (".fill", ".fill-queue")
                   if (folder / name).exists()):
            return
        time.sleep(0.1)
    raise AssertionError("the pool's filler did not finish")


def pool_worktrees(repo: Repo) -> list[str]:
    return [p for p in repo.git("worktree", "list", "--porcelain").splitlines()
            if p.startswith("worktree ") and "/.pool/" in p]


def test_fill_makes_ready_entries_that_no_listing_or_health_check_sees(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 2, deps_hook(sandbox))
    assert status(vwt)["ready"] == 0
    result = vwt.ok("pool", "fill", "--json")
    pool = result.json()["pools"][0]
    assert pool == {"bucket": repo.bucket, "repo_root": str(repo.path), "size": 2,
                    "ready": 2, "filling": 0, "base": repo.head(), "broken": 0}
    assert "making entry" in result.err
    assert runs(sandbox) == ["1", "1"]  # VWT_POOL=1 while a pool entry is made
    entries = [p for p in pool_dir(vwt, repo).iterdir() if p.is_dir()]
    assert len(entries) == 2
    for entry in entries:
        assert (entry / "node_modules" / "installed").read_text() == "{}\n"
        assert repo.git("rev-parse", "HEAD", cwd=entry) == repo.head()
        assert repo.git("status", "--porcelain", cwd=entry) == ""
    assert len(pool_worktrees(repo)) == 2
    porcelain = repo.git("worktree", "list", "--porcelain").splitlines()
    assert porcelain.count("locked vibe-worktree pool entry") == 2  # no git prune drops one
    assert vwt.list("--all") == []
    assert vwt.ok("doctor", "--json").json()["healthy"] is True
    # Vibe, sharing the home, looks in <root>/<bucket> and .claims: nothing new there
    assert {p.name for p in vwt.layout.root.iterdir()} <= {".pool", ".claims", ".trash"}
    assert not vwt.layout.claims.exists() or \
        [p for p in vwt.layout.claims.iterdir() if not p.name.startswith(".")] == []


def test_new_takes_a_ready_entry_and_runs_a_hook_again_only_when_its_inputs_changed(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox, inputs=["package.json"]))
    vwt.ok("pool", "fill")
    base = repo.head()
    start = repo.commit("ten files", {f"src/f{i}.txt": f"{i}\n" for i in range(10)})
    created = vwt.new("one")
    assert created["pooled"] is True and created["base_commit"] == start
    assert created["hooks"] == [{"name": "deps", "type": "post_create", "source": "project",
                                 "status": "ok", "exit_code": 0}]
    assert runs(sandbox) == ["1"]  # only the pool's run: package.json did not change
    checkout = Path(created["path"])
    assert repo.git("rev-parse", "HEAD", cwd=checkout) == start
    assert repo.current_branch(checkout) == "one"
    assert (checkout / "src" / "f3.txt").read_text() == "3\n"
    assert (checkout / "node_modules" / "installed").exists()
    assert repo.record("one")["base_commit"] == start
    assert base != start
    wait_for_fillers(vwt, repo)
    repo.commit("deps", {"package.json": '{"dependencies": {}}\n'})
    again = vwt.new("two")
    assert again["pooled"] is True
    assert runs(sandbox)[-1] == ""  # run again in the worktree itself (VWT_POOL unset)
    assert (Path(again["path"]) / "node_modules" / "installed").read_text() == \
        '{"dependencies": {}}\n'
    wait_for_fillers(vwt, repo)


def test_a_hook_without_inputs_runs_again_whenever_the_start_point_moved(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    assert vwt.new("same")["pooled"] is True
    assert runs(sandbox) == ["1"]  # the start point is the base: nothing to run again
    wait_for_fillers(vwt, repo)
    assert runs(sandbox) == ["1", "1"]  # the refill
    repo.commit("unrelated", {"README.md": "moved on\n"})
    assert vwt.new("moved")["pooled"] is True
    assert runs(sandbox)[2] == ""
    wait_for_fillers(vwt, repo)


def tree_state(repo: Repo, checkout: Path) -> dict:
    files = {}
    for path in sorted(checkout.rglob("*")):
        rel = path.relative_to(checkout).as_posix()
        if rel == ".git" or path.is_dir():
            continue
        files[rel] = path.read_bytes()
    return {
        "branch": repo.current_branch(checkout),
        "head": repo.git("rev-parse", "HEAD", cwd=checkout),
        "index": repo.git("ls-files", "-s", cwd=checkout),
        "status": repo.git("status", "--porcelain=v2", "--branch", "--untracked-files=all",
                           "--ignored", cwd=checkout).replace(repo.current_branch(checkout),
                                                                "BRANCH"),
        "files": files,
        "upstream": repo.git_ok("rev-parse", "--abbrev-ref", "@{upstream}", cwd=checkout),
        "locked": any(block.startswith(f"worktree {checkout}\n") and "\nlocked" in block
                      for block in repo.git("worktree", "list", "--porcelain").split("\n\n")),
    }


def test_a_pooled_worktree_is_indistinguishable_from_one_made_the_slow_way(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox, inputs=["package.json"]))
    repo.write(".env", "SECRET=1\n")
    repo.commit("include", {".worktreeinclude": ".env\n", ".gitignore":
                            "node_modules/\n.env\n"})
    vwt.ok("pool", "fill")
    repo.commit("ahead", {f"lib/m{i}.txt": f"{i}\n" for i in range(10)}
                | {"README.md": "changed\n"})
    pooled = vwt.new("fast", "--no-fetch")
    wait_for_fillers(vwt, repo)
    vwt.ok("pool", "drain")
    slow = vwt.new("slow", "--no-fetch")
    assert (pooled["pooled"], slow["pooled"]) == (True, False)
    for key in ("base_commit", "branch_created", "created", "hooks", "sparse", "bucket",
                "repo_root"):
        assert pooled[key] == slow[key], key

    def comparable(record: dict) -> dict:
        return {k: v for k, v in record.items() if k not in ("name", "branch", "claimed_at")}

    assert comparable(repo.record("fast")) == comparable(repo.record("slow"))
    assert repo.record("fast")["branch"] == "fast"
    fast, slow_state = (tree_state(repo, Path(pooled["path"])),
                        tree_state(repo, Path(slow["path"])))
    assert fast.pop("branch") == "fast" and slow_state.pop("branch") == "slow"
    assert fast == slow_state
    assert fast["files"][".env"] == b"SECRET=1\n"
    assert not fast["locked"]


def test_a_failing_hook_leaves_no_ready_entry_and_fill_exits_1(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 2, hook("deps", "echo npm ERR! broken >&2; exit 3"))
    result = vwt("pool", "fill")
    assert result.code == 1
    assert "post_create hook deps exited 3" in result.err
    assert "npm ERR! broken" in result.err
    assert status(vwt)["ready"] == 0 and status(vwt)["broken"] == 0
    assert pool_worktrees(repo) == []
    created = vwt.new("slow")
    assert created["pooled"] is False


def test_an_entry_with_changes_is_never_handed_out_and_is_snapshotted_before_removal(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    [entry] = [p for p in pool_dir(vwt, repo).iterdir() if p.is_dir()]
    (entry / "notes.txt").write_text("someone's work\n")
    result = vwt("new", "fresh", "--json")
    assert result.code == 0 and result.json()["pooled"] is False
    assert "has changes" in result.err
    assert not (Path(result.json()["path"]) / "notes.txt").exists()
    wait_for_fillers(vwt, repo)  # the refill cleaned it up, with a snapshot first
    assert not entry.exists()
    ref = f"refs/vibe/pool/{entry.name}"
    assert repo.git("show", f"{ref}:notes.txt") == "someone's work"


def test_a_hook_that_leaves_changes_makes_no_ready_entry(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, hook("dirty", "echo changed >> README.md"))
    result = vwt("pool", "fill")
    assert result.code == 1 and "must be clean" in result.err
    assert status(vwt)["ready"] == 0
    assert pool_worktrees(repo) == []
    assert repo.git("for-each-ref", "refs/vibe/pool/") != ""  # the change was kept


def test_drain_empties_the_pool_and_git_forgets_its_checkouts(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 3, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    assert len(pool_worktrees(repo)) == 3
    drained = vwt.ok("pool", "drain", "--json").json()["pools"][0]
    assert drained["ready"] == 0
    assert pool_worktrees(repo) == []
    assert [p.name for p in pool_dir(vwt, repo).iterdir() if not p.name.startswith(".")] == []
    assert vwt.layout.trash_entries() == []


def test_new_refills_the_pool_in_the_background(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 2, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    slow = deps_hook(sandbox, extra=" && sleep 3")
    repo.commit("slow refills", {".vibe/worktree.toml": pool_config(2, slow)})
    vwt.ok("hooks", "approve", "--all")
    assert vwt.new("one")["pooled"] is True
    assert status(vwt)["ready"] == 1  # new did not wait for the refill (a 3 s hook)
    wait_for_fillers(vwt, repo)
    assert status(vwt)["ready"] == 2


def test_a_configured_pool_starts_filling_after_the_first_new(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    assert vwt.new("first")["pooled"] is False
    wait_for_fillers(vwt, repo)
    assert status(vwt)["ready"] == 1
    assert vwt.new("second")["pooled"] is True
    wait_for_fillers(vwt, repo)


def test_no_hooks_never_takes_a_pool_entry(repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    created = vwt.new("bare", "--no-hooks")
    assert created["pooled"] is False and created["hooks"] == []
    assert not (Path(created["path"]) / "node_modules").exists()
    assert status(vwt)["ready"] == 1


def test_an_unapproved_hook_is_skipped_in_the_pool_and_asked_again_when_taken(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    repo.commit("pool", {".vibe/worktree.toml": pool_config(1, deps_hook(sandbox)),
                         ".gitignore": "node_modules/\n", "package.json": "{}\n"})
    vwt.ok("pool", "fill")
    assert status(vwt)["ready"] == 1 and runs(sandbox) == []
    vwt.ok("hooks", "approve", "deps")
    created = vwt.new("later")
    assert created["pooled"] is True
    assert created["hooks"][0]["status"] == "ok"
    assert runs(sandbox) == [""]  # it did not run in the pool, so it runs now
    wait_for_fillers(vwt, repo)


@pytest.mark.slow
def test_racing_new_calls_for_the_last_entry_each_get_a_distinct_whole_worktree(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    (sandbox.vibe_home / "worktree.toml").write_text("[pool]\nsize = 0\n")  # no refill: one
    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(lambda i: vwt("new", f"racer-{i}", "--json", "--no-fetch"),
                                range(6)))
    docs = [r.json() for r in results if r.code == 0]
    assert len(docs) == 6, [str(r) for r in results if r.code]
    assert sum(d["pooled"] for d in docs) == 1
    assert len({d["path"] for d in docs}) == 6
    for doc in docs:
        checkout = Path(doc["path"])
        assert repo.current_branch(checkout) == doc["name"]
        assert (checkout / "node_modules" / "installed").exists()
        assert repo.git("status", "--porcelain", cwd=checkout) == ""
    wait_for_fillers(vwt, repo)


@pytest.mark.slow
def test_a_fill_killed_in_the_middle_hands_nothing_out_and_is_cleaned_up(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    started = sandbox.tmp / "started"
    setup_pool(repo, vwt, 1, hook("slow", f"echo $$ > {started}; exec sleep 30"))
    filler = vwt.spawn("pool", "fill", new_session=True)
    deadline = time.monotonic() + 30
    while not (started.exists() and started.read_text().strip()) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(filler.pid, signal.SIGKILL)
    os.kill(int(started.read_text()), signal.SIGKILL)  # the hook (its own process group)
    filler.wait()
    half = status(vwt)
    assert half["ready"] == 0 and half["filling"] == 0 and half["broken"] == 1
    created = vwt.new("meanwhile", "--no-hooks")
    assert created["pooled"] is False
    doctor = vwt("doctor", "--json")
    assert doctor.code == 1
    assert [p["kind"] for p in doctor.json()["problems"]] == ["broken_pool_entry"]
    assert doctor.json()["problems"][0]["fix"] == f"vwt -C {repo.path} pool drain"
    vwt.ok("prune", "--json")
    assert status(vwt)["broken"] == 0
    assert pool_worktrees(repo) == []


def test_prune_trims_entries_beyond_the_size_and_too_old(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 3, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    markers = sorted(pool_dir(vwt, repo).glob("*.json"))
    old = json.loads(markers[0].read_text())
    markers[0].write_text(json.dumps(old | {"created_at": days_ago(8)}))
    repo.commit("smaller", {".vibe/worktree.toml": pool_config(1, deps_hook(sandbox))})
    vwt.ok("hooks", "approve", "--all")
    vwt.ok("prune", "--keep", "0")
    assert status(vwt)["ready"] == 1
    assert markers[0].name not in [p.name for p in pool_dir(vwt, repo).glob("*.json")]
    assert len(pool_worktrees(repo)) == 1
    assert vwt.list() == []


@pytest.mark.slow
def test_a_background_refill_killed_mid_hook_hands_nothing_out_and_the_next_fill_cleans_up(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    armed, pids = sandbox.tmp / "armed", sandbox.tmp / "pids"
    slow_in_pool = (f'if [ -n "$VWT_POOL" ] && [ -f {armed} ]; then echo "$PPID $$" > {pids}; '
                    f"exec sleep 60; fi; mkdir -p node_modules && echo ok > node_modules/x")
    setup_pool(repo, vwt, 1, hook("deps", slow_in_pool))
    vwt.ok("pool", "fill")
    armed.touch()
    assert vwt.new("first")["pooled"] is True  # its refill hangs in the hook
    deadline = time.monotonic() + 60
    while not (pids.exists() and len(pids.read_text().split()) == 2):
        assert time.monotonic() < deadline, "the background refill never ran its hook"
        time.sleep(0.05)
    filler, hook_pid = (int(p) for p in pids.read_text().split())
    os.kill(filler, signal.SIGKILL)
    os.kill(hook_pid, signal.SIGKILL)
    wait_for_fillers(vwt, repo)
    half = status(vwt)
    assert (half["ready"], half["filling"], half["broken"]) == (0, 0, 1)
    armed.unlink()
    second = vwt.new("second")
    assert second["pooled"] is False  # the half-made entry was not handed out
    assert (Path(second["path"]) / "node_modules" / "x").is_file()
    wait_for_fillers(vwt, repo)  # second's refill cleaned up, then made a whole entry
    after = status(vwt)
    assert (after["ready"], after["broken"]) == (1, 0)
    assert len(pool_worktrees(repo)) == 1
