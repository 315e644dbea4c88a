"""B9 and B10 of SPEC.md section 7: worktrees made ready (copied folders, sparse checkouts)."""

from __future__ import annotations

import os

from benchmarks.cases import WARMUP, Config, new_checkout, timed
from benchmarks.fixtures import Repo, claims_dir, forget_worktree, make_repo
from benchmarks.measure import Outcome, Sample, alternate
from benchmarks.proc import BenchError
from benchmarks.sandbox import Sandbox

PER_PACKAGE = 20


def add_node_modules(repo: Repo, nfiles: int) -> str:
    """An ignored `node_modules` of `nfiles` small files that `.worktreeinclude` names, with
    a symlink per package as npm makes them; returns the last file's relative path."""
    (repo.path / ".gitignore").write_text("node_modules/\n")
    (repo.path / ".worktreeinclude").write_text("node_modules/\n")
    last = ""
    for p in range(nfiles // PER_PACKAGE):
        folder = repo.path / "node_modules" / f"pkg{p:04d}" / "lib"
        folder.mkdir(parents=True)
        for f in range(PER_PACKAGE):
            (folder / f"f{f:02d}.js").write_text(f"module.exports = {p * PER_PACKAGE + f};\n")
        os.symlink(f"pkg{p:04d}/lib", repo.path / "node_modules" / f"link{p:04d}")
        last = f"node_modules/pkg{p:04d}/lib/f{PER_PACKAGE - 1:02d}.js"
    return last


def _commit_ignore_files(sb: Sandbox, repo: Repo) -> None:
    sb.git("add", ".gitignore", ".worktreeinclude", cwd=repo.path)
    sb.git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "ignore",
           cwd=repo.path)


def b9(cfg: Config, out: Outcome) -> list[Outcome]:
    nfiles = cfg.pick(20_000, 4_000)
    out.what = f"new + .worktreeinclude of {nfiles} ignored files vs add + cp -a"
    with cfg.sandbox("b9") as sb:
        repo = make_repo(sb, sb.path("repo"), 100)
        last = add_node_modules(repo, nfiles)
        _commit_ignore_files(sb, repo)
        base_dir = sb.path("baseline-worktrees")
        base_dir.mkdir()

        def tool(i: int) -> Sample:
            name = f"b9-tool-{i}"
            result = sb.vwt(["new", name, "--no-fetch", "--no-hooks"], cwd=repo.path, sync=True)
            path = new_checkout(sb, result, last)
            forget_worktree(sb, repo, name, path, claims_dir(sb.vibe_home, path.parent.name) / name)
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            name = f"b9-git-{i}"
            path = base_dir / name
            script = f'git worktree add -q -b {name} "{path}" && cp -a node_modules "{path}/"'
            result = timed(sb, ["sh", "-c", script], repo.path)
            forget_worktree(sb, repo, name, path, None)
            return Sample(result.seconds)

        tool(WARMUP)
        base(WARMUP)
        out.tool, out.base = alternate(cfg.pick(5, 3), tool, base)
    return []


def b10(cfg: Config, out: Outcome) -> list[Outcome]:
    # The full 20,000 files even in --quick: with 5,000 a full `worktree add` takes 0.2-1.6 s
    # on this disk, against vwt's fixed ~0.09 s, so the quick ratio swung across its limit.
    nfiles = 20_000
    folders = [f"pkg{p:04d}" for p in range(nfiles // 20 // 100)]  # a twentieth of the tree
    out.what = f"new --sparse ({len(folders) * 100} of {nfiles} files) vs full worktree add"
    with cfg.sandbox("b10") as sb:
        repo = make_repo(sb, sb.path("repo"), nfiles)
        base_dir = sb.path("baseline-worktrees")
        base_dir.mkdir()
        last = f"{folders[-1]}/mod099.py"
        sparse = [arg for folder in folders for arg in ("--sparse", folder)]

        def tool(i: int) -> Sample:
            name = f"b10-tool-{i}"
            result = sb.vwt(["new", name, "--no-fetch", "--no-hooks", *sparse], cwd=repo.path,
                            sync=True)
            path = new_checkout(sb, result, last)
            if (path / f"pkg{len(folders):04d}").exists():
                raise BenchError(f"vwt new --sparse checked out more than {folders}")
            forget_worktree(sb, repo, name, path, claims_dir(sb.vibe_home, path.parent.name) / name)
            return Sample(result.seconds, result.peak_mib)

        def base(i: int) -> Sample:
            name = f"b10-git-{i}"
            path = base_dir / name
            result = timed(sb, ["git", "worktree", "add", "-q", "-b", name, str(path)], repo.path)
            forget_worktree(sb, repo, name, path, None)
            return Sample(result.seconds)

        out.tool, out.base = alternate(cfg.pick(5, 3), tool, base)
    return []
