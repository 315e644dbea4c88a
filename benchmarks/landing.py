"""B7 and B8 of SPEC.md section 7: integration in `list`, and `merge` (SPEC §8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.cases import WARMUP, Config, parse_json
from benchmarks.fixtures import Repo, Worktree, make_repo, managed_worktree, vwt_new
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError, Script, run_script
from benchmarks.sandbox import Sandbox, remove_tree

# B7: vwt list --json with integration vs status + rev-list + merge-tree per worktree ----------


def commit_in(sb: Sandbox, wt: Path, files: dict[str, str], message: str) -> None:
    for rel, text in files.items():
        (wt / rel).parent.mkdir(parents=True, exist_ok=True)
        (wt / rel).write_text(text, encoding="utf-8")
    sb.git("add", "-A", cwd=wt)
    sb.git("commit", "-q", "-m", message, cwd=wt)


def squash_into_main(sb: Sandbox, repo: Repo, branch: str) -> None:
    """What a forge's squash merge does, in plumbing: main's checkout is left alone."""
    tree = sb.git("merge-tree", "--write-tree", "main", branch, cwd=repo.path).split()[0]
    commit = sb.git("commit-tree", tree, "-p", "main", "-m", f"Squash {branch}",
                    cwd=repo.path).strip()
    sb.git("update-ref", "refs/heads/main", commit, cwd=repo.path)


def landing_fixture(sb: Sandbox, count: int) -> tuple[Repo, list[Worktree], set[str]]:
    """`count` worktrees with 1-3 commits each; every other one squash-merged into main."""
    repo = make_repo(sb, sb.path("repo"), 100)
    sb.git("switch", "-q", "--detach", cwd=repo.path)  # main is not checked out
    worktrees = [managed_worktree(sb, repo, sb.vibe_home, f"wt-{i:04d}", i) for i in range(count)]
    for i, wt in enumerate(worktrees):
        for c in range(1 + i % 3):
            commit_in(sb, wt.path, {f"work/{wt.name}/{c}.txt": f"{wt.name} {c}\n"}, f"c{c}")
    squashed = {wt.name for i, wt in enumerate(worktrees) if i % 2 == 0}
    for wt in worktrees:
        if wt.name in squashed:
            squash_into_main(sb, repo, wt.name)
    return repo, worktrees, squashed


def raw_landing_loop(sb: Sandbox, worktrees: list[Worktree], base: str) -> float:
    """The baseline: a script asking the same three questions, one worktree after another."""
    script = Script()
    for wt in worktrees:
        script.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=wt.path)
        script.run(["git", "rev-list", "--count", f"{base}..HEAD"], cwd=wt.path)
        script.run(["git", "merge-tree", "--write-tree", "main", "HEAD"], cwd=wt.path,
                   check=False)
    return run_script(script, cwd=sb.root, env=sb.env).seconds


def check_integration(listed: Any, squashed: set[str]) -> list[str]:
    if not isinstance(listed, list):
        raise BenchError("vwt list --json printed no array")
    wrong = [row["name"] for row in listed
             if (row.get("integrated") is not None) != (row["name"] in squashed)]
    if not wrong:
        return []
    return [f"vwt disagrees on integration of {len(wrong)} worktrees, e.g. {wrong[0]}"]


def b7(cfg: Config, out: Outcome) -> list[Outcome]:
    count, rounds = cfg.pick(200, 40), cfg.pick(5, 3)
    out.what = f"list --json with integration, {count} worktrees"
    with cfg.sandbox("b7") as sb:
        repo, worktrees, squashed = landing_fixture(sb, count)
        raw_landing_loop(sb, worktrees, repo.head)  # warm-up
        out.notes += check_integration(
            parse_json(sb.vwt(["list", "--json"], cwd=repo.path)), squashed)

        def tool(i: int) -> Sample:
            result = sb.vwt(["list", "--json"], cwd=repo.path, sync=True)
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            return Sample(raw_landing_loop(sb, worktrees, repo.head))

        out.tool, out.base = alternate(rounds, tool, base)
    return []


# B8: vwt merge (squash, removed) vs git rebase + update-ref + worktree remove ----------------


def merge_round(sb: Sandbox, repo: Repo, tag: str, managed: bool) -> Worktree:
    """A worktree with two commits of its own, made in the second of its checkout as an
    agent makes them, and main moved on meanwhile. The tool's worktree comes from `vwt new`,
    the baseline's from `git worktree add`: both are real checkouts."""
    if managed:
        wt = vwt_new(sb, repo, tag, "--from", "main")
    else:
        wt = Worktree(tag, sb.path("raw-worktrees", tag))
        sb.git("worktree", "add", "-q", "--no-track", "-b", tag, str(wt.path), "main",
               cwd=repo.path)
    for c in range(2):
        commit_in(sb, wt.path, {f"work/{tag}/{c}.py": f"# {tag} {c}\n"}, f"{tag} {c}")
    main_tip = sb.git("rev-parse", "main", cwd=repo.path).strip()
    tree = sb.git("rev-parse", "main^{tree}", cwd=repo.path).strip()
    moved = sb.git("commit-tree", tree, "-p", main_tip, "-m", f"main moves for {tag}",
                   cwd=repo.path).strip()
    sb.git("update-ref", "refs/heads/main", moved, cwd=repo.path)
    return wt


B8_TOP = "src/"  # 200 folders of 100 files under one top-level folder, as projects have


def b8(cfg: Config, out: Outcome) -> list[Outcome]:
    nfiles, rounds = cfg.pick(20_000, 5_000), cfg.pick(5, 3)
    out.what = f"merge (squash, removed) vs rebase + update-ref + worktree remove, {nfiles} files"
    with cfg.sandbox("b8") as sb:
        repo = make_repo(sb, sb.path("repo"), nfiles, B8_TOP)
        sb.git("switch", "-q", "--detach", cwd=repo.path)  # the target is not checked out
        prepared: dict[tuple[str, int], Worktree] = {}

        def prepare(i: int) -> None:
            remove_tree(sb.vibe_home / "worktrees" / ".trash")
            prepared["tool", i] = merge_round(sb, repo, f"tool-{i}", managed=True)
            prepared["base", i] = merge_round(sb, repo, f"base-{i}", managed=False)

        def tool(i: int) -> Sample:
            wt = prepared["tool", i]
            result = sb.vwt(["merge", wt.name, "--no-fetch", "--json"], cwd=repo.path, sync=True)
            data = parse_json(result)
            if data.get("outcome") != "merged" or wt.path.exists():
                raise BenchError(f"vwt merge did not land and remove {wt.name}: {data}")
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            wt = prepared["base", i]
            script = Script()
            script.run(["git", "rebase", "-q", "main"], cwd=wt.path)
            script.run(["git", "update-ref", "refs/heads/main", "HEAD"], cwd=wt.path)
            script.run(["git", "worktree", "remove", str(wt.path)], cwd=repo.path)
            result = run_script(script, cwd=sb.root, env=sb.env)
            if wt.path.exists():
                raise BenchError("git worktree remove left the checkout")
            return Sample(result.seconds)

        prepare(WARMUP)
        tool(WARMUP)
        base(WARMUP)
        out.tool, out.base = alternate(rounds, tool, base, prepare)
    return []
