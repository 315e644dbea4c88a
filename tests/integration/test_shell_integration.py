"""`vwt shell-init`: the real shells, run non-interactively."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from .vwt_support import Box


def run_shell(box: Box, argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=box.repo, env=box.env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def needs(shell: str) -> str:
    found = shutil.which(shell)
    if not found:
        pytest.skip(f"{shell} is not installed")
    return found


POSIX_CD_SCRIPT = """\
eval "$(vwt shell-init {shell})"
vwt cd a && pwd
vwt new --cd b && pwd
vwt --home "$VIBE_HOME" -C "$REPO" restore --help >/dev/null && echo help-ok
vwt cd nope; echo "rc=$?"
pwd
vwt list --json >/dev/null && echo passthrough-ok
"""


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_cd_and_new_cd_change_the_shells_directory(box: Box, shell: str) -> None:
    path = needs(shell)
    a = box.new("a")["path"]
    flags = ["--noprofile", "--norc"] if shell == "bash" else ["-f"]
    box.env["REPO"] = str(box.repo)
    result = run_shell(box, [path, *flags, "-c", POSIX_CD_SCRIPT.format(shell=shell)])
    lines = result.stdout.splitlines()
    b = box.ok("path", "b").out.strip()
    assert lines == [a, b, "help-ok", "rc=1", b, "passthrough-ok"], result.stderr
    assert "nope" in result.stderr


def test_bash_completes_commands_and_worktree_names(box: Box) -> None:
    path = needs("bash")
    box.new("alpha")
    box.new("beta")
    script = """\
eval "$(vwt shell-init bash)"
complete -p vwt
COMP_WORDS=(vwt re); COMP_CWORD=1; _vwt_complete; echo "cmds: ${COMPREPLY[*]}"
COMP_WORDS=(vwt rm ""); COMP_CWORD=2; _vwt_complete; echo "names: ${COMPREPLY[*]}"
COMP_WORDS=(vwt cd al); COMP_CWORD=2; _vwt_complete; echo "prefix: ${COMPREPLY[*]}"
COMP_WORDS=(vwt run alpha ""); COMP_CWORD=3; _vwt_complete; echo "after: ${COMPREPLY[*]}"
"""
    result = run_shell(box, [path, "--noprofile", "--norc", "-c", script])
    out = result.stdout.splitlines()
    assert "_vwt_complete" in out[0]
    assert out[1] == "cmds: restore", result.stderr
    assert out[2] == "names: alpha beta"
    assert out[3] == "prefix: alpha"
    assert out[4] == "after: "


def test_zsh_registers_its_completion_with_compinit(box: Box) -> None:
    path = needs("zsh")
    script = ('autoload -Uz compinit && compinit -u -d "$HOME/.zcompdump"; '
              'eval "$(vwt shell-init zsh)"; print -r -- "${_comps[vwt]}"')
    result = run_shell(box, [path, "-f", "-c", script])
    assert result.stdout.strip() == "_vwt_complete", result.stderr


def test_fish_function_and_completion(box: Box) -> None:
    path = needs("fish")
    a = box.new("alpha")["path"]
    script = ("vwt shell-init fish | source; vwt cd alpha; and pwd; "
              "vwt cd nope; echo rc=$status; complete -C 'vwt sn'; complete -C 'vwt rm al'")
    result = run_shell(box, [path, "--no-config", "-c", script])
    lines = [ln.split("\t")[0] for ln in result.stdout.splitlines()]
    assert lines == [a, "rc=1", "snapshot", "alpha"], result.stdout + result.stderr


def test_hidden_complete_honours_home_and_directory_options(box: Box) -> None:
    box.new("gamma")
    elsewhere = box.tmp
    result = box.ok("__complete", "--", "--home", str(box.vibe_home), "-C", str(box.repo),
                    "status", "g", cwd=elsewhere)
    assert result.out == "gamma\n"
    outside = box.ok("__complete", "--", "status", "", cwd=elsewhere)
    assert outside.out == ""
    flags = box.ok("__complete", "--", "--h")
    assert flags.out == "--home\n--help\n"


def test_cd_with_json_is_bad_usage(box: Box) -> None:
    result = box.vwt("new", "x", "--cd", "--json")
    assert result.code == 2 and result.out == ""
