"""B16 of SPEC.md section 7: `vwt land` of 8 worktrees vs the equivalent shell loop (§18)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from benchmarks.cases import WARMUP, Config, parse_json
from benchmarks.fixtures import Repo, Worktree, make_repo
from benchmarks.fixtures import write_record as write_fixture_record
from benchmarks.landing import commit_in
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError, Script, run_script
from benchmarks.sandbox import Sandbox, remove_tree

LANDED = 8


def ready_worktrees(sb: Sandbox, repo: Repo, tag: str, managed: bool) -> list[Worktree]:
    """LANDED worktrees of main's tip, one commit each on files of their own."""
    tip = sb.git("rev-parse", "main", cwd=repo.path).strip()
    found = []
    for i in range(LANDED):
        name = f"{tag}-{i}"
        path = (sb.vibe_home / "worktrees" / repo.bucket / name if managed
                else sb.path("raw-worktrees", name))
        sb.git("worktree", "add", "-q", "--no-track", "-b", name, str(path), tip,
               cwd=repo.path)
        if managed:
            write_fixture_record(sb.vibe_home, replace(repo, head=tip), name,
                                 int(time.time()) + i)
        commit_in(sb, path, {f"work/{name}.py": f"# {name}\n"}, f"{name}: work")
        found.append(Worktree(name, path))
    return found


def raw_loop(sb: Sandbox, repo: Repo, worktrees: list[Worktree]) -> Script:
    """What a person would script: per worktree, rebase onto main's tip, the gate, a
    fast-forward of the main checkout, then the worktree and its branch go."""
    script = Script()
    for wt in worktrees:
        script.run(["git", "rebase", "-q", "main"], cwd=wt.path)
        script.run(["true"], cwd=wt.path)
        script.run(["git", "merge", "-q", "--ff-only", wt.name], cwd=repo.path)
        script.run(["git", "worktree", "remove", str(wt.path)], cwd=repo.path)
        script.run(["git", "branch", "-q", "-d", wt.name], cwd=repo.path)
    return script


def b16(cfg: Config, out: Outcome) -> list[Outcome]:
    nfiles, rounds = cfg.pick(2_000, 1_000), cfg.pick(5, 3)
    out.what = f"land of {LANDED} worktrees (gate true) vs rebase + gate + ff merge loop"
    with cfg.sandbox("b16") as sb:
        repo = make_repo(sb, sb.path("repo"), nfiles)  # main checked out in the main checkout
        prepared: dict[tuple[str, int], list[Worktree]] = {}

        def prepare(i: int) -> None:
            remove_tree(sb.vibe_home / "worktrees" / ".trash")
            prepared["tool", i] = ready_worktrees(sb, repo, f"tool{i}", managed=True)
            prepared["base", i] = ready_worktrees(sb, repo, f"base{i}", managed=False)

        def tool(i: int) -> Sample:
            worktrees = prepared["tool", i]
            result = sb.vwt(["land", *(wt.name for wt in worktrees), "--gate", "true",
                             "--json"], cwd=repo.path, sync=True)
            data = parse_json(result)
            outcomes = [r.get("outcome") for r in data.get("results", [])]
            if outcomes != ["merged"] * LANDED or any(wt.path.exists() for wt in worktrees):
                raise BenchError(f"vwt land did not land and remove all of them: {outcomes}")
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            worktrees = prepared["base", i]
            result = run_script(raw_loop(sb, repo, worktrees), cwd=sb.root, env=sb.env)
            if any(Path(wt.path).exists() for wt in worktrees):
                raise BenchError("git worktree remove left a checkout")
            return Sample(result.seconds)

        prepare(WARMUP)
        tool(WARMUP)
        base(WARMUP)
        out.tool, out.base = alternate(rounds, tool, base, prepare)
    return []
