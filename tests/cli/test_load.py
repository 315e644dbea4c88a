"""Many agents at once: 64 sessions over 8 repositories while retention loops.

Each session creates a worktree, holds it with `vwt run` while it writes files and
commits some of them, and then, from inside its hold (as an agent that cleans up after
itself does), removes it or merges it into `main`, or leaves it for retention. A quarter
of them come and go as Claude Code sessions do, through `vwt hook claude-code`: created by
`WorktreeCreate`, held by the agent process, activity events, then `WorktreeRemove`, or
`SessionEnd`, or the agent process killed mid-session; no hold of theirs is left behind.
Half of the repositories have a warm pool of two entries (a `post_create` hook that
installs `deps/`): their `new` calls take ready entries while background fillers refill
and prune trims. `vwt prune --keep 5` runs in a loop the whole time. Afterwards every file
a session wrote is in its checkout, on `main`, or in a snapshot that `vwt restore` brings
back, no call printed a traceback or exited with a status the spec does not allow, none took
over 60 s, every worktree taken from a pool was whole (its hook's output there, its files
clean, on its own branch), no pool entry is left half-made or changed, and `vwt doctor`
says healthy. Every worktree leases its ports (blocks of two in half of the repositories):
sampled all along, no two live worktrees ever share a port, and at the end every lease
belongs to a worktree that is there.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from conftest import VWT_BIN, Repo, Sandbox, Vwt, is_locked

SESSIONS = 64
REPOSITORIES = 8
KEEP = 5
SLOWEST_CALL = 60.0
POOLED_REPOSITORIES = REPOSITORIES // 2
POOL_CONFIG = textwrap.dedent("""\
    [pool]
    size = 2

    [ports]
    count = 2

    [[hooks]]
    name = "deps"
    type = "post_create"
    command = "mkdir -p deps && echo installed > deps/installed"
    inputs = ["package.json"]
    """)

# exit statuses a session may see: run refuses (4) or finds the worktree already reaped
# (1) when retention took it between `new` and the hold, before anything was written; a
# merge reports `target_moved` or `target_dirty` (1) when a parallel merge landed first or
# held the target checkout's index.lock; nothing changed, and it is retried
ALLOWED = {"new": {0}, "run": {0, 1, 4}, "rm": {0}, "merge": {0, 1}, "prune": {0},
           "restore": {0}, "doctor": {0}, "pool": {0}, "hooks": {0},
           # a hook session: WorktreeCreate fails (1) when retention took the new worktree
           # before its hold; WorktreeRemove finds it gone (1) when retention took it (with a
           # snapshot) between the release of the session's hold and the removal
           "hook": {0, 1}}

WRITER = textwrap.dedent("""\
    import json, os, subprocess, sys, time
    name, action, vwt, marker, repo = sys.argv[1:6]
    os.makedirs("work", exist_ok=True)
    with open(f"work/{name}-committed.txt", "w") as fh:
        fh.write(f"committed by {name}\\n")
    subprocess.run(["git", "add", "-A"], check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"work of {name}"], check=True)
    with open(f"work/{name}-uncommitted.txt", "w") as fh:
        fh.write(f"uncommitted by {name}\\n")
    report = {"wrote": True}
    # from inside the hold: VWT_HOLDER_ID makes the hold the caller's own
    if action == "rm":
        command = [vwt, "rm", name, "-y", "--json"]
    elif action == "merge":  # --commit: the uncommitted file lands too
        command = [vwt, "merge", name, "--commit", "--no-fetch", "--json"]
    if action != "leave":
        calls = []
        for _attempt in range(20):  # a parallel merge into the same branch: try again
            start = time.monotonic()
            done = subprocess.run(command, cwd=repo, capture_output=True, text=True)
            calls.append([time.monotonic() - start, done.returncode, done.stderr])
            # target_dirty: a parallel merge held the main checkout's index.lock
            if not (action == "merge" and done.returncode == 1 and done.stdout
                    and json.loads(done.stdout)["outcome"] in ("target_moved", "target_dirty")):
                break
        report.update(calls=calls, code=done.returncode, out=done.stdout, err=done.stderr)
    with open(marker, "w") as fh:
        json.dump(report, fh)
    """)


# A Claude Code stand-in: it runs each hook event through `sh -c`, as Claude Code does, so
# it is the agent process that holds the worktree. Endings: remove, end, killed (it then
# waits to be killed by the test, mid-session).
CLAUDE_HOST = textwrap.dedent("""\
    import json, os, signal, subprocess, sys, time
    vwt, repo, name, ending, marker = sys.argv[1:6]
    base = {"session_id": f"load-{name}", "transcript_path": "/dev/null"}
    calls = []
    def hook(event, cwd, **fields):
        start = time.monotonic()
        done = subprocess.run(["/bin/sh", "-c", f"'{vwt}' hook claude-code"], cwd=cwd,
                              input=json.dumps({**base, "hook_event_name": event, "cwd": cwd,
                                                **fields}), capture_output=True, text=True)
        calls.append([time.monotonic() - start, done.returncode, done.stderr])
        return done
    made = hook("WorktreeCreate", repo, name=name)
    report = {"wrote": False, "create": made.returncode}
    if made.returncode == 0:
        path = made.stdout.strip()
        hook("UserPromptSubmit", path, prompt="write the files")
        hook("PreToolUse", path, tool_name="Write")
        os.makedirs(f"{path}/work", exist_ok=True)
        with open(f"{path}/work/{name}-committed.txt", "w") as fh:
            fh.write(f"committed by {name}\\n")
        subprocess.run(["git", "add", "-A"], cwd=path, check=True)
        subprocess.run(["git", "commit", "-q", "-m", f"work of {name}"], cwd=path, check=True)
        with open(f"{path}/work/{name}-uncommitted.txt", "w") as fh:
            fh.write(f"uncommitted by {name}\\n")
        report["wrote"] = True
        hook("Stop", path)
        if ending == "remove":
            removed = hook("WorktreeRemove", repo, worktree_path=path)
            report.update(code=removed.returncode, err=removed.stderr)
        elif ending == "end":
            hook("SessionEnd", path, reason="prompt_input_exit")
    report["calls"] = calls
    with open(marker, "w") as fh:
        json.dump(report, fh)
    if ending == "killed":
        signal.pause()
    """)


class Calls:
    """Every vwt call of the run: command, seconds, exit status, stderr."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, float, int, str]] = []

    def add(self, command: str, seconds: float, code: int, err: str) -> None:
        with self.lock:
            self.seen.append((command, seconds, code, err))

    def run(self, vwt: Vwt, command: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
        start = time.monotonic()
        env = vwt.env({"VWT_LOCK_TRACE": str(vwt.sandbox.tmp / "locks.trace")})
        done = subprocess.run([VWT_BIN, command, *args], cwd=cwd, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)
        self.add(command, time.monotonic() - start, done.returncode, done.stderr)
        return done

    def latency_table(self) -> str:
        lines = [f"{'command':<8} {'calls':>5} {'p50 s':>7} {'p99 s':>7} {'max s':>7}"]
        for command in sorted({c for c, *_ in self.seen}):
            times = sorted(s for c, s, *_ in self.seen if c == command)
            p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
            lines.append(f"{command:<8} {len(times):>5} {statistics.median(times):>7.3f} "
                         f"{p99:>7.3f} {times[-1]:>7.3f}")
        return "\n".join(lines)


def claude_session(vwt: Vwt, calls: Calls, repo: Repo, name: str, ending: str,
                   sandbox: Sandbox) -> dict[str, Any]:
    marker = sandbox.tmp / "markers" / name
    host = subprocess.Popen(["python3", str(sandbox.tmp / "claude_host.py"), VWT_BIN,
                             str(repo.path), name, ending, str(marker)],
                            cwd=repo.path, env=vwt.env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 300
    while not marker.exists() and host.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    if ending == "killed":
        time.sleep(0.05)  # the marker is written: the host waits, its worktree held
        os.killpg(host.pid, signal.SIGKILL)
    host.wait(timeout=60)
    report: dict[str, Any] = {"name": name, "repo": repo, "action": "claude", "wrote": False,
                              "ending": ending}
    report.update(json.loads(marker.read_text()))
    for seconds, code, err in report["calls"]:
        calls.add("hook", seconds, code, err)
    return report


def session(vwt: Vwt, calls: Calls, repo: Repo, k: int, action: str, sandbox: Sandbox
            ) -> dict[str, Any]:
    name = f"s{k:02d}"
    if action == "claude":
        return claude_session(vwt, calls, repo, name, ("remove", "end", "killed")[k // 4 % 3],
                              sandbox)
    created = calls.run(vwt, "new", name, "--no-fetch", "--json", cwd=repo.path)
    assert created.returncode == 0, created.stderr
    pooled = json.loads(created.stdout)["pooled"]
    if pooled:  # whole, before anyone wrote in it (retention may take it meanwhile)
        checkout = Path(json.loads(created.stdout)["path"])
        status = subprocess.run(["git", "status", "--porcelain", "--branch"], cwd=checkout,
                                capture_output=True, text=True)
        assert status.returncode != 0 or status.stdout == f"## {name}\n", status.stdout
        assert status.returncode != 0 or (checkout / "deps" / "installed").is_file()
    marker = sandbox.tmp / "markers" / name
    held = calls.run(vwt, "run", name, "--", "python3", str(sandbox.tmp / "writer.py"), name,
                     action, VWT_BIN, str(marker), str(repo.path), cwd=repo.path)
    report: dict[str, Any] = {"name": name, "repo": repo, "action": action, "wrote": False,
                              "run_code": held.returncode, "pooled": pooled}
    if marker.exists():
        report.update(json.loads(marker.read_text()))
        assert held.returncode == 0, f"{name}: the held command failed: {held.stderr}"
        for seconds, code, err in report.get("calls", []):
            calls.add(action, seconds, code, err)
    return report


def lease_blocks(sandbox: Sandbox) -> dict[str, list[int]]:
    """Each lease of the table, with its block as its record says (one port when it does
    not say), read as another process would: without the lock."""
    claims = sandbox.vibe_home / "worktrees" / ".claims"
    try:
        table = json.loads((claims / ".ports.json").read_text())
    except FileNotFoundError:
        return {}
    blocks = {}
    for key, first in table.items():
        try:
            ports = json.loads((claims / key / "record.json").read_text()).get("ports")
        except (OSError, ValueError):
            ports = None
        blocks[key] = ports if ports and ports[0] == first else [first]
    return blocks


def recorded_blocks(sandbox: Sandbox) -> dict[str, list[int]]:
    """The `ports` of every record there is: the live worktrees' blocks."""
    found = {}
    for record in sandbox.vibe_home.glob("worktrees/.claims/*/*/record.json"):
        try:
            ports = json.loads(record.read_text()).get("ports")
        except (OSError, ValueError):
            continue
        if ports:
            found[f"{record.parent.parent.name}/{record.parent.name}"] = ports
    return found


def overlaps(blocks: dict[str, list[int]]) -> list[str]:
    owner: dict[int, str] = {}
    clashes = []
    for key, ports in blocks.items():
        for port in ports:
            if port in owner:
                clashes.append(f"port {port} of {key} and of {owner[port]}")
            owner[port] = key
    return clashes


def files_of(name: str) -> dict[str, str]:
    return {f"work/{name}-committed.txt": f"committed by {name}\n",
            f"work/{name}-uncommitted.txt": f"uncommitted by {name}\n"}


def has_files(checkout: Path, files: dict[str, str]) -> bool:
    return all((checkout / rel).is_file() and (checkout / rel).read_text() == text
               for rel, text in files.items())


def verify_nothing_lost(vwt: Vwt, calls: Calls, report: dict[str, Any]) -> str:
    """Where the session's files are: `checkout` or `restored`; fails when nowhere."""
    repo, name = report["repo"], report["name"]
    files = files_of(name)
    if report["action"] == "merge":
        for rel, text in files.items():
            assert repo.git("show", f"main:{rel}") == text.rstrip("\n"), f"{name}: not landed"
        return "landed"
    if repo.record_path(name).exists():
        assert has_files(repo.checkout(name), files), f"{name}: files missing from checkout"
        return "checkout"
    assert repo.recovery_path(name).exists(), f"{name}: no checkout and no snapshot to restore"
    restored = calls.run(vwt, "restore", name, "--json", cwd=repo.path)
    assert restored.returncode == 0, f"{name}: restore failed: {restored.stderr}"
    assert has_files(Path(json.loads(restored.stdout)["path"]), files), f"{name}: restore differs"
    return "restored"


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_64_sessions_over_8_repositories_lose_nothing_while_prune_loops(
        vwt: Vwt, make_repo: Any, sandbox: Sandbox) -> None:
    repos = [make_repo(f"repo{i}", commits=2) for i in range(REPOSITORIES)]
    for repo in repos[:POOLED_REPOSITORIES]:
        repo.commit("a warm pool", {".vibe/worktree.toml": POOL_CONFIG, ".gitignore": "deps/\n"})
        vwt.ok("hooks", "approve", "--all", cwd=repo.path)
        vwt.ok("pool", "fill", cwd=repo.path)
    (sandbox.tmp / "writer.py").write_text(WRITER)
    (sandbox.tmp / "claude_host.py").write_text(CLAUDE_HOST)
    (sandbox.tmp / "markers").mkdir()
    calls = Calls()
    stop = threading.Event()

    def prune_loop() -> int:
        rounds = 0
        while not stop.is_set():
            done = calls.run(vwt, "prune", "--keep", str(KEEP), "--json", cwd=sandbox.tmp)
            assert done.returncode == 0, done.stderr
            json.loads(done.stdout)
            rounds += 1
        return rounds

    # the seed orders the sessions and deals out their actions; VWT_LOAD_SEED replays one
    seed = int(os.environ.get("VWT_LOAD_SEED") or random.randrange(1 << 16))
    rng = random.Random(seed)
    actions = [("rm", "merge", "leave", "claude")[k % 4] for k in range(SESSIONS)]
    rng.shuffle(actions)
    order = list(range(SESSIONS))
    rng.shuffle(order)
    print(f"\nload seed {seed} (VWT_LOAD_SEED={seed} replays it)")
    started = time.monotonic()
    samples: list[int] = []

    def lease_sampler() -> list[str]:
        clashes: list[str] = []
        while not stop.is_set():
            clashes += overlaps(lease_blocks(sandbox)) + overlaps(recorded_blocks(sandbox))
            samples.append(1)
            time.sleep(0.02)
        return clashes

    with ThreadPoolExecutor(SESSIONS + 2) as pool:
        pruning = pool.submit(prune_loop)
        sampling = pool.submit(lease_sampler)
        futures = [pool.submit(session, vwt, calls, repos[k % REPOSITORIES], k, actions[k],
                               sandbox)
                   for k in order]
        reports = [f.result() for f in futures]
        stop.set()
        prune_rounds = pruning.result()
        clashes = sampling.result()
    assert not clashes, f"two live worktrees shared a port: {clashes[:5]}"
    elapsed = time.monotonic() - started

    print(calls.latency_table())
    print(lock_table(sandbox.tmp / "locks.trace"))
    wrote = [r for r in reports if r["wrote"]]
    assert len(wrote) >= SESSIONS // 4, "retention took nearly every worktree before its hold"
    for r in wrote:
        if r["action"] == "claude":
            assert r.get("code", 0) in (0, 1), r
            continue
        if r["action"] != "leave":
            assert r["code"] == 0, f"{r['name']}: {r['action']} failed: {r['err']}"
            outcome = json.loads(r["out"])
            assert outcome["outcome"] in ("removed", "merged"), outcome
            assert outcome["snapshot_ref"] and outcome.get("removed", True), outcome
    places = [verify_nothing_lost(vwt, calls, r) for r in wrote]
    pooled = sum(bool(r.get("pooled")) for r in reports)
    assert pooled > 0, "no new took a pool entry"
    wait_for_fillers(sandbox)
    pools = json.loads(calls.run(vwt, "pool", "--all", "--json", cwd=sandbox.tmp).stdout)
    assert len(pools["pools"]) == POOLED_REPOSITORIES
    assert all(p["broken"] == 0 and p["filling"] == 0 and p["ready"] <= 2
               for p in pools["pools"]), pools
    for entry in sandbox.vibe_home.glob("worktrees/.pool/*/*/"):  # none holds anyone's work
        assert subprocess.run(["git", "status", "--porcelain"], cwd=entry, capture_output=True,
                              text=True).stdout == "", entry
    # no hold of a hook session outlives it: every agent process has exited or was killed
    time.sleep(2.0)
    left = [h for h in sandbox.vibe_home.glob("worktrees/.claims/*/*/holders/claude-*")
            if is_locked(h)]
    assert not left, f"holds left behind: {left}"
    doctor = calls.run(vwt, "doctor", "--json", cwd=sandbox.tmp)
    assert json.loads(doctor.stdout) == {"healthy": True, "problems": []}, doctor.stdout
    leased, recorded = lease_blocks(sandbox), recorded_blocks(sandbox)
    assert set(leased) == set(recorded), ("a lease without its worktree, or a worktree "
                                          f"without its lease: {set(leased) ^ set(recorded)}")
    assert leased == recorded and not overlaps(leased)
    assert any(len(ports) == 2 for ports in leased.values()), "no block of two was leased"

    for command, seconds, code, err in calls.seen:
        assert "Traceback" not in err, err
        assert code in ALLOWED[command], f"vwt {command} exited {code}: {err}"
        assert seconds < SLOWEST_CALL, f"vwt {command} took {seconds:.1f} s"
    hooked = [r for r in reports if r["action"] == "claude"]
    print(f"\n{SESSIONS} sessions over {REPOSITORIES} repositories in {elapsed:.1f} s "
          f"({len(hooked)} through vwt hook claude-code, {sum(r['wrote'] for r in hooked)} "
          f"of them wrote; endings: "
          + ", ".join(f"{sum(r['ending'] == e for r in hooked)} {e}"
                      for e in ("remove", "end", "killed")) + "): "
          f"{len(wrote)} wrote and committed, {SESSIONS - len(wrote)} reaped before their "
          f"hold; {places.count('landed')} landed on main, {places.count('checkout')} found in "
          f"their checkout, "
          f"{places.count('restored')} restored from snapshots; {pooled} taken from pools; "
          f"{prune_rounds} prune "
          f"rounds; {len(calls.seen)} calls; lost 0; {len(samples)} samples of the leases, "
          f"none shared a port; {len(leased)} leases left, each a worktree's")


def wait_for_fillers(sandbox: Sandbox, timeout: float = 120) -> None:
    """Until no pool filler runs or waits (a `new` takes the waiting place before it returns)."""
    deadline = time.monotonic() + timeout
    locks = list(sandbox.vibe_home.glob("worktrees/.pool/*/.fill*"))
    while any(is_locked(lock) for lock in locks):
        assert time.monotonic() < deadline, "a pool filler did not finish"
        time.sleep(0.1)


def lock_table(trace: Path) -> str:
    """How long each global lock was held and waited for (`VWT_LOCK_TRACE`)."""
    rows: dict[str, list[tuple[float, float]]] = {}
    for line in trace.read_text().splitlines():
        lock, waited, held = line.split()
        rows.setdefault(lock, []).append((float(waited), float(held)))
    lines = [f"{'lock':<10} {'taken':>5} {'held p50':>9} {'held max':>9} {'wait p50':>9} "
             f"{'wait max':>9}"]
    for lock, pairs in sorted(rows.items()):
        waits, holds = sorted(w for w, _ in pairs), sorted(h for _, h in pairs)
        lines.append(f"{lock:<10} {len(pairs):>5} {statistics.median(holds):>9.3f} "
                     f"{holds[-1]:>9.3f} {statistics.median(waits):>9.3f} {waits[-1]:>9.3f}")
    return "\n".join(lines)
