"""B17: `vwt ps --all --json` over 200 leased worktrees and 500 processes (SPEC §17: under
1 s), against a raw walk of /proc that reads the same facts (every process's current
directory and descriptors, the listening sockets) in a bare Python.

The processes are idle `sleep`s (benchmarks/crowd.py): 300 inside worktrees, 200
elsewhere; 20 of them hold a listening socket on a leased port, 10 of those from another
folder than the lease holder's (mismatches the report must find).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from benchmarks.cases import WARMUP, Config, parse_json, timed
from benchmarks.fixtures import Repo, checkout_path, claims_dir, timestamp
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError
from benchmarks.sandbox import Sandbox

CROWD = Path(__file__).with_name("crowd.py")
RAW_WALK = """
import os
cwds, sockets = {}, 0
for entry in os.listdir("/proc"):
    if entry.isdigit():
        try:
            cwds[entry] = os.readlink(f"/proc/{entry}/cwd")
            for fd in os.listdir(f"/proc/{entry}/fd"):
                sockets += os.readlink(f"/proc/{entry}/fd/{fd}").startswith("socket:[")
        except OSError:
            pass
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    with open(table) as f:
        f.read()
print(len(cwds), sockets)
"""


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free right now (each held open until all are chosen)."""
    with ExitStack() as held:
        ports = []
        for _ in range(count):
            s = held.enter_context(socket.socket())
            s.bind(("127.0.0.1", 0))
            ports.append(int(s.getsockname()[1]))
    return ports


def leased_home(sb: Sandbox, repo_path: Path, bucket: str, ports: list[int]) -> list[Path]:
    """Records (each with a one-port lease) and checkout folders, plus the lease table.
    `vwt ps` runs no git: a folder with a record is a worktree to it."""
    repo = Repo(repo_path, "0" * 40, bucket)
    checkouts, table = [], {}
    for i, port in enumerate(ports):
        name = f"ps-{i:03d}"
        folder = claims_dir(sb.vibe_home, bucket) / name
        folder.mkdir(parents=True)
        record = {"version": 1, "name": name, "branch": name, "repo_root": str(repo.path),
                  "base_commit": repo.head, "branch_created": True,
                  "claimed_at": timestamp(i), "session_dirs": [], "reap_requested": False,
                  "moved_checkout_admin": None, "ports": [port]}
        (folder / "record.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
        checkout = checkout_path(sb.vibe_home, bucket, name)
        (checkout / "src").mkdir(parents=True)
        checkouts.append(checkout)
        table[f"{bucket}/{name}"] = port
    (sb.vibe_home / "worktrees" / ".claims" / ".ports.json").write_text(json.dumps(table))
    return checkouts


def crowd_plan(checkouts: list[Path], ports: list[int], outside: Path,
               total: int) -> tuple[list[dict[str, Any]], int, int]:
    """Where each process runs and which listen: (plan, processes inside, mismatches)."""
    inside = total * 3 // 5
    plan: list[dict[str, Any]] = []
    for i in range(inside):
        plan.append({"cwd": str(checkouts[i % len(checkouts)] / ("src" if i % 2 else "")),
                     "port": None})
    plan += [{"cwd": str(outside), "port": None} for _ in range(total - inside)]
    for k in range(10):  # servers on their own worktree's port
        plan[k]["port"] = ports[k]
    for k in range(10, 15):  # a server in worktree k serving the lease of worktree k+50
        plan[k]["port"] = ports[k + 50]
    for k in range(5):  # servers from outside every worktree, on leased ports
        plan[inside + k]["port"] = ports[100 + k]
    return plan, inside, 10


def start_crowd(sb: Sandbox, plan: list[dict[str, Any]]) -> subprocess.Popen[bytes]:
    crowd = subprocess.Popen([sys.executable, "-S", str(CROWD)], cwd=sb.root,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             start_new_session=True)
    assert crowd.stdin is not None and crowd.stdout is not None
    crowd.stdin.write(json.dumps(plan).encode())
    crowd.stdin.close()
    if crowd.stdout.readline().strip() != b"ready":
        stop_crowd(crowd)
        raise BenchError("the process crowd did not start (a leased port was taken?)")
    return crowd


def stop_crowd(crowd: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(crowd.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    crowd.wait()


def check_report(document: Any, inside: int, mismatches: int) -> None:
    if not isinstance(document, dict):
        raise BenchError("vwt ps --all --json printed no object")
    seen = sum(len(w["processes"]) for w in document["worktrees"])
    found = len(document["mismatches"])
    if seen != inside or found != mismatches:
        raise BenchError(f"vwt ps saw {seen} processes inside and {found} mismatches; "
                         f"expected {inside} and {mismatches}")


def b17(cfg: Config, out: Outcome) -> list[Outcome]:
    count, total, rounds = cfg.pick(200, 200), cfg.pick(500, 500), cfg.pick(15, 7)
    out.what = f"ps --all --json, {count} worktrees, {total} processes, vs a raw /proc walk"
    with cfg.sandbox("b17") as sb:
        repo_path = sb.path("repo")
        repo_path.mkdir()
        ports = free_ports(count)
        checkouts = leased_home(sb, repo_path, "repo-0123456789ab", ports)
        outside = sb.path("elsewhere")
        outside.mkdir()
        plan, inside, mismatches = crowd_plan(checkouts, ports, outside, total)
        crowd = start_crowd(sb, plan)
        try:
            check_report(parse_json(sb.vwt(["ps", "--all", "--json"], cwd=sb.root)), inside,
                         mismatches)

            def tool(i: int) -> Sample:
                result = sb.vwt(["ps", "--all", "--json"], cwd=sb.root, sync=True)
                return Sample(result.seconds, result.peak_mib)

            def base(i: int) -> Sample:
                return Sample(timed(sb, [sys.executable, "-S", "-c", RAW_WALK], sb.root).seconds)

            tool(WARMUP)
            base(WARMUP)
            out.tool, out.base = alternate(rounds, tool, base)
        finally:
            stop_crowd(crowd)
    if out.tool_median is not None:
        out.notes.append(f"vwt ps --all --json took {out.tool_median:.3f} s (median; SPEC "
                         "§17 asks for under 1 s)")
    return []
