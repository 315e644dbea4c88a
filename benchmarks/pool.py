"""B14 of SPEC.md section 7: `vwt new` taking a ready worktree from the warm pool."""

from __future__ import annotations

import json
from dataclasses import replace

from benchmarks.cases import WARMUP, Config, new_checkout, timed
from benchmarks.fixtures import claims_dir, forget_worktree, make_repo
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError

HOOK_SECONDS = 5
CHANGED_FILES = 10


def _hooks_file(size: int) -> str:
    """The user's worktree.toml: the pool's size and a 5 s `npm ci` stand-in whose only
    input is package.json (a user hook: it needs no approval)."""
    return (f"[pool]\nsize = {size}\n\n[[hooks]]\nname = \"deps\"\ntype = \"post_create\"\n"
            f"command = \"sleep {HOOK_SECONDS} && mkdir -p node_modules && "
            f"cp package.json node_modules/installed\"\ninputs = [\"package.json\"]\n")


def b14(cfg: Config, out: Outcome) -> list[Outcome]:
    nfiles = cfg.pick(20_000, 4_000)
    rounds = cfg.pick(5, 3)
    out.what = (f"new from the pool vs worktree add + {HOOK_SECONDS} s hook, {nfiles} files, "
                f"start {CHANGED_FILES} files ahead")
    with cfg.sandbox("b14") as sb:
        repo = make_repo(sb, sb.path("repo"), nfiles)
        (repo.path / ".gitignore").write_text("node_modules/\n")
        (repo.path / "package.json").write_text('{"name": "fixture"}\n')
        sb.git("add", ".gitignore", "package.json", cwd=repo.path)
        commit = ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m"]
        sb.git(*commit, "package.json", cwd=repo.path)
        hooks_file = sb.vibe_home / "worktree.toml"
        sb.vibe_home.mkdir(parents=True, exist_ok=True)
        entries = rounds + 1  # one per timed round and the warm-up
        hooks_file.write_text(_hooks_file(entries))
        sb.vwt(["pool", "fill", "--size", str(entries)], cwd=repo.path)
        # The start point moves one commit (10 files, not package.json) past the pool's
        # base; refills are switched off so that every round takes an entry of that base.
        for i in range(CHANGED_FILES):
            path = repo.path / f"pkg{i:04d}" / "mod000.py"
            path.write_text(path.read_text() + f"# changed {i}\n")
        sb.git("add", "-A", cwd=repo.path)
        sb.git(*commit, "ten files", cwd=repo.path)
        hooks_file.write_text(_hooks_file(0))
        base_dir = sb.path("baseline-worktrees")
        base_dir.mkdir()
        last = f"pkg{(nfiles - 1) // 100:04d}/mod{(nfiles - 1) % 100:03d}.py"
        hook = (f"sleep {HOOK_SECONDS} && mkdir -p node_modules && "
                "cp package.json node_modules/installed")

        def tool(i: int) -> Sample:
            name = f"b14-tool-{i}"
            result = sb.vwt(["new", name, "--no-fetch", "--json"], cwd=repo.path, sync=True)
            doc = json.loads(result.stdout)
            if doc.get("pooled") is not True or doc["hooks"][0]["status"] != "pooled":
                raise BenchError(f"vwt new did not take a ready pool entry: {result.stdout}")
            path = new_checkout(sb, replace(result, stdout=doc["path"] + "\n"), last)
            if not (path / "node_modules" / "installed").is_file() or \
                    "# changed 9" not in (path / "pkg0009" / "mod000.py").read_text():
                raise BenchError(f"the pooled worktree {path} is not the start point's")
            forget_worktree(sb, repo, name, path, claims_dir(sb.vibe_home, path.parent.name) / name)
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            name = f"b14-git-{i}"
            path = base_dir / name
            script = f'git worktree add -q -b {name} "{path}" && cd "{path}" && {hook}'
            result = timed(sb, ["sh", "-c", script], repo.path)
            forget_worktree(sb, repo, name, path, None)
            return Sample(result.seconds)

        tool(WARMUP)
        out.tool, out.base = alternate(rounds, tool, base)
    return []
