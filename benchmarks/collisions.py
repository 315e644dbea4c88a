"""B13 of SPEC.md section 7: `vwt conflicts --json` vs the same forecast by a raw script."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from benchmarks.cases import WARMUP, Config, parse_json
from benchmarks.fixtures import Repo, Worktree, make_repo, vwt_new
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError, Script, run_script, sections
from benchmarks.sandbox import Sandbox

NFILES = 2000
OVERLAPPING_PAIRS = 6  # worktrees 2p and 2p+1 share a file; the first 3 pairs conflict
CONFLICTING_PAIRS = 3
TARGET_FILES = 4  # main moves on: two of its files are files worktrees changed too

Forecast = tuple[dict[str, tuple[str, ...]], dict[tuple[str, str], tuple[str, ...]]]


def _file(i: int) -> str:
    i %= NFILES
    return f"pkg{i // 100:04d}/mod{i % 100:03d}.py"


def _admin_dir(checkout: Path) -> Path:
    text = (checkout / ".git").read_text(encoding="utf-8").strip()
    return (checkout / text[len("gitdir: "):]).resolve()


def edit(wt: Worktree, i: int) -> None:
    """Worktree i's 3 changed files: even ones committed, odd ones not; 6 pairs share a
    file (the pair's first worktree's third file), 3 of them on the same line."""
    files = [_file(3 * i + k + 7) for k in range(3)]
    pair, second = divmod(i, 2)
    if pair < OVERLAPPING_PAIRS:
        files[2] = _file(3 * (2 * pair) + 2 + 7)
    for k, rel in enumerate(files):
        target = wt.path / rel
        lines = target.read_text(encoding="utf-8").splitlines(keepends=True)
        if k == 2 and pair < CONFLICTING_PAIRS:
            lines[0] = f"# {wt.name} rewrote the first line\n"
        elif k == 2 and pair < OVERLAPPING_PAIRS and second:
            lines.append(f"# {wt.name} added a last line\n")
        else:
            lines.insert(0, f"# {wt.name} added a first line\n")
        target.write_text("".join(lines), encoding="utf-8")


def build(sb: Sandbox, folder: Path, count: int) -> tuple[Repo, list[Worktree]]:
    """A 2,000-file repository with `count` worktrees made as sessions make them: `vwt new`,
    then at once (in the checkout's second) 3 files changed and, for even ones, committed;
    then main moves on (2 of its 4 files are files some worktrees changed). Nothing
    refreshes an index afterwards: many entries stay racily clean, as they do for real."""
    repo = make_repo(sb, folder / "repo", NFILES)
    worktrees = []
    for i in range(count):
        wt = vwt_new(sb, repo, f"c-{i:03d}")
        edit(wt, i)
        if i % 2 == 0:
            sb.git("commit", "-q", "-am", f"work of {wt.name}", cwd=wt.path)
        worktrees.append(wt)
    for k in range(TARGET_FILES):  # lands on main: files 7 and 10 belong to c-000 and c-001
        rel = _file(7 + 3 * k) if k < 2 else _file(NFILES - 1 - k)
        target = repo.path / rel
        target.write_text(f"# main rewrote {rel}\n" + target.read_text(encoding="utf-8"),
                          encoding="utf-8")
    sb.git("commit", "-q", "-am", "main moves on", cwd=repo.path)
    return repo, worktrees


def raw_forecast(sb: Sandbox, repo: Repo, worktrees: list[Worktree]) -> tuple[float, Forecast]:
    """What a script would run, one step after the other, for every worktree: stage into a
    copy of its index, write the tree, commit it, list the changed paths, merge with main;
    then merge every two worktrees that changed a same path. Two scripts (the pairs come
    from the first one's output), each measured as one process as the tool is."""
    target = sb.git("rev-parse", "main", cwd=repo.path).strip()
    with tempfile.TemporaryDirectory() as folder:
        first = Script()
        for wt in worktrees:
            index = Path(folder) / f"{wt.name}.index"
            env = {"GIT_INDEX_FILE": str(index)}
            first.run(["cp", _admin_dir(wt.path) / "index", index], cwd=wt.path)
            first.run(["git", "add", "-A"], cwd=wt.path, env=env)
            tree = first.capture("tree", ["git", "write-tree"], cwd=wt.path, env=env)
            commit = first.capture("commit", ["git", "commit-tree", tree, "-p", "HEAD", "-m",
                                              "forecast"], cwd=wt.path)
            first.mark(f"{wt.name} commit")
            first.run(["echo", commit], cwd=wt.path)
            first.mark(f"{wt.name} names")
            first.run(["git", "diff", "--name-only", "-z", repo.head, commit], cwd=wt.path)
            first.mark(f"{wt.name} target")
            first.run([*MERGE, commit, target], cwd=repo.path, check=False)
        done = run_script(first, cwd=sb.root, env=sb.env)
    out = sections(done.stdout)
    commits = {wt.name: out[f"{wt.name} commit"].strip() for wt in worktrees}
    changed = {wt.name: {p for p in out[f"{wt.name} names"].split("\0") if p}
               for wt in worktrees}
    against_target = {wt.name: _conflicts(out[f"{wt.name} target"]) for wt in worktrees}
    by_path: dict[str, list[str]] = {}
    for wt in worktrees:
        for path in changed[wt.name]:
            by_path.setdefault(path, []).append(wt.name)
    pairs = sorted({(a, b) for owners in by_path.values() for a in owners for b in owners
                    if a < b})
    second = Script()
    for a, b in pairs:
        second.mark(f"{a} {b}")
        second.run([*MERGE, commits[a], commits[b]], cwd=repo.path, check=False)
    merged = run_script(second, cwd=sb.root, env=sb.env)
    out = sections(merged.stdout)
    between = {(a, b): _conflicts(out[f"{a} {b}"]) for a, b in pairs}
    return done.seconds + merged.seconds, (against_target, between)


MERGE = ("git", "merge-tree", "--write-tree", "--name-only", "-z", "--no-messages")


def _conflicts(output: str) -> tuple[str, ...]:
    """The conflicting paths `git merge-tree --name-only -z` printed after its tree."""
    return tuple(sorted({p for p in output.split("\0")[1:] if p}))


def tool_forecast(document: Any) -> Forecast:
    against = {w["name"]: tuple(w["target_conflicts"] or ()) for w in document["worktrees"]}
    between = {(p["a"], p["b"]): tuple(p["conflicts"]) for p in document["pairs"]}
    return against, between


def check_agreement(document: Any, expected: Forecast, count: int) -> list[str]:
    """The measurement means nothing if vwt forecasts something else than the script."""
    if len(document.get("worktrees", [])) != count:
        raise BenchError(f"vwt conflicts listed {len(document.get('worktrees', []))} worktrees,"
                         f" expected {count}")
    errors = [w for w in document["worktrees"] if w["error"]]
    if errors:
        raise BenchError(f"vwt conflicts could not read {errors[0]['name']}: {errors[0]['error']}")
    got = tool_forecast(document)
    notes = []
    if got[1] != expected[1]:
        notes.append(f"pairs differ: vwt {sorted(got[1].items())[:3]} git "
                     f"{sorted(expected[1].items())[:3]}")
    wrong = [n for n in expected[0] if got[0].get(n) != expected[0][n]]
    if wrong:
        notes.append(f"target conflicts differ on {len(wrong)} worktrees, e.g. {wrong[0]}: "
                     f"vwt {got[0].get(wrong[0])} git {expected[0][wrong[0]]}")
    conflicting = sum(1 for c in got[1].values() if c)
    if (len(got[1]), conflicting) != (OVERLAPPING_PAIRS, CONFLICTING_PAIRS):
        notes.append(f"fixture: {len(got[1])} pairs, {conflicting} conflicting, expected "
                     f"{OVERLAPPING_PAIRS} and {CONFLICTING_PAIRS}")
    return notes


def b13(cfg: Config, out: Outcome) -> list[Outcome]:
    count, rounds = 48, cfg.pick(5, 3)
    out.what = f"conflicts --json, {count} worktrees of {NFILES} files vs raw script"
    scaling = Outcome("B13n", f"conflicts --json, {2 * count} vs {count} worktrees", 2.5)
    with cfg.sandbox("b13") as sb:
        repo, worktrees = build(sb, sb.path("small"), count)
        big_repo, _ = build(sb, sb.path("big"), 2 * count)
        _, expected = raw_forecast(sb, repo, worktrees)  # also the baseline's warm-up

        def conflicts(where: Repo, expect: int) -> Sample:
            result = sb.vwt(["conflicts", "--json"], cwd=where.path, sync=True)
            document = parse_json(result)
            if len(document.get("worktrees", [])) != expect:
                raise BenchError(f"vwt conflicts listed {len(document['worktrees'])} worktrees")
            return Sample(result.seconds, result.peak_mib)

        cold = sb.vwt(["conflicts", "--json"], cwd=repo.path, sync=True)
        out.notes += check_agreement(parse_json(cold), expected, count)
        out.notes.append(f"first run, before vwt kept any refreshed index copy: "
                         f"{cold.seconds:.2f} s (the timed runs start from those copies)")

        def tool(i: int) -> Sample:
            return conflicts(repo, count)

        def base(i: int) -> Sample:
            return Sample(raw_forecast(sb, repo, worktrees)[0])

        out.tool, out.base = alternate(rounds, tool, base)
        conflicts(big_repo, 2 * count)  # warm-up of the bigger repository
        tool(WARMUP)
        scaling.tool, scaling.base = alternate(rounds, lambda i: conflicts(big_repo, 2 * count),
                                               tool)
    return [scaling]
