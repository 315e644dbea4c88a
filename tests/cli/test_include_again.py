"""`.worktreeinclude` files changed in the main checkout since a pool entry was filled are
copied again at the take (SPEC §15); unchanged ones keep what the pool made of them."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import Repo, Sandbox, Vwt
from vibe_worktree.lifecycle.include import copy_included_files
from vibe_worktree.lifecycle.include_again import copy_again, fingerprints, selected_files


def filled_entry(repo: Repo, sandbox: Sandbox) -> tuple[Path, dict[str, object]]:
    """A main checkout with an ignored `.env` (and a whole ignored folder) that
    `.worktreeinclude` selects, and an entry made as a fill makes it: checkout, copies,
    fingerprints taken right after the copy."""
    repo.commit("include", {".gitignore": ".env*\ncache/\n",
                            ".worktreeinclude": ".env*\ncache/\n"})
    (repo.path / ".env").write_text("SECRET=one\n")
    (repo.path / "cache").mkdir()
    (repo.path / "cache" / "blob").write_text("v1\n")
    entry = sandbox.tmp / "entry"
    repo.git("worktree", "add", "-q", "--detach", str(entry))
    copy_included_files(str(repo.path), str(entry), str(sandbox.vibe_home))
    return entry, dict(fingerprints(str(entry), selected_files(str(repo.path),
                                                                str(sandbox.vibe_home))))


def later(path: Path, text: str) -> None:
    """Change a file so that its modification time moves too."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


def test_a_changed_env_file_is_copied_again_and_new_ones_too(
        repo: Repo, sandbox: Sandbox) -> None:
    entry, recorded = filled_entry(repo, sandbox)
    assert list(recorded) == [".env"]  # files one by one; the folder selected whole is not
    later(repo.path / ".env", "SECRET=two\n")
    (repo.path / ".env.local").write_text("LOCAL=1\n")
    later(repo.path / "cache" / "blob", "v2\n")

    copied = copy_again(str(repo.path), str(entry), str(sandbox.vibe_home), recorded)

    assert copied == [".env", ".env.local"]
    assert (entry / ".env").read_text() == "SECRET=two\n"
    assert (entry / ".env").stat().st_mtime_ns == (repo.path / ".env").stat().st_mtime_ns
    assert (entry / ".env.local").read_text() == "LOCAL=1\n"
    assert (entry / "cache" / "blob").read_text() == "v1\n"  # a whole folder: as filled
    assert repo.porcelain(entry) == ""


def test_an_unchanged_file_keeps_what_a_hook_made_of_it(repo: Repo, sandbox: Sandbox) -> None:
    entry, recorded = filled_entry(repo, sandbox)
    (entry / ".env").write_text("SECRET=one\nPORT=4100\n")  # a hook appended to its copy
    time.sleep(0.01)
    (repo.path / ".env").touch()  # touched in the main checkout, same content
    assert copy_again(str(repo.path), str(entry), str(sandbox.vibe_home), recorded) == []
    assert (entry / ".env").read_text() == "SECRET=one\nPORT=4100\n"


def test_an_entry_without_fingerprints_compares_with_its_own_copy(
        repo: Repo, sandbox: Sandbox) -> None:
    entry, _ = filled_entry(repo, sandbox)
    assert copy_again(str(repo.path), str(entry), str(sandbox.vibe_home), None) == []
    later(repo.path / ".env", "SECRET=two\n")
    assert copy_again(str(repo.path), str(entry), str(sandbox.vibe_home), None) == [".env"]
    assert (entry / ".env").read_text() == "SECRET=two\n"


def test_a_changed_symlink_is_copied_as_a_symlink(repo: Repo, sandbox: Sandbox) -> None:
    repo.commit("include", {".gitignore": ".env*\n", ".worktreeinclude": ".env*\n"})
    (repo.path / ".env.shared").write_text("A=1\n")
    (repo.path / ".env").symlink_to(".env.shared")
    entry = sandbox.tmp / "entry"
    repo.git("worktree", "add", "-q", "--detach", str(entry))
    copy_included_files(str(repo.path), str(entry), str(sandbox.vibe_home))
    recorded = fingerprints(str(entry), selected_files(str(repo.path), str(sandbox.vibe_home)))
    (repo.path / ".env").unlink()
    (repo.path / ".env").symlink_to("/etc/hostname")
    copied = copy_again(str(repo.path), str(entry), str(sandbox.vibe_home), dict(recorded))
    assert copied == [".env"]
    assert os.readlink(entry / ".env") == "/etc/hostname"


def test_a_copy_never_goes_through_a_symlinked_folder_of_the_worktree(
        repo: Repo, sandbox: Sandbox) -> None:
    repo.commit("include", {".gitignore": "conf/\n", ".worktreeinclude": "conf/*.env\n"})
    (repo.path / "conf").mkdir()
    (repo.path / "conf" / "app.env").write_text("A=1\n")
    entry = sandbox.tmp / "entry"
    repo.git("worktree", "add", "-q", "--detach", str(entry))
    elsewhere = sandbox.tmp / "elsewhere"
    elsewhere.mkdir()
    (entry / "conf").symlink_to(elsewhere)  # what a hook left: a link out of the worktree
    warnings: list[str] = []
    copied = copy_again(str(repo.path), str(entry), str(sandbox.vibe_home), {}, warnings.append)
    assert copied == [] and list(elsewhere.iterdir()) == []
    assert len(warnings) == 1 and "conf/app.env" in warnings[0]


def test_without_worktreeinclude_nothing_is_compared(repo: Repo, sandbox: Sandbox) -> None:
    entry = sandbox.tmp / "entry"
    repo.git("worktree", "add", "-q", "--detach", str(entry))
    assert copy_again(str(repo.path), str(entry), str(sandbox.vibe_home), {}) == []


def test_new_from_the_pool_has_the_env_file_as_it_is_now_and_reruns_hooks_whose_inputs_name_it(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    log = sandbox.tmp / "runs.log"
    repo.commit("pool", {
        ".gitignore": ".env\nnode_modules/\n", ".worktreeinclude": ".env\n",
        ".vibe/worktree.toml":
            "[pool]\nsize = 1\n\n"
            '[[hooks]]\nname = "deps"\ntype = "post_create"\n'
            f'command = "mkdir -p node_modules && echo deps >> {log}"\n'
            'inputs = ["package.json"]\n\n'
            '[[hooks]]\nname = "env-check"\ntype = "post_create"\n'
            f'command = "cat .env >> {log}"\ninputs = [".env"]\n'})
    (repo.path / ".env").write_text("SECRET=one\n")
    vwt.ok("hooks", "approve", "--all")
    vwt.ok("pool", "fill")
    assert log.read_text() == "deps\nSECRET=one\n"
    later(repo.path / ".env", "SECRET=two\n")

    created = vwt.new("feature", "--no-fetch")

    assert created["pooled"] is True
    assert [(h["name"], h["status"]) for h in created["hooks"]] == [
        ("deps", "pooled"), ("env-check", "ok")]
    assert (Path(created["path"]) / ".env").read_text() == "SECRET=two\n"
    assert log.read_text().startswith("deps\nSECRET=one\nSECRET=two\n")
