"""Messages that say what happened, in vwt's words, with a way out that works as printed
(the points a new user hit, issue "what a new user hits")."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import VWT_BIN

PROJECT = Path(__file__).resolve().parents[2]


def test_new_of_a_branch_the_main_checkout_has_says_which_checkout(repo, vwt):
    result = vwt("new", "main")
    assert result.code == 1, str(result)
    [line] = result.err_lines
    assert line.startswith(f"vwt: error: branch main is already checked out at {repo.path} "
                           "(the main checkout)"), line
    assert "git " not in line and "fatal:" not in line and "--from main" in line
    other = vwt("new", "side", "-b", "main")
    assert f"checked out at {repo.path} (the main checkout)" in other.err


def test_not_found_reads_the_same_whichever_command_met_it(repo, vwt):
    messages = {vwt(*args).err.strip() for args in (["rm", "nope"], ["status", "nope"],
                                                    ["path", "nope"], ["merge", "nope"],
                                                    ["sync", "nope"], ["snapshot", "nope"])}
    assert messages == {"vwt: error: no managed worktree named 'nope' in this repository; "
                        "see vwt list"}


def test_new_warns_when_the_local_default_branch_has_commits_the_remote_lacks(origin_repo, vwt):
    landed = origin_repo.commit("landed by vwt merge, not pushed", {"hooks.txt": "x\n"})
    result = vwt("new", "feat", "--json")
    assert result.code == 0, str(result)
    warnings = [line for line in result.err_lines if line.startswith("vwt: warning:")]
    assert warnings == ["vwt: warning: main has 1 commit(s) that origin/main lacks (not pushed "
                        "yet?); the worktree starts from origin/main without them (pass "
                        "--from main to include them)"], result.err
    assert result.json()["base_commit"] == origin_repo.rev("origin/main")
    included = vwt("new", "with", "--from", "main", "--json")
    assert included.json()["base_commit"] == landed and "lacks" not in included.err
    assert "lacks" in vwt("new", "offline", "--no-fetch").err


def test_unknown_remote_default_names_the_command_that_fixes_it(origin_repo, vwt):
    origin_repo.git("symbolic-ref", "--delete", "refs/remotes/origin/HEAD")
    result = vwt("new", "feat", "--no-fetch")
    assert result.code == 0, str(result)
    [line] = [w for w in result.err_lines if "cannot tell" in w]
    fix = re.search(r"to fix: (git [^)]+)\)", line)
    assert fix and fix.group(1) == "git remote set-head origin -a", line
    origin_repo.git(*shlex.split(fix.group(1))[1:])  # works as printed
    assert "cannot tell" not in vwt("new", "next", "--no-fetch").err


def test_rm_from_inside_the_worktree_warns_that_the_shell_is_left_behind(repo, vwt):
    path = vwt.new("feat")["path"]
    result = vwt("rm", "feat", cwd=path)
    assert result.code == 0, str(result)
    assert "you were inside feat, which is now removed" in result.err
    assert f"cd {repo.path}" in result.err
    assert "inside" not in vwt("rm", vwt.new("other")["name"]).err


def test_merge_from_inside_the_worktree_warns_that_the_shell_is_left_behind(repo, vwt):
    path = vwt.new("feat")["path"]
    repo.commit("work", {"work.txt": "work\n"}, cwd=path)
    result = vwt("merge", "feat", "--no-fetch", cwd=path)
    assert result.code == 0, str(result)
    assert "you were inside feat, which is now removed" in result.err
    assert f"cd {repo.path}" in result.err
    other = vwt.new("other")["path"]
    repo.commit("more", {"more.txt": "more\n"}, cwd=other)
    assert "inside" not in vwt("merge", "other", "--no-fetch").err


def test_status_says_what_makes_a_worktree_not_clean(repo, vwt):
    path = vwt.new("feat")["path"]
    repo.commit("mine", {"mine.txt": "mine\n"}, cwd=path)
    out = vwt.ok("status", "feat").out
    assert re.search(r"changes\s+0 \(0 untracked\)", out)
    assert re.search(r"clean\s+no \(1 commit\(s\) since its base\)", out), out
    repo.write("wip.txt", "wip\n", base=Path(path))
    assert re.search(r"clean\s+no \(1 change\(s\), 1 commit\(s\) since its base\)",
                     vwt.ok("status", "feat").out)


def test_quick_benchmarks_say_why_fail_rows_exit_0() -> None:
    script = """
from benchmarks.__main__ import tolerance_note
from benchmarks.measure import Outcome, Sample
def row(id, ratio):
    return Outcome(id, "x", 1.0, tool=[Sample(ratio)], base=[Sample(1.0)])
