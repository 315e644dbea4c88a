"""The warm pool (SPEC §15): fill, take (by `new`, the Claude Code hook and MCP `create`),
hooks run again by `inputs`, refill (one filler at a time), failures, changed entries, drain,
prune by size and by age, races for the last entry, a kill in the middle of a fill."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import (
    MCP_INSTALLED,
    Repo,
    Sandbox,
    Vwt,
    assert_matches_schema,
    days_ago,
    is_locked,
    mcp_answer,
    mcp_send,
    mcp_session,
    wait_for,
)

HOOK_LOG = "hook-runs.log"


def pool_config(size: int, *hooks: str) -> str:
    return f"[pool]\nsize = {size}\n\n" + "".join(hooks)


def hook(name: str, command: str, inputs: list[str] | None = None) -> str:
    text = f'[[hooks]]\nname = "{name}"\ntype = "post_create"\ncommand = {json.dumps(command)}\n'
    if inputs is not None:
        text += f"inputs = {json.dumps(inputs)}\n"
    return text + "\n"


def deps_hook(sandbox: Sandbox, inputs: list[str] | None = None, extra: str = "") -> str:
    """A stand-in for `npm ci`: makes an ignored node_modules and logs each run's `VWT_POOL`
    and the folder it ran in."""
    log = sandbox.tmp / HOOK_LOG
    return hook("deps", f"mkdir -p node_modules && cp package.json node_modules/installed "
                        f"&& echo \"$VWT_POOL|$(pwd -P)\" >> {log}{extra}", inputs)


def setup_pool(repo: Repo, vwt: Vwt, size: int, *hooks: str) -> None:
    repo.commit("pool", {".vibe/worktree.toml": pool_config(size, *hooks),
                         ".gitignore": "node_modules/\n", "package.json": "{}\n"})
    if hooks:
        vwt.ok("hooks", "approve", "--all")


def _logged(sandbox: Sandbox) -> list[tuple[str, str]]:
    path = sandbox.tmp / HOOK_LOG
    lines = path.read_text().splitlines() if path.exists() else []
    return [(pool, where) for pool, _, where in (line.partition("|") for line in lines)]


def runs(sandbox: Sandbox) -> list[str]:
    """`VWT_POOL` of each run of the deps hook, in order: "1" in the pool, "" in a worktree."""
    return [pool for pool, _ in _logged(sandbox)]


def runs_in(sandbox: Sandbox, checkout: str | Path) -> list[str]:
    """`VWT_POOL` of each run of the deps hook in `checkout` itself. Runs in the pool are
    logged with the pool folder's path, so a background refill never shows here."""
    return [pool for pool, where in _logged(sandbox) if where == str(Path(checkout).resolve())]


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


@pytest.mark.slow
def test_fill_makes_ready_entries_that_no_listing_or_health_check_sees(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 2, deps_hook(sandbox))
    assert status(vwt)["ready"] == 0
    result = vwt.ok("pool", "fill", "--json")
    pool = result.json()["pools"][0]
    assert pool.pop("bytes") > 0
    assert pool == {"bucket": repo.bucket, "repo_root": str(repo.path), "size": 2,
                    "ready": 2, "filling": 0, "base": repo.head(), "broken": 0,
                    "last_error": None, "last_error_at": None, "log": None}
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
                                 "status": "pooled", "exit_code": 0}]
    checkout = Path(created["path"])
    assert runs_in(sandbox, checkout) == []  # package.json did not change: not run again
    wait_for_fillers(vwt, repo)
    assert runs(sandbox) == ["1", "1"]  # the fill's run and the refill's, both in the pool
    assert repo.git("rev-parse", "HEAD", cwd=checkout) == start
    assert repo.current_branch(checkout) == "one"
    assert (checkout / "src" / "f3.txt").read_text() == "3\n"
    assert (checkout / "node_modules" / "installed").exists()
    assert repo.record("one")["base_commit"] == start
    assert base != start
    repo.commit("deps", {"package.json": '{"dependencies": {}}\n'})
    again = vwt.new("two")
    assert again["pooled"] is True
    assert runs_in(sandbox, again["path"]) == [""]  # run again in the worktree itself
    assert (Path(again["path"]) / "node_modules" / "installed").read_text() == \
        '{"dependencies": {}}\n'
    wait_for_fillers(vwt, repo)
    assert runs(sandbox) == ["1", "1", "", "1"]  # and two's refill in the pool


