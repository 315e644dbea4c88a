"""`vwt env` (SPEC §17): a worktree's environment, the same in every hook, `vwt run` and
`vwt shell`; the repository's `[env]` table, applied once approved; shell lines that real
shells give back byte for byte."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import VWT_BIN, Repo, Sandbox, Vwt, assert_error

OWN = ["VWT_NAME", "VWT_BRANCH", "VWT_PATH", "VWT_BUCKET", "VWT_REPO_ROOT", "VWT_PORT",
       "VWT_PORTS", "PORT", "COMPOSE_PROJECT_NAME"]

# values no shell may touch: quotes, $, backticks, backslashes, newlines, non-ASCII
HOSTILE = {
    "SINGLE": "it's 'quoted' ''",
    "DOUBLE": 'say "hi" \\"there\\"',
    "DOLLAR": "$HOME ${{HOME}} $(echo no) $$ $1 $@",  # {{ }}: braces, not a placeholder
    "BACKTICK": "`echo no` ``",
    "NEWLINES": "line one\nline two\n\nend\n",
    "BACKSLASH": "a\\b\\\\c\\'d\\nend\\",
    "NON_ASCII": "résumé 日本語 🚀",
    "MIXED": "'\"$`\\\n\t!%*?[a] ~ ;|&<>(){{}}",
    "EMPTY": "",
    "WITH_NAME": "{name} at {path} on {branch}",
}
HOSTILE_NAME = "it's-$HOME-`id`-é"  # a valid worktree name and branch name


def env_table(items: dict[str, str]) -> str:
    return "[env]\n" + "".join(f"{key} = {json.dumps(value, ensure_ascii=False)}\n"
                                for key, value in items.items())


def with_env_table(repo: Repo, items: dict[str, str], extra: str = "") -> None:
    repo.commit("env table", {".vibe/worktree.toml": extra + env_table(items)})


def env_of(vwt: Vwt, *args: str, **kw: object) -> dict[str, str]:
    return vwt.ok("env", *args, "--json", **kw).json()["env"]  # type: ignore[arg-type]


# -- what it prints -------------------------------------------------------------------------
def test_env_names_the_worktree_its_ports_and_compose_project(repo: Repo, vwt: Vwt) -> None:
    created = vwt.new("Feature.X")
    doc = vwt.ok("env", "Feature.X", "--json").json()
    assert doc["name"] == "Feature.X" and doc["bucket"] == repo.bucket
    env = doc["env"]
    assert list(env) == OWN
    port = created["ports"][0]
    assert env == {
        "VWT_NAME": "Feature.X", "VWT_BRANCH": "Feature.X", "VWT_PATH": created["path"],
        "VWT_BUCKET": repo.bucket, "VWT_REPO_ROOT": str(repo.path), "VWT_PORT": str(port),
        "VWT_PORTS": str(port), "PORT": str(port),
        "COMPOSE_PROJECT_NAME": f"{repo.path.name.lower()}-feature-x",
    }
    plain = vwt.ok("env", "Feature.X").out
    assert plain == "".join(f"{k}={v}\n" for k, v in env.items())


def test_without_name_env_is_the_worktree_containing_the_current_directory(
        repo: Repo, vwt: Vwt) -> None:
    path = Path(vwt.new("inside")["path"])
    (path / "sub" / "dir").mkdir(parents=True)
    assert env_of(vwt, cwd=path / "sub" / "dir") == env_of(vwt, "inside")
    outside = vwt("env", "--json", cwd=repo.path)
    assert_error(outside, 1)
    assert "not inside a managed worktree" in outside.err
    assert_error(vwt("env", "inside", "--json", "--shell", "sh"), 2)
    missing = vwt("env", "nope")
    assert_error(missing, 1)
    assert "nope" in missing.err


def test_a_removed_worktree_has_no_environment_and_says_how_to_restore(
        repo: Repo, vwt: Vwt) -> None:
    path = Path(vwt.new("gone")["path"])
    (path / "work.txt").write_text("work\n")
    vwt.ok("rm", "gone", "-y")
    result = vwt("env", "gone")
    assert_error(result, 1)
    assert "vwt restore gone" in result.err


# -- the [env] table --------------------------------------------------------------------------
def test_the_env_table_takes_effect_once_approved_and_again_after_a_change(
        repo: Repo, vwt: Vwt) -> None:
    with_env_table(repo, {"DATABASE_URL": "postgres://localhost/{repo}_{slug}",
                          "API": "http://127.0.0.1:{port}/"})
    vwt.new("web")
    unapproved = vwt.ok("env", "web", "--json")
    assert list(unapproved.json()["env"]) == OWN
    assert len(unapproved.err_lines) == 1, "one warning, not one per key"
    assert "not approved" in unapproved.err and "vwt hooks approve env" in unapproved.err

    listed = {h["name"]: h for h in vwt.ok("hooks", "--json", cwd=repo.path).json()["hooks"]}
    assert listed["env"]["type"] == "env" and listed["env"]["approved"] is False
    assert 'API = "http://127.0.0.1:{port}/"' in listed["env"]["command"]
    vwt.ok("hooks", "approve", "env", cwd=repo.path)

    approved = vwt.ok("env", "web", "--json")
    assert approved.err == ""
    env = approved.json()["env"]
    assert env["DATABASE_URL"] == f"postgres://localhost/{repo.path.name}_web"
    assert env["API"] == f"http://127.0.0.1:{env['PORT']}/"

    path = Path(env["VWT_PATH"])
    (path / ".vibe" / "worktree.toml").write_text(env_table({"API": "changed:{port}"}))
    changed = vwt.ok("env", "web", "--json")
    assert "API" not in changed.json()["env"] and "not approved" in changed.err
    vwt.ok("hooks", "revoke", "--all", cwd=repo.path)
    assert "DATABASE_URL" not in env_of(vwt, "web")


def test_placeholders_past_the_lease_or_unknown_fail_naming_the_key(
        repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    with_env_table(repo, {"GOOD": "{port+1}", "BAD": "{port+2}"}, "[ports]\ncount = 2\n")
    vwt.new("web")
    vwt.ok("hooks", "approve", "env", cwd=repo.path)
    result = vwt("env", "web", "--json")
    assert_error(result, 1)
    assert result.out == ""
    assert "[env] BAD" in result.err and "{port+2}" in result.err
    run = vwt("run", "web", "--", "true")
    assert_error(run, 1)
    assert "[env] BAD" in run.err


# -- the same everywhere ------------------------------------------------------------------------
def dumped(path: Path) -> dict[str, str]:
    raw = path.read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode().split("\0") if entry)


def test_hooks_run_and_shell_see_what_env_prints(repo: Repo, sandbox: Sandbox,
                                                   vwt: Vwt) -> None:
    dumps = sandbox.tmp / "dumps"
    dumps.mkdir()
    hook = (f'[[hooks]]\nname = "dump"\ntype = "post_create"\n'
            f'command = "env -0 > {dumps}/post_create"\n'
            f'[[hooks]]\nname = "dump-rm"\ntype = "pre_remove"\n'
            f'command = "env -0 > {dumps}/pre_remove"\n')
    with_env_table(repo, {"DATABASE_URL": "postgres://localhost/{repo}_{slug}",
                          "WORKER_PORT": "{port+1}"}, hook + "[ports]\ncount = 2\n")
    vwt.ok("hooks", "approve", "--all", cwd=repo.path)
    vwt.new("web")
    expected = env_of(vwt, "web")
    assert expected["WORKER_PORT"] == str(int(expected["PORT"]) + 1)
    vwt.ok("run", "web", "--", "sh", "-c", f"env -0 > {dumps}/run")
    vwt.ok("shell", "web", input=f"env -0 > {dumps}/shell\n", env_extra={"SHELL": "/bin/sh"})
    vwt.ok("rm", "web", "-y")
    for where in ("post_create", "run", "shell", "pre_remove"):
        seen = dumped(dumps / where)
        assert {k: seen.get(k) for k in expected} == expected, where


# -- shell lines, evaluated by real shells ----------------------------------------------------
SHELL_RUNS = {
    "sh": (["sh", "-c", 'eval "$(vwt env --shell sh)"; exec env -0', "sh"], "sh"),
    "bash": (["bash", "-c", 'eval "$(vwt env --shell sh)"; exec env -0', "bash"], "sh"),
    "zsh": (["zsh", "-c", 'eval "$(vwt env --shell sh)"; exec env -0'], "sh"),
    "fish": (["fish", "-c", "vwt env --shell fish | source; exec env -0"], "fish"),
}


@pytest.mark.parametrize("shell", sorted(SHELL_RUNS))
def test_shell_lines_give_back_hostile_values_byte_for_byte(
        shell: str, repo: Repo, sandbox: Sandbox, vwt: Vwt) -> None:
    argv, _kind = SHELL_RUNS[shell]
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed")
    with_env_table(repo, HOSTILE)
    vwt.ok("hooks", "approve", "env", cwd=repo.path)
    path = Path(vwt.new(HOSTILE_NAME)["path"])
    expected = env_of(vwt, HOSTILE_NAME)
    assert expected["WITH_NAME"] == f"{HOSTILE_NAME} at {path} on {HOSTILE_NAME}"
    for key, value in HOSTILE.items():
        if key != "WITH_NAME":
            assert expected[key] == value.replace("{{", "{").replace("}}", "}"), key
    env = vwt.env()
    env["PATH"] = f"{Path(VWT_BIN).parent}:{env['PATH']}"  # this tree's vwt
    done = subprocess.run(argv, cwd=path, env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    seen = dict(entry.split(b"=", 1) for entry in done.stdout.split(b"\0") if entry)
    for key, value in expected.items():
        assert seen.get(key.encode()) == value.encode(), key


def test_the_api_gives_the_same_environment_and_ports(repo: Repo, sandbox: Sandbox,
                                                      vwt: Vwt) -> None:
    from vibe_worktree import Worktrees

    path = Path(vwt.new("web")["path"])
    expected = env_of(vwt, "web")
    inside = Worktrees(home=str(sandbox.vibe_home), cwd=str(path))
    assert inside.env().variables == expected, "without NAME: the worktree of cwd"
    found = Worktrees(home=str(sandbox.vibe_home), cwd=str(repo.path)).port("web")
    assert (found.port, found.leased) == (int(expected["PORT"]), True)


def test_a_settings_file_that_is_not_toml_fails_env_saying_which(repo: Repo, vwt: Vwt) -> None:
    path = Path(vwt.new("web")["path"])
    (path / ".vibe").mkdir()
    (path / ".vibe" / "worktree.toml").write_text("[env\nBROKEN")
    result = vwt("env", "web")
    assert_error(result, 1)
    assert "worktree.toml" in result.err and "not valid TOML" in result.err
    assert "--no-hooks" not in result.err
