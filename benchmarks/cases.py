"""B1-B6 of SPEC.md section 7: fixtures, the tool's command and its baseline."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.fixtures import (
    Repo,
    Worktree,
    add_worktree,
    claims_dir,
    forget_worktree,
    make_repo,
    managed_worktree,
    write_record,
)
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError, Run, Script, measure, run_script, sections
from benchmarks.sandbox import Sandbox, remove_tree

WARMUP = 999  # round index of the untimed warm-up run


@dataclass(frozen=True)
class Config:
    tool: Path
    quick: bool = False
    keep_tmp: bool = False

    def pick(self, full: int, quick: int) -> int:
        return quick if self.quick else full

    def sandbox(self, tag: str) -> Sandbox:
        return Sandbox(tag, self.tool, self.keep_tmp)


def timed(sb: Sandbox, argv: Sequence[str | os.PathLike[str]], cwd: Path) -> Run:
    """One measured process, after flushing dirty pages so earlier writes cost it nothing."""
    os.sync()
    return measure(argv, cwd=cwd, env=sb.env)


def parse_json(result: Run) -> Any:
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as exc:
        raise BenchError(f"`{' '.join(result.argv)}` printed no JSON document: {exc}") from exc


def expect_count(sb: Sandbox, repo: Repo, env: dict[str, str], count: int) -> None:
    listed = parse_json(sb.vwt(["list", "--no-status", "--json"], cwd=repo.path, env=env))
    if not isinstance(listed, list) or len(listed) != count:
        found = len(listed) if isinstance(listed, list) else type(listed).__name__
        raise BenchError(f"fixture: vwt lists {found} worktrees, expected {count}")


# B1, B2: vwt new vs git worktree add -b ------------------------------------------------------


def bench_new(cfg: Config, out: Outcome, nfiles: int, rounds: int, warmup: bool) -> list[Outcome]:
    out.what = f"new vs worktree add, {nfiles} files"
    tag = out.id.lower()
    with cfg.sandbox(tag) as sb:
        repo = make_repo(sb, sb.path("repo"), nfiles)
        base_dir = sb.path("baseline-worktrees")
        base_dir.mkdir()
        last_file = f"pkg{(nfiles - 1) // 100:04d}/mod{(nfiles - 1) % 100:03d}.py"

        def tool(i: int) -> Sample:
            name = f"{tag}-tool-{i}"
            result = sb.vwt(["new", name, "--no-fetch"], cwd=repo.path, sync=True)
            path = new_checkout(sb, result, last_file)
            claim = claims_dir(sb.vibe_home, path.parent.name) / name
            forget_worktree(sb, repo, name, path, claim)
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            name = f"{tag}-git-{i}"
            path = base_dir / name
            result = timed(sb, ["git", "worktree", "add", "-b", name, str(path)], repo.path)
            forget_worktree(sb, repo, name, path, None)
            return Sample(result.seconds)

        if warmup:
            tool(WARMUP)
            base(WARMUP)
        out.tool, out.base = alternate(rounds, tool, base)
    return []


def new_checkout(sb: Sandbox, result: Run, last_file: str) -> Path:
    """The path `vwt new` printed, checked to be a complete checkout under VIBE_HOME."""
    lines = result.stdout.strip().splitlines()
    path = Path(lines[-1]) if lines else Path()
    if not path.is_absolute() or sb.vibe_home not in path.parents:
        raise BenchError(f"vwt new printed {result.stdout.strip()!r}, not a path under VIBE_HOME")
    if not (path / ".git").is_file() or not (path / last_file).is_file():
        raise BenchError(f"vwt new left an incomplete checkout at {path}")
    return path


def b1(cfg: Config, out: Outcome) -> list[Outcome]:
    # No warm-up: a checkout here is bound by file creation (about 0.7 ms a file on this
    # machine), not by cold caches, and round 0 runs the tool first anyway. Five rounds even
    # in --quick: single checkouts here vary by 2x from run to run. The full 20,000 files even
    # in --quick: on a fast disk git checks 5,000 out in 0.1 s, and vwt's fixed 50 ms (B2)
    # then reads as the ratio (CI measured 1.67 so), not the parallel checkout B1 is about.
    return bench_new(cfg, out, 20_000, 5, warmup=False)


def b2(cfg: Config, out: Outcome) -> list[Outcome]:
    return bench_new(cfg, out, 100, cfg.pick(15, 7), warmup=True)


# B3: vwt list --json vs git status + git rev-list per worktree --------------------------------

Status = dict[str, tuple[int, int]]  # name -> (changes, ahead)


def dirty_up(sb: Sandbox, worktrees: list[Worktree]) -> None:
    """Deterministic mix: untracked files, modified files and commits ahead of the base."""
    for i, wt in enumerate(worktrees):
        if i % 4 == 0:
            (wt.path / f"notes-{i}.txt").write_text("scratch\n", encoding="utf-8")
        if i % 6 == 0:
            with (wt.path / "pkg0000" / "mod000.py").open("a", encoding="utf-8") as fh:
                fh.write("# edited\n")
        if i % 10 == 0:
            sb.git("commit", "-q", "--allow-empty", "-m", "ahead", cwd=wt.path)


def git_status_loop(sb: Sandbox, worktrees: list[Worktree], base: str) -> tuple[float, Status]:
    """The baseline: what a script would run, one worktree after the other."""
    script = Script()
    for wt in worktrees:
        script.mark(f"{wt.name} status")
        script.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=wt.path)
        script.mark(f"{wt.name} ahead")
        script.run(["git", "rev-list", "--count", f"{base}..HEAD"], cwd=wt.path)
    result = run_script(script, cwd=sb.root, env=sb.env)
    out = sections(result.stdout)
    found = {wt.name: (len(out[f"{wt.name} status"].splitlines()),
                       int(out[f"{wt.name} ahead"])) for wt in worktrees}
    return result.seconds, found


def compare_status(listed: Any, expected: Status) -> list[str]:
    """Problems that make the measurement meaningless raise; disagreements become notes."""
    if not isinstance(listed, list) or len(listed) != len(expected):
        raise BenchError(f"vwt list --json gave {len(listed)} entries, expected {len(expected)}")
    got: Status = {}
    for item in listed:
        if item.get("changes") is None or item.get("ahead") is None:
            raise BenchError(f"vwt list --json gave no status for {item.get('name')!r}")
        got[item["name"]] = (item["changes"], item["ahead"])
    wrong = sorted(n for n in expected if got.get(n) != expected[n])
    if not wrong:
        return []
    sample = ", ".join(f"{n}: vwt {got.get(n)} git {expected[n]}" for n in wrong[:3])
    return [f"vwt disagrees with git on {len(wrong)} worktrees ({sample})"]


def b3(cfg: Config, out: Outcome) -> list[Outcome]:
    count, rounds = cfg.pick(200, 50), cfg.pick(5, 3)
    out.what = f"list --json, {count} worktrees"
    with cfg.sandbox("b3") as sb:
        repo = make_repo(sb, sb.path("repo"), 100)
        worktrees = [
            managed_worktree(sb, repo, sb.vibe_home, f"wt-{i:04d}", i) for i in range(count)
        ]
        dirty_up(sb, worktrees)
        _, expected = git_status_loop(sb, worktrees, repo.head)  # also the baseline's warm-up
        listed = parse_json(sb.vwt(["list", "--json"], cwd=repo.path))
        out.notes += compare_status(listed, expected)

        def tool(i: int) -> Sample:
            result = sb.vwt(["list", "--json"], cwd=repo.path, sync=True)
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            return Sample(git_status_loop(sb, worktrees, repo.head)[0])

        out.tool, out.base = alternate(rounds, tool, base)
    return []


# B4: vwt prune --keep 0 vs git worktree remove + git branch -D --------------------------------


@dataclass(frozen=True)
class PruneRound:
    tool_repo: Repo
    tool_home: Path
    tool_worktrees: list[Worktree]
    base_repo: Repo
    base_worktrees: list[Worktree]


# Small checkouts: on this machine creating a file costs up to 1 ms of kernel time, so 400
# checkouts of 100 files a round made the fixtures, not the measurement, fill the time budget.
PRUNE_REPO_FILES = 20


def build_prune_round(sb: Sandbox, folder: Path, count: int) -> PruneRound:
    """Two identical repositories with `count` clean worktrees each, built in parallel."""
    home = folder / "vibe-home"

    def tool_side() -> tuple[Repo, list[Worktree]]:
        repo = make_repo(sb, folder / "tool-repo", PRUNE_REPO_FILES)
        return repo, [managed_worktree(sb, repo, home, f"p-{i:04d}", i) for i in range(count)]

    def base_side() -> tuple[Repo, list[Worktree]]:
        repo = make_repo(sb, folder / "base-repo", PRUNE_REPO_FILES)
        names = [f"p-{i:04d}" for i in range(count)]
        return repo, [add_worktree(sb, repo, n, folder / "base-wt" / n) for n in names]

    with ThreadPoolExecutor(max_workers=2) as pool:
        tool_future, base_future = pool.submit(tool_side), pool.submit(base_side)
        (tool_repo, tool_wts), (base_repo, base_wts) = tool_future.result(), base_future.result()
    return PruneRound(tool_repo, home, tool_wts, base_repo, base_wts)


def expect_gone(who: str, worktrees: list[Worktree]) -> None:
    left = [wt.name for wt in worktrees if wt.path.exists()]
    if left:
        raise BenchError(f"{who} left {len(left)} of {len(worktrees)} checkouts, e.g. {left[0]}")


def wait_for_trash(home: Path, timeout: float = 120.0) -> float | None:
    """Seconds until `.trash` is empty when the tool deletes in the background, else None."""
    trash = home / "worktrees" / ".trash"
    start = time.perf_counter()
    if not trash.is_dir() or not any(trash.iterdir()):
        return None
    while any(trash.iterdir()) and time.perf_counter() - start < timeout:
        time.sleep(0.05)
    return time.perf_counter() - start


def b4(cfg: Config, out: Outcome) -> list[Outcome]:
    count, rounds = cfg.pick(200, 40), cfg.pick(3, 2)
    out.what = f"prune --keep 0, {count} worktrees of {PRUNE_REPO_FILES} files"
    with cfg.sandbox("b4") as sb:
        rounds_built: dict[int, PruneRound] = {}

        def prepare(i: int) -> None:
            if i > 0:
                remove_tree(sb.path(f"round-{i - 1}"))
            built = build_prune_round(sb, sb.path(f"round-{i}"), count)
            expect_count(sb, built.tool_repo, sb.env_for(built.tool_home), count)
            rounds_built[i] = built

        def tool(i: int) -> Sample:
            r = rounds_built[i]
            env = sb.env_for(r.tool_home)
            result = sb.vwt(["prune", "--keep", "0"], cwd=r.tool_repo.path, env=env, sync=True)
            expect_gone("vwt prune --keep 0", r.tool_worktrees)
            late = wait_for_trash(r.tool_home)
            if late is not None:
                out.notes.append(f"round {i}: .trash emptied {late:.2f} s after vwt exited")
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            r = rounds_built[i]
            script = Script()
            for wt in r.base_worktrees:
                script.run(["git", "worktree", "remove", str(wt.path)], cwd=r.base_repo.path)
                script.run(["git", "branch", "-q", "-D", wt.name], cwd=r.base_repo.path)
            result = run_script(script, cwd=sb.root, env=sb.env)
            expect_gone("git worktree remove", r.base_worktrees)
            return Sample(result.seconds)

        out.tool, out.base = alternate(rounds, tool, base, prepare)
    return []


# B5: vwt --version vs python -c pass ----------------------------------------------------------


def b5(cfg: Config, out: Outcome) -> list[Outcome]:
    rounds = cfg.pick(30, 15)
    out.what = "--version vs python -c pass"
    with cfg.sandbox("b5") as sb:

        def tool(i: int) -> Sample:
            result = sb.vwt(["--version"], cwd=sb.root, sync=True)
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            return Sample(timed(sb, [sys.executable, "-c", "pass"], sb.root).seconds)

        tool(WARMUP)
        base(WARMUP)
        out.tool, out.base = alternate(rounds, tool, base)
    return []


# B6: vwt list --no-status --json over 1,000 records vs vwt --version --------------------------

RSS_LIMIT_MIB = 40.0


def b6(cfg: Config, out: Outcome) -> list[Outcome]:
    return list_records_vs_version(cfg, out, 1000, cfg.pick(15, 7), RSS_LIMIT_MIB)


def list_records_vs_version(cfg: Config, out: Outcome, records: int, rounds: int,
                            rss_limit: float) -> list[Outcome]:
    """`list --no-status --json` over `records` records vs `--version`, and the peak RSS
    of `list --all --json` (B6 and B12)."""
    out.what = f"list --no-status --json, {records} records"
    rss = Outcome(f"{out.id}m", f"list --all --json peak RSS, {records} records", rss_limit,
                  "MiB")
    with cfg.sandbox(out.id.lower()) as sb:
        repo = make_repo(sb, sb.path("repo"), 100)
        for i in range(records):
            write_record(sb.vibe_home, repo, f"rec-{i:04d}", i)
        expect_count(sb, repo, sb.env, records)

        def tool(i: int) -> Sample:
            result = sb.vwt(["list", "--no-status", "--json"], cwd=repo.path, sync=True)
            return Sample(result.seconds, result.peak_mib)

        def version(i: int) -> Sample:
            result = sb.vwt(["--version"], cwd=repo.path, sync=True)
            return Sample(result.seconds, result.peak_mib)

        tool(WARMUP)
        version(WARMUP)
        out.tool, out.base = alternate(rounds, tool, version)
        rss.tool = [list_all(sb, records) for _ in range(cfg.pick(5, 3))]
    os.sync()
    return [rss]


def list_all(sb: Sandbox, records: int) -> Sample:
    result = sb.vwt(["list", "--all", "--json"], cwd=sb.root, sync=True)
    listed = parse_json(result)
    if not isinstance(listed, list) or len(listed) != records:
        raise BenchError(f"vwt list --all --json gave {len(listed)} entries, expected {records}")
    return Sample(result.seconds, result.peak_mib)