print(tolerance_note([row("B1", 0.5), row("B3", 1.5)], 2.0))
print(tolerance_note([row("B1", 0.5), row("B3", 2.5)], 2.0))
print(tolerance_note([row("B1", 0.5)], 2.0))
"""
    out = subprocess.run([sys.executable, "-c", script], cwd=PROJECT, capture_output=True,
                         text=True, check=True, timeout=60).stdout.splitlines()
    assert out == [
        "benchmarks: B3 missed the target but within --quick's 2x tolerance (shared machines "
        "are noisy); exit 0",
        "benchmarks: B3 beyond the tolerance (2x the target) or in error; exit 1",
        "benchmarks: every target met; exit 0",
    ]


@pytest.mark.parametrize("command", ["rm", "merge"])
@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_function_leaves_a_worktree_rm_removed_from_under_it(repo, vwt, shell, command):
    import shutil

    found = shutil.which(shell)
    if not found:
        pytest.skip(f"{shell} is not installed")
    path = vwt.new("feat")["path"]
    vwt.new("gone")
    if command == "merge":
        repo.commit("work", {"work.txt": "work\n"}, cwd=path)
    removing = f"vwt {command} feat{' --no-fetch' if command == 'merge' else ''}"
    if shell == "fish":
        argv = [found, "--no-config", "-c",
                f"vwt shell-init fish | source; cd {path}; {removing}; pwd"]
    else:
        flags = ["--noprofile", "--norc"] if shell == "bash" else ["-f"]
        argv = [found, *flags, "-c",
                f'eval "$(vwt shell-init {shell})"; cd {path}; {removing}; pwd']
    env = vwt.env({"PATH": f"{Path(VWT_BIN).parent}{os.pathsep}{os.environ['PATH']}"})
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60,
                          cwd=repo.path, stdin=subprocess.DEVNULL)
    assert proc.stdout.splitlines()[-1] == str(repo.path), proc.stderr
    assert not Path(path).exists()
    assert f"vwt: now in {repo.path}" in proc.stderr


def test_a_command_run_from_a_deleted_folder_says_so(repo, vwt, sandbox):
    gone = sandbox.tmp / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rmdir "{gone}" && "{VWT_BIN}" list; echo "exit $?"'
    proc = subprocess.run(["sh", "-c", script], env=vwt.env(), capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    assert proc.stdout.strip() == "exit 1"
    assert proc.stderr.startswith("vwt: error: the current directory no longer exists"), \
        proc.stderr
    assert "-C DIR" in proc.stderr


def option_help(vwt, command: str, option: str) -> str:
    """The help text of `option` in `vwt COMMAND --help`, on one line."""
    text = vwt.ok(command, "--help", env_extra={"COLUMNS": "1000"}).out
    lines = text.splitlines()
    for i, line in enumerate(lines):
        head, _, rest = line.strip().partition("  ")
        if line.startswith("  -") and option in head.replace(",", "").split():
            if not rest:  # a long option list puts its help on the next line
                rest = lines[i + 1]
            return " ".join(rest.split())
    raise AssertionError(f"no {option} in vwt {command} --help:\n{text}")


def test_the_branch_help_says_what_new_names_the_branch(repo, vwt):
    assert option_help(vwt, "new", "-b") == (
        "branch to create or check out (default: NAME; vibe/SLUG for a worktree named from "
        "--prompt)")
    assert vwt.new("feat", "--no-fetch")["branch"] == "feat"
    prompted = vwt.new("-p", "Fix the login bug", "--no-fetch")
    assert prompted["branch"] == f"vibe/{prompted['name']}"
    assert prompted["name"].startswith("fix-the-login-bug")


TARGET_DEFAULT = ("the local branch named after the remote's default (origin/HEAD), else main, "
                  "else master")


def test_merge_and_sync_help_say_which_branch_is_the_default_target(vwt):
    assert option_help(vwt, "merge", "--into") == f"target branch (default: {TARGET_DEFAULT})"
    assert option_help(vwt, "sync", "--onto") == (
        f"branch to rebase onto (default: {TARGET_DEFAULT}; its remote-tracking branch when "
        "the fetch finds it ahead)")


def test_the_benchmarks_end_with_the_line_that_explains_their_exit_status() -> None:
    """`python -m benchmarks`'s own `main`, with each benchmark's run replaced by a made-up
    ratio (the fixtures and timings are not what is tested here)."""
    script = """
import sys
import benchmarks.__main__ as bench
from benchmarks.measure import Outcome, Sample
RATIOS = dict(zip(sys.argv[1::2], map(float, sys.argv[2::2])))
def made_up(b, cfg):
    return [Outcome(b.id, b.what, 1.0, tool=[Sample(RATIOS[b.id])], base=[Sample(1.0)])]
bench.run_one = made_up
bench.compile_tool_package = lambda: None
sys.exit(bench.main(["--quick", "--tool", "vwt", *RATIOS]))
"""

    def run(*ratios: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", script, *ratios], cwd=PROJECT,
                              capture_output=True, text=True, timeout=60)

    noisy = run("B1", "0.5", "B3", "1.5")
    assert noisy.returncode == 0, noisy.stderr
    assert "FAIL" in noisy.stdout  # B3's row, in the table
    assert noisy.stderr.splitlines()[-1] == (
        "benchmarks: B3 missed the target but within --quick's 2x tolerance (shared machines "
        "are noisy); exit 0")
    beyond = run("B1", "0.5", "B3", "2.5")
    assert beyond.returncode == 1
    assert beyond.stderr.splitlines()[-1] == (
        "benchmarks: B3 beyond the tolerance (2x the target) or in error; exit 1")
