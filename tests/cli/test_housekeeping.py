"""Housekeeping commands never run what the repository's own config defines (SPEC §6).

Every command but `new` and `restore` runs git with hooks and fsmonitor off, and never runs a
filter driver, signing program, external diff or textconv defined in local/worktree config.
Each test arms one such trap with a marker file and runs the housekeeping commands.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def trap(sandbox, name: str) -> tuple[Path, Path]:
    """An executable that records that it ran, then behaves like `cat`."""
    marker = sandbox.tmp / f"{name}.ran"
    script = sandbox.tmp / f"{name}.sh"
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> '{marker}'\ncat\n")
    script.chmod(0o755)
    return script, marker


def housekeeping(vwt, name: str) -> None:
    for args in (["list", "--json"], ["list", "--all", "--json"], ["status", name, "--json"],
                 ["snapshot", name, "--json"], ["prune", "--dry-run", "--keep", "0", "--json"]):
        result = vwt(*args)
        assert result.code == 0, str(result)
    result = vwt("rm", name, "-y", "--json")
    assert result.code == 0, str(result)
    assert result.json()["outcome"] == "removed"


@pytest.fixture
def busy(repo, vwt):
    """A worktree with a same-size modification (git must hash it) and an untracked file."""
    repo.commit("attrs", {".gitattributes": "*.txt diff=conv\n", "data.txt": "aaaa\n"})
    path = Path(vwt.new("busy")["path"])
    repo.write("data.txt", "bbbb\n", base=path)
    repo.write("extra.txt", "new\n", base=path)
    return path


def test_repository_hooks_do_not_run(repo, vwt, sandbox, busy):
    log = sandbox.tmp / "hooks.log"
    for hook in ("reference-transaction", "post-checkout", "pre-auto-gc", "post-index-change",
                 "pre-commit", "post-commit", "post-rewrite"):
        script = repo.path / ".git" / "hooks" / hook
        script.write_text(f"#!/bin/sh\necho {hook} >> '{log}'\n")
        script.chmod(0o755)
    housekeeping(vwt, "busy")
    assert not log.exists(), log.read_text()


def test_hooks_path_from_local_config_is_ignored(repo, vwt, sandbox, busy):
    hooks = sandbox.tmp / "myhooks"
    hooks.mkdir()
    log = sandbox.tmp / "hookspath.log"
    for hook in ("reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> '{log}'\n")
        (hooks / hook).chmod(0o755)
    repo.git("config", "core.hooksPath", str(hooks))
    housekeeping(vwt, "busy")
    assert not log.exists(), log.read_text()


def test_fsmonitor_from_local_config_does_not_run(repo, vwt, sandbox, busy):
    script, marker = trap(sandbox, "fsmonitor")
    script.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexit 1\n")
    repo.git("config", "core.fsmonitor", str(script))
    housekeeping(vwt, "busy")
    assert not marker.exists(), marker.read_text()


def test_filter_driver_does_not_run_for_status(repo, vwt, sandbox, busy):
    script, marker = trap(sandbox, "filter")
    repo.write(".gitattributes", "*.txt filter=evil\n", base=busy)
    repo.git("config", "filter.evil.clean", str(script))
    status = vwt.ok("status", "busy", "--json").json()
    listed = vwt.entry("busy")
    assert status["changes"] == 3
    assert listed["changes"] == 3
    assert not marker.exists(), marker.read_text()


def test_signing_program_does_not_run(repo, vwt, sandbox, busy):
    script, marker = trap(sandbox, "gpg")
    script.write_text(f"#!/bin/sh\necho ran >> '{marker}'\nexit 1\n")
    repo.git("config", "commit.gpgSign", "true")
    repo.git("config", "tag.gpgSign", "true")
    repo.git("config", "gpg.program", str(script))
    housekeeping(vwt, "busy")
    assert not marker.exists(), marker.read_text()
    commit = repo.rev("refs/vibe/reaped/busy")
    assert "gpgsig" not in repo.git("cat-file", "commit", commit)


def test_external_diff_and_textconv_do_not_run(repo, vwt, sandbox, busy):
    ext, ext_marker = trap(sandbox, "extdiff")
    conv, conv_marker = trap(sandbox, "textconv")
    repo.git("config", "diff.external", str(ext))
    repo.git("config", "diff.conv.textconv", str(conv))
    housekeeping(vwt, "busy")
    assert not ext_marker.exists(), ext_marker.read_text()
    assert not conv_marker.exists(), conv_marker.read_text()


def test_worktree_scope_config_is_treated_as_the_repositorys_own(repo, vwt, sandbox, busy):
    script, marker = trap(sandbox, "wtfilter")
    repo.write(".gitattributes", "*.txt filter=evil\n", base=busy)
    repo.git("config", "extensions.worktreeConfig", "true")
    repo.git("config", "--worktree", "filter.evil.clean", str(script), cwd=busy)
    assert vwt("status", "busy", "--json").code == 0
    assert vwt("list", "--json").code == 0
    assert not marker.exists(), marker.read_text()


def test_patch_ids_of_squash_recognition_run_no_repository_command(repo, vwt, sandbox):
    """`squashed` diffs the target's commits and the branch: no external diff, textconv or
    signature program of the repository's config runs, and the answer is still found."""
    ext, ext_marker = trap(sandbox, "extdiff")
    conv, conv_marker = trap(sandbox, "textconv")
    gpg, gpg_marker = trap(sandbox, "gpg")
    lines = "".join(f"line {n}\n" for n in range(20))
    repo.commit("attrs", {".gitattributes": "*.txt diff=conv\n", "code.txt": lines})
    path = Path(vwt.new("pr")["path"])
    repo.commit("pr 1", {"code.txt": lines.replace("line 3\n", "line 3 a\n")}, cwd=path)
    repo.commit("pr 2", {"code.txt": lines.replace("line 3\n", "line 3 b\n")}, cwd=path)
    repo.git("merge", "-q", "--squash", "pr")
    repo.git("commit", "-q", "-m", "squash")
    repo.commit("later", {"code.txt": lines.replace("line 3\n", "line 3 later\n")})
    for key, value in (("diff.external", ext), ("diff.conv.textconv", conv),
                       ("log.showSignature", "true"), ("gpg.program", gpg),
                       ("diff.noprefix", "true"), ("diff.relative", "true")):
        repo.git("config", key, str(value))
    assert vwt.entry("pr")["integrated"] == "squashed"
    for marker in (ext_marker, conv_marker, gpg_marker):
        assert not marker.exists(), marker.read_text()
