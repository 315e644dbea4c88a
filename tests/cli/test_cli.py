"""Global options, home resolution, output and error conventions (SPEC §1, §2, §4, §5)."""

from __future__ import annotations

import json

import pytest

from conftest import VIBE_WORKTREE_BIN, assert_error


def test_home_option_overrides_vibe_home(repo, vwt, sandbox):
    other = sandbox.tmp / "other-home"
    result = vwt.ok("--home", str(other), "new", "h", "--json").json()
    assert result["path"] == str(other / "worktrees" / repo.bucket / "h")
    assert (other / "worktrees" / ".claims" / repo.bucket / "h" / "record.json").exists()
    assert not (sandbox.vibe_home / "worktrees" / repo.bucket / "h").exists()
    # and the other home is where later commands look
    assert vwt("path", "h").code == 1
    assert vwt.ok("--home", str(other), "path", "h").out.strip() == result["path"]


def test_vibe_home_overrides_the_default(repo, vwt, sandbox):
    result = vwt.new("v")
    assert result["path"] == str(sandbox.vibe_home / "worktrees" / repo.bucket / "v")


def test_default_home_is_dot_vibe_in_home(repo, vwt, sandbox):
    result = vwt.new("d", env_extra={"VIBE_HOME": None})
    assert result["path"] == str(sandbox.home / ".vibe" / "worktrees" / repo.bucket / "d")


def test_dash_c_runs_as_if_started_in_dir(repo, vwt, sandbox):
    outside = sandbox.tmp / "outside"
    result = vwt.ok("-C", str(repo.path), "new", "c", "--json", cwd=outside).json()
    assert result["bucket"] == repo.bucket
    assert result["repo_root"] == str(repo.path)
    listed = vwt.ok("-C", str(repo.path), "list", "--json", cwd=outside).json()
    assert [e["name"] for e in listed] == ["c"]


def test_global_options_combine(repo, vwt, sandbox):
    other = sandbox.tmp / "h2"
    out = vwt.ok("--home", str(other), "-C", str(repo.path), "new", "both", "--json",
                 cwd=sandbox.tmp / "outside").json()
    assert out["path"] == str(other / "worktrees" / repo.bucket / "both")


def test_json_output_is_exactly_one_document(repo, vwt):
    vwt.new("j")
    for args in (["list", "--json"], ["list", "--all", "--json"], ["status", "j", "--json"],
                 ["snapshot", "j", "--json"], ["prune", "--dry-run", "--json"]):
        result = vwt.ok(*args)
        json.loads(result.out)  # raises on trailing text or a second document


def test_not_a_repository_is_an_error_without_traceback(vwt, sandbox):
    for args in (["new", "x"], ["path", "x"], ["status", "x"], ["rm", "x"], ["snapshot", "x"],
                 ["restore", "x"]):
        result = vwt(*args, cwd=sandbox.tmp / "outside")
        assert_error(result, 1)


def test_unknown_command_is_bad_usage(vwt):
    result = vwt("frobnicate")
    assert result.code == 2
    assert "Traceback" not in result.err


def test_unknown_option_is_bad_usage(repo, vwt):
    assert vwt("new", "--frobnicate").code == 2
    assert vwt("list", "--frobnicate").code == 2


def test_missing_name_argument_is_bad_usage(repo, vwt):
    for cmd in ("path", "status", "rm", "snapshot", "restore"):
        assert vwt(cmd).code == 2, cmd


def test_keep_must_be_a_number(repo, vwt):
    assert vwt("prune", "--keep", "many").code == 2


def test_vibe_worktree_script_is_the_same_program(repo, vwt):
    vwt.new("same")
    result = vwt("list", "--json", exe=VIBE_WORKTREE_BIN)
    assert result.code == 0, str(result)
    assert [e["name"] for e in result.json()] == ["same"]


def test_version_prints_and_exits_zero(vwt):
    result = vwt("--version")
    assert result.code == 0
    assert result.out.strip() or result.err.strip()


def test_help_lists_the_commands(vwt):
    result = vwt("--help")
    assert result.code == 0
    for cmd in ("new", "list", "path", "status", "run", "shell", "rm", "snapshot", "restore",
                "prune", "mcp"):
        assert cmd in result.out, cmd


def test_refusal_prints_json_even_though_exit_is_nonzero(repo, vwt):
    path = repo.checkout(vwt.new("dirty")["name"])
    repo.write("x.txt", base=path)
    result = vwt("rm", "dirty", "--json")
    assert result.code == 3
    assert result.json()["outcome"] == "kept_dirty"
    assert result.json()["name"] == "dirty"


@pytest.mark.parametrize("cmd", ["list", "prune"])
def test_commands_work_when_home_does_not_exist_yet(vwt, sandbox, cmd):
    result = vwt(cmd, "--json", cwd=sandbox.tmp / "outside")
    assert result.code == 0, str(result)
    data = result.json()
    if cmd == "list":
        assert data == []
    else:
        assert data["removed"] == []


def test_dash_c_to_a_missing_directory_is_an_error(vwt, sandbox):
    result = vwt("-C", str(sandbox.tmp / "does-not-exist"), "list", "--json")
    assert result.code in (1, 2), str(result)
    assert result.err.strip()