@pytest.mark.slow
def test_a_hook_without_inputs_runs_again_whenever_the_start_point_moved(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    same = vwt.new("same")
    assert same["pooled"] is True
    assert runs_in(sandbox, same["path"]) == []  # the start point is the base: not run again
    wait_for_fillers(vwt, repo)
    assert runs(sandbox) == ["1", "1"]  # the fill and the refill, in the pool
    repo.commit("unrelated", {"README.md": "moved on\n"})
    moved = vwt.new("moved")
    assert moved["pooled"] is True
    assert runs_in(sandbox, moved["path"]) == [""]
    wait_for_fillers(vwt, repo)
    assert runs(sandbox) == ["1", "1", "", "1"]


def ready_entry(vwt: Vwt, repo: Repo) -> tuple[Path, int]:
    """The one ready entry of a pool of size 1, and its folder's inode (a take renames the
    folder into place, so the worktree handed out keeps it)."""
    [marker] = pool_dir(vwt, repo).glob("*.json")
    entry = marker.with_suffix("")
    return entry, entry.stat().st_ino


def assert_handed_out(vwt: Vwt, repo: Repo, sandbox: Sandbox, entry: Path, inode: int,
                      checkout: Path, name: str) -> None:
    """`checkout` is the pool's entry, moved into place, its hook not run again."""
    assert checkout == repo.checkout(name) and checkout.stat().st_ino == inode
    assert not entry.exists() and not entry.with_suffix(".json").exists()
    assert (checkout / "node_modules" / "installed").read_text() == "{}\n"  # made in the pool
    assert runs_in(sandbox, checkout) == []  # the start point is the entry's base
    assert repo.current_branch(checkout) == name
    assert repo.git("status", "--porcelain", cwd=checkout) == ""
    assert repo.record(name)["base_commit"] == repo.head()
    assert not any(block.startswith(f"worktree {checkout}\n") and "\nlocked" in block
                   for block in repo.git("worktree", "list", "--porcelain").split("\n\n"))
    wait_for_fillers(vwt, repo)
    assert runs(sandbox) == ["1", "1"]  # the fill and the refill, both in the pool
    assert status(vwt)["ready"] == 1 and entry.name not in {
        p.name for p in pool_dir(vwt, repo).iterdir()}


def file_stats(checkout: Path) -> dict[str, tuple[int, int]]:
    """Each file's inode and mtime (ns), `.git` left out: git writes a file it checks out
    as a new one, so a file it wrote shows a new inode or mtime."""
    stats = {}
    for path in checkout.rglob("*"):
        rel = path.relative_to(checkout).as_posix()
        if rel != ".git" and path.is_file():
            stats[rel] = (path.stat().st_ino, path.stat().st_mtime_ns)
    return stats


@pytest.mark.slow
def test_a_take_writes_only_the_files_that_differ_from_the_entrys_base(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    """Issue 24: the branch is made at the start point with only the differing files
    touched; every other file of the entry is the same file, untouched since the fill."""
    repo.commit("many files", {f"src/f{i}.txt": f"{i}\n" for i in range(300)})
    setup_pool(repo, vwt, 1, deps_hook(sandbox, inputs=["package.json"]))
    vwt.ok("pool", "fill")
    entry, _ = ready_entry(vwt, repo)
    before = file_stats(entry)
    changed = {"src/f7.txt": "seven\n", "src/f250.txt": "two hundred and fifty\n"}
    start = repo.commit("two of many", changed)
    created = vwt.new("feat")
    assert created["pooled"] is True and created["base_commit"] == start
    checkout = Path(created["path"])
    after = file_stats(checkout)
    assert set(after) == set(before) and len(before) > 300  # the hook did not run again
    for rel, text in changed.items():
        assert (checkout / rel).read_text() == text
        assert after[rel] != before[rel]
    untouched = {rel: stat for rel, stat in after.items() if rel not in changed}
    assert untouched == {rel: stat for rel, stat in before.items() if rel not in changed}
    assert repo.current_branch(checkout) == "feat"
    assert repo.git("status", "--porcelain", cwd=checkout) == ""
    wait_for_fillers(vwt, repo)


@pytest.mark.slow
def test_the_claude_code_hook_hands_out_a_ready_entry(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    entry, inode = ready_entry(vwt, repo)
    payload = json.loads((Path(__file__).parents[1] / "agents" / "payloads" /
                          "WorktreeCreate.json").read_text())
    payload.update(cwd=str(repo.path), name="agent-pooled")
    del payload["session_id"]
    result = vwt("hook", "claude-code", input=json.dumps(payload))
    assert result.code == 0, str(result)
    assert result.out.endswith("\n") and len(result.out.splitlines()) == 1, repr(result.out)
    checkout = Path(result.out.strip())
    assert_handed_out(vwt, repo, sandbox, entry, inode, checkout, "agent-pooled")
    assert repo.record("agent-pooled")["agent"] == "claude-code"
    assert vwt.entry("agent-pooled") is not None


@pytest.mark.slow
@pytest.mark.skipif(not MCP_INSTALLED, reason="needs the optional mcp extra")
def test_the_mcp_create_tool_hands_out_a_ready_entry(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    entry, inode = ready_entry(vwt, repo)
    with mcp_session(vwt, repo.path) as proc:
        mcp_send(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                        "params": {"name": "create", "arguments": {"name": "mcp-pooled"}}})
        called = mcp_answer(proc, 2)
        assert called is not None and not called["result"].get("isError"), called
        document = called["result"]["structuredContent"]
        assert_matches_schema("mcp-create", document)
        assert json.loads(called["result"]["content"][0]["text"]) == document
        assert document["pooled"] is True and document["created"] is True
        assert document["hooks"] == [{"name": "deps", "type": "post_create",
                                      "source": "project", "status": "pooled", "exit_code": 0}]
        assert_handed_out(vwt, repo, sandbox, entry, inode, Path(document["path"]),
                          "mcp-pooled")

def fillers_of(sandbox: Sandbox) -> set[int]:
    """The pids of the background fillers (`python -m vibe_worktree.lifecycle.pool_fill HOME
    REPO FD`) of this sandbox's home that are alive now."""
    home = {str(sandbox.vibe_home), os.path.realpath(sandbox.vibe_home)}
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue  # it ended meanwhile
        args = [a.decode(errors="replace") for a in argv]
        if "vibe_worktree.lifecycle.pool_fill" in args[:4] and home & set(args):
            parents[int(pid)] = int(stat.rsplit(")", 1)[1].split()[1])
    # a filler's child (git, a hook) shows the filler's command line until its exec
    return {pid for pid, parent in parents.items() if parent not in parents}


class FillerWatch:
    """Samples the live fillers every 20 ms: the most alive at once, and every pid seen."""

    def __init__(self, sandbox: Sandbox) -> None:
        import threading

        self.sandbox, self.most, self.seen = sandbox, 0, set[int]()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            alive = fillers_of(self.sandbox)
            self.most, self.seen = max(self.most, len(alive)), self.seen | alive
            self.stop.wait(0.02)

    def __enter__(self) -> FillerWatch:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join()


@contextlib.contextmanager
def gate_opened_at_exit(gate: Path) -> Iterator[None]:
    """A failing test leaves no hook waiting for its gate."""
    try:
        yield
    finally:
        gate.touch()


@pytest.mark.slow
def test_refills_cannot_pile_up_one_filler_fills_and_at_most_one_waits(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    armed, gate = sandbox.tmp / "armed", sandbox.tmp / "gate"
    busy, log = sandbox.tmp / "busy", sandbox.tmp / "fills.log"
    # once armed, each run in the pool logs "fill" and waits for the gate to open
    gated_in_pool = (f'if [ -n "$VWT_POOL" ] && [ -f {armed} ]; then '
                     f"mkdir {busy} 2>/dev/null || echo overlap >> {log}; echo fill >> {log}; "
                     f"while [ ! -f {gate} ]; do sleep 0.05; done; rmdir {busy}; fi; "
                     f"mkdir -p node_modules && echo ok > node_modules/x")
    setup_pool(repo, vwt, 3, hook("deps", gated_in_pool))
    vwt.ok("pool", "fill")
    armed.touch()

    def fills() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    folder = pool_dir(vwt, repo)
    with FillerWatch(sandbox) as watch, gate_opened_at_exit(gate):
        assert vwt.new("s0", "--no-fetch")["pooled"] is True
        wait_for(lambda: fills() == ["fill"])  # its filler holds .fill, in the hook
        [first] = fillers_of(sandbox)
        # each take asks for a refill: the first starts a filler that waits, the next
        # starts none (the waiting one will see its take); a slow `new` asks for none
        assert [vwt.new(f"s{i}", "--no-fetch")["pooled"] for i in (1, 2, 3)] == [
            True, True, False]
        time.sleep(0.5)  # room for a filler that should not exist to show up
        alive = fillers_of(sandbox)
        assert len(alive) == 2 and first in alive, alive
        assert is_locked(folder / ".fill") and is_locked(folder / ".fill-queue")
        assert fills() == ["fill"]
        gate.touch()
        wait_for_fillers(vwt, repo)
        wait_for(lambda: not fillers_of(sandbox))
    assert watch.most == 2 and len(watch.seen) == 2, watch.seen
    # never two fills at once, and one fill per entry taken
    assert fills() == ["fill"] * 3
    after = status(vwt)
    assert (after["ready"], after["filling"], after["broken"]) == (3, 0, 0)
    assert len(pool_worktrees(repo)) == 3


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
    for key in ("base_commit", "branch_created", "created", "sparse", "bucket", "repo_root"):
        assert pooled[key] == slow[key], key
    # the same hooks, the pooled one's result being the pool's run (SPEC §15)
    assert [h.pop("status") for h in pooled["hooks"]] == ["pooled"]
    assert [h.pop("status") for h in slow["hooks"]] == ["ok"]
    assert pooled["hooks"] == slow["hooks"]

    def comparable(record: dict) -> dict:  # each has a lease of its own (one port)
        return {k: v for k, v in record.items()
                if k not in ("name", "branch", "claimed_at", "ports")}

    assert len(repo.record("fast")["ports"]) == len(repo.record("slow")["ports"]) == 1

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


@pytest.mark.slow
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


@pytest.mark.slow
def test_new_refills_the_pool_in_the_background(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 2, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    gate = sandbox.tmp / "gate"
    # a refill's hook cannot end before the test opens the gate; the take's own run is not
    # gated: `new` returning at all shows it did not wait for the refill
    slow = deps_hook(sandbox, extra=f' && if [ -n "$VWT_POOL" ]; then '
                                    f"while [ ! -f {gate} ]; do sleep 0.05; done; fi")
    repo.commit("slow refills", {".vibe/worktree.toml": pool_config(2, slow)})
    vwt.ok("hooks", "approve", "--all")
    with gate_opened_at_exit(gate):
        assert vwt.new("one")["pooled"] is True
        assert status(vwt)["ready"] == 1
        gate.touch()
        wait_for_fillers(vwt, repo)
    assert status(vwt)["ready"] == 2


@pytest.mark.slow
def test_a_configured_pool_starts_filling_after_the_first_new(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    assert vwt.new("first")["pooled"] is False
    wait_for_fillers(vwt, repo)
    assert status(vwt)["ready"] == 1
    assert vwt.new("second")["pooled"] is True
    wait_for_fillers(vwt, repo)


@pytest.mark.slow
def test_no_hooks_never_takes_a_pool_entry(repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 1, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    created = vwt.new("bare", "--no-hooks")
    assert created["pooled"] is False and created["hooks"] == []
    assert not (Path(created["path"]) / "node_modules").exists()
    assert status(vwt)["ready"] == 1


@pytest.mark.slow
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
    assert runs_in(sandbox, created["path"]) == [""]  # not run in the pool, so it runs now
    wait_for_fillers(vwt, repo)
    assert runs(sandbox) == ["", "1"]  # then the refill, approved now, runs it in the pool


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


@pytest.mark.slow
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
def test_prune_removes_entries_older_than_pool_max_age_days_even_within_the_size(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    setup_pool(repo, vwt, 3, deps_hook(sandbox))
    vwt.ok("pool", "fill")
    markers = sorted(pool_dir(vwt, repo).glob("*.json"))
    ages = {markers[0].stem: 8, markers[1].stem: 3, markers[2].stem: 1}
    for marker in markers:
        data = json.loads(marker.read_text())
        marker.write_text(json.dumps(data | {"created_at": days_ago(ages[marker.stem])}))

    def pruned() -> list[str]:
        removed = vwt.ok("prune", "--json").json()["pool_removed"]
        assert {r["bucket"] for r in removed} <= {repo.bucket}
        return [r["id"] for r in removed]

    def left() -> list[str]:
        return sorted(p.stem for p in pool_dir(vwt, repo).glob("*.json"))

    # 3 ready of size 3: only age decides. The default is 7 days.
    assert pruned() == [markers[0].stem]
    assert left() == sorted([markers[1].stem, markers[2].stem])
    assert not (pool_dir(vwt, repo) / markers[0].stem).exists()
    assert len(pool_worktrees(repo)) == 2
    (sandbox.vibe_home / "config.toml").write_text("pool_max_age_days = 2\n")
    assert vwt.ok("prune", "--dry-run", "--json").json()["pool_removed"] == [
        {"bucket": repo.bucket, "id": markers[1].stem}]
    assert left() == sorted([markers[1].stem, markers[2].stem])
    assert pruned() == [markers[1].stem]
    assert left() == [markers[2].stem]
    assert status(vwt) | {"base": None, "bytes": 0} == {
        "bucket": repo.bucket, "repo_root": str(repo.path), "size": 3, "ready": 1,
        "filling": 0, "base": None, "broken": 0, "bytes": 0, "last_error": None,
        "last_error_at": None, "log": None}
    assert len(pool_worktrees(repo)) == 1


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
