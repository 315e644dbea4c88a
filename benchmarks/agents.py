"""B19: an agent's hook marking its worktree's activity (SPEC section 19) vs `vwt --version`.

`vwt activity set` (any agent's hook) and `vwt hook vibe` (Mistral Vibe's) run at every
prompt or tool call of an agent, so each must take under 100 ms: they are measured in a
managed worktree among 200, against the tool's own start-up, and their medians printed.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from benchmarks.cases import WARMUP, Config
from benchmarks.fixtures import make_repo, managed_worktree, write_record
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError, run

WORKTREES = 200
LIMIT_MS = 100.0


def b19(cfg: Config, out: Outcome) -> list[Outcome]:
    rounds = cfg.pick(30, 12)
    out.what = f"activity set in a worktree among {WORKTREES} vs --version"
    vibe = Outcome("B19v", f"hook vibe (pre_tool) among {WORKTREES} vs --version", out.target)
    with cfg.sandbox("b19") as sb:
        repo = make_repo(sb, sb.path("repo"), 100)
        wt = managed_worktree(sb, repo, sb.vibe_home, "agent-at-work", 0)
        for i in range(1, WORKTREES):
            write_record(sb.vibe_home, repo, f"other-{i:03d}", i)
        event = json.dumps({"hook_event_name": "pre_tool", "session_id": "bench",
                            "parent_session_id": None, "cwd": str(wt.path),
                            "transcript_path": "", "tool_name": "file_system.bash",
                            "tool_call_id": "call_1", "tool_input": {"command": "ls"}}).encode()

        def activity(i: int) -> Sample:
            result = sb.vwt(["activity", "set", "working", "--agent", "bench", "--session",
                             "bench"], cwd=wt.path)
            return Sample(result.seconds, result.peak_mib)

        def version(i: int) -> Sample:
            result = sb.vwt(["--version"], cwd=wt.path)
            return Sample(result.seconds, result.peak_mib)

        # The hook reads its input on stdin, which the spawner does not feed: both sides of
        # this ratio go through a plain spawn instead.
        def hook(i: int) -> Sample:
            result = run([sb.tool, "hook", "vibe"], cwd=wt.path, env=sb.env, stdin=event)
            if result.stdout or result.stderr:
                raise BenchError(f"vwt hook vibe said something: {result.stdout}{result.stderr}")
            return Sample(result.seconds, result.peak_mib)

        def plain_version(i: int) -> Sample:
            return Sample(run([sb.tool, "--version"], cwd=wt.path, env=sb.env).seconds)

        activity(WARMUP)
        version(WARMUP)
        out.tool, out.base = alternate(rounds, activity, version)
        _check_marked(sb.vibe_home, repo.bucket, "bench")
        hook(WARMUP)
        vibe.tool, vibe.base = alternate(rounds, hook, plain_version)
        _check_marked(sb.vibe_home, repo.bucket, "vibe")
    for outcome in (out, vibe):
        tool_ms = statistics.median(s.seconds for s in outcome.tool) * 1000
        base_ms = statistics.median(s.seconds for s in outcome.base) * 1000
        outcome.notes.append(f"median {tool_ms:.0f} ms (SPEC: under {LIMIT_MS:.0f} ms); "
                             f"--version {base_ms:.0f} ms")
    return [vibe]


def _check_marked(vibe_home: Path, bucket: str, agent: str) -> None:
    file = vibe_home / "worktree-activity" / bucket / "agent-at-work.json"
    try:
        marked = json.loads(file.read_text())
    except (OSError, ValueError) as exc:
        raise BenchError(f"no activity was written ({exc})") from None
    if marked.get("agent") != agent or marked.get("state") != "working":
        raise BenchError(f"the activity written is not what was asked: {marked}")
