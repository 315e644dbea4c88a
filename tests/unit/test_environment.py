"""A worktree's environment (SPEC §17): its variables, the `[env]` table, and shell lines that
real shells give back byte for byte."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from vibe_worktree.lifecycle.environment import (
    EnvError,
    EnvTable,
    Place,
    as_lines,
    compose_project_name,
    env_table,
    environment,
    for_shell,
    own_variables,
    slug,
)

PLACE = Place("Fix Login.2", "vibe/fix-login", "/home/u/.vibe/worktrees/app-0123456789ab/x",
              "app-0123456789ab", "/src/My App", (24000, 24001, 24002))
WHERE = ".vibe/worktree.toml"

HOSTILE = {
    "SINGLE": "it's 'quoted' ''",
    "DOUBLE": 'say "hi" \\"there\\"',
    "DOLLAR": "$HOME ${HOME} $(echo no) $$ $1 $@ $*",
    "BACKTICK": "`echo no` ``",
    "NEWLINES": "line one\nline two\n\nend\n",
    "ONLY_NEWLINE": "\n",
    "BACKSLASH": "a\\b\\\\c\\'d\\nend\\",
    "NON_ASCII": "résumé 日本語 🚀 Ωmega",
    "MIXED": "'\"$`\\\n\t\r!%*?[a] ~ -x -- ;|&<>(){}",
    "EMPTY": "",
    "LEADING_DASH": "-n -e --",
    "GLOB": "*",
}


# -- the variables -----------------------------------------------------------------------------
def test_every_worktree_has_its_own_variables_in_order() -> None:
    assert list(own_variables(PLACE).items()) == [
        ("VWT_NAME", "Fix Login.2"), ("VWT_BRANCH", "vibe/fix-login"), ("VWT_PATH", PLACE.path),
        ("VWT_BUCKET", "app-0123456789ab"), ("VWT_REPO_ROOT", "/src/My App"),
        ("VWT_PORT", "24000"), ("VWT_PORTS", "24000 24001 24002"), ("PORT", "24000"),
        ("COMPOSE_PROJECT_NAME", "my-app-fix-login-2"),
    ]


def test_compose_project_name_and_slug_keep_only_what_their_users_accept() -> None:
    assert compose_project_name("/src/Web_App/", "Feature.X y") == "web_app-feature-x-y"
    assert compose_project_name("/src/app", "résumé") == "app-r-sum-"
    assert slug("Feature.X-y_2") == "feature_x_y_2"


# -- the [env] table ---------------------------------------------------------------------------
def table(**items: object) -> EnvTable:
    found = env_table({"env": items}, WHERE)
    assert found is not None
    return found


def applied(found: EnvTable) -> dict[str, str]:
    return environment(PLACE, found, lambda _t: True, _no_warning)


def _no_warning(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


def test_placeholders_name_the_worktree() -> None:
    env = applied(table(
        DATABASE_URL="postgres://localhost/{repo}_{slug}",
        WHERE="{path} on {branch} ({name})",
        API="http://127.0.0.1:{port}/ and :{port+1} and :{port+2}",
        BRACES="{{literal}} }} {{",
        PORT="{port+2}",
    ))
    assert env["DATABASE_URL"] == "postgres://localhost/My App_fix_login_2"
    assert env["WHERE"] == f"{PLACE.path} on vibe/fix-login (Fix Login.2)"
    assert env["API"] == "http://127.0.0.1:24000/ and :24001 and :24002"
    assert env["BRACES"] == "{literal} } {"
    assert env["PORT"] == "24002", "a table may move PORT"
    assert env["VWT_PORT"] == "24000"
    assert list(env)[-4:] == ["DATABASE_URL", "WHERE", "API", "BRACES"]


@pytest.mark.parametrize("value,words", [
    ("{nope}", "unknown placeholder {nope}"),
    ("{port+3}", "{port+3} is past the worktree's 3 port(s)"),
    ("{port + 1}", "unknown placeholder {port + 1}"),
    ("{port-1}", "unknown placeholder {port-1}"),
    ("a { b", "a '{' that opens no placeholder"),
    ("{}", "unknown placeholder {}"),
])
def test_a_placeholder_that_is_not_one_is_an_error_naming_the_key(value: str, words: str) -> None:
    with pytest.raises(EnvError) as caught:
        applied(table(GOOD="{port}", BAD_KEY=value))
    assert caught.value.message.startswith(f"{WHERE}: [env] BAD_KEY")
    assert words in caught.value.message
    assert caught.value.exit_code == 1


@pytest.mark.parametrize("items,words", [
    ({"1ST": "x"}, "'1ST' is not a variable name"),
    ({"A-B": "x"}, "'A-B' is not a variable name"),
    ({"VWT_NAME": "x"}, "VWT_NAME: names starting with VWT_ are vwt's own"),
    ({"DEBUG": 1}, "DEBUG must be a string"),
    ({"NESTED": {"a": "b"}}, "NESTED must be a string"),
    ({"NUL": "a\0b"}, "NUL holds a NUL character"),
])
def test_a_table_that_cannot_be_an_environment_is_an_error_naming_the_key(
        items: dict[str, object], words: str) -> None:
    with pytest.raises(EnvError, match=r"\[env\]") as caught:
        env_table({"env": items}, WHERE)
    assert words in caught.value.message
    with pytest.raises(EnvError, match="must be a table"):
        env_table({"env": "X=1"}, WHERE)
    assert env_table({"hooks": []}, WHERE) is None


def test_an_unapproved_table_is_left_out_with_one_warning() -> None:
    warnings: list[str] = []
    found = table(A="1", B="{nope}")  # not expanded either: it does not take effect
    env = environment(PLACE, found, lambda _t: False, warnings.append)
    assert env == own_variables(PLACE)
    assert len(warnings) == 1
    assert "[env] table of .vibe/worktree.toml is not approved" in warnings[0]
    assert "2 key(s)" in warnings[0] and "vwt hooks approve env" in warnings[0]


def test_approval_is_kept_by_the_exact_keys_and_values() -> None:
    first = table(A="1", B="2")
    assert first.key == table(A="1", B="2").key
    assert first.key != table(A="1", B="3").key
    assert first.key != table(B="2", A="1").key, "the order is part of the text"
    assert first.key != table(A="1", B="2", C="").key
    assert table(A='x"\ny').text == 'A = "x\\"\\ny"'


# -- printing it -------------------------------------------------------------------------------
def test_plain_output_is_key_equals_value_lines() -> None:
    assert as_lines({"A": "1", "B": "x y"}) == "A=1\nB=x y\n"


SHELLS = {
    "sh": (["sh", "-c"], 'eval "$(cat "$1")"; exec env -0', "sh"),
    "bash": (["bash", "-c"], 'eval "$(cat "$1")"; exec env -0', "sh"),
    "zsh": (["zsh", "-c"], 'eval "$(cat "$1")"; exec env -0', "sh"),
    "fish": (["fish", "-c"], 'source $argv[1]; exec env -0', "fish"),
}


def environment_after(shell: str, script: Path) -> dict[bytes, bytes]:
    """What `env -0` sees after `shell` evaluated `script` the way our docs say to."""
    argv, command, _kind = SHELLS[shell]
    if shutil.which(argv[0]) is None:
        pytest.skip(f"{argv[0]} is not installed")
    extra = [] if shell == "fish" else [shell]  # $0 for sh -c
    done = subprocess.run([*argv, command, *extra, str(script)], capture_output=True,
                          env={"PATH": os.environ["PATH"], "HOME": str(script.parent),
                               "LANG": "C.UTF-8"}, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    pairs = [entry.split(b"=", 1) for entry in done.stdout.split(b"\0") if entry]
    return {key: value for key, value in pairs}


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_shell_lines_give_back_every_value_byte_for_byte(shell: str, tmp_path: Path) -> None:
    hostile_place = PLACE._replace(name="it's $x `y`\n", path="/tmp/a b/'c'\\d/é",
                                   branch="vibe/\"q\"")
    variables = {**own_variables(hostile_place), **HOSTILE}
    script = tmp_path / "env.sh"
    script.write_bytes(for_shell(variables, SHELLS[shell][2]).encode("utf-8", "surrogateescape"))
    seen = environment_after(shell, script)
    for key, value in variables.items():
        assert seen.get(key.encode()) == value.encode("utf-8", "surrogateescape"), key


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_shell_lines_keep_bytes_that_are_not_utf8(shell: str, tmp_path: Path) -> None:
    """A path is bytes on POSIX: one that is not UTF-8 still comes back as it was."""
    odd = os.fsdecode(b"/tmp/\xff\xfe-latin1-\xe9")
    script = tmp_path / "env.sh"
    script.write_bytes(for_shell({"VWT_PATH": odd}, SHELLS[shell][2])
                       .encode("utf-8", "surrogateescape"))
    assert environment_after(shell, script)[b"VWT_PATH"] == os.fsencode(odd)


def test_the_table_is_approved_by_the_key_vwt_hooks_keeps_its_entry_by(tmp_path: Path) -> None:
    from vibe_worktree.lifecycle.hooks import env_entry

    (tmp_path / ".vibe").mkdir()
    (tmp_path / ".vibe" / "worktree.toml").write_text('[env]\nA = "x{port}"\nB = "y"\n')
    [entry] = env_entry(str(tmp_path))
    found = env_table({"env": {"A": "x{port}", "B": "y"}}, "anywhere")
    assert found is not None and entry.key == found.key
    assert (entry.name, entry.type, entry.command) == ("env", "env", found.text)
