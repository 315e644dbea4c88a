"""`vwt install vibe` / `vwt uninstall vibe`: vwt's `[[hooks]]` entries in Mistral Vibe's
hooks.toml, added and taken out as exactly those, every other byte of the file kept; and
what the real Vibe 3.0.3 makes of the result (its strict loader, its own hook executors)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from vibe_worktree.agents.vibe_settings import ENTRIES, change, hooks_path, is_ours
from vibe_worktree.core.errors import VwtError

from .vibe_support import SESSION, needs_vibe, vibe_loads, vibe_runs

THEIRS = """\
# Hooks of my own. vwt must keep every byte of this.
[[hooks]]
name = "lint"          # after each turn
type = "post_agent"
command = "eslint --quiet ."
timeout = 60.0

# Refuse rm -rf.
[[hooks]]
name = "deny-rm-rf"
type = "pre_tool"
match = "bash"
strict = true
command = '''uv run python "/path/to/guard"'''
description = \"\"\"
[[hooks]]
name = "not a table: text"
command = "vwt hook vibe"
\"\"\"
"""

OUR_NAMES = [e.name for e in ENTRIES]


def install(path: Path, dry_run: bool = False):
    return change(str(path), True, dry_run)


def uninstall(path: Path, dry_run: bool = False):
    return change(str(path), False, dry_run)


def test_install_into_a_missing_file_adds_one_entry_per_event(tmp_path):
    path = tmp_path / "vibe" / "hooks.toml"
    result = install(path)
    assert result.to_json() == {"path": str(path), "added": ["pre_tool", "post_tool",
                                                             "post_agent"],
                                "removed": [], "changed": True}
    assert path.read_text() == result.text
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_install_keeps_every_byte_that_was_there_and_a_second_run_changes_nothing(tmp_path):
    path = tmp_path / "hooks.toml"
    path.write_text(THEIRS)
    install(path)
    text = path.read_text()
    assert text.startswith(THEIRS)
    again = install(path)
    assert again.to_json()["changed"] is False and again.added == []
    assert path.read_text() == text


@pytest.mark.parametrize("original", [
    THEIRS,
    "",
    "# only a comment\n",
    THEIRS.rstrip("\n"),  # no newline at the end
    THEIRS.replace("\n", "\r\n"),
    "[other]\nkey = 1\n",
])
def test_uninstall_takes_out_exactly_what_install_added(tmp_path, original):
    path = tmp_path / "hooks.toml"
    path.write_bytes(original.encode())
    install(path)
    result = uninstall(path)
    assert result.removed == ["pre_tool", "post_tool", "post_agent"] and result.changed
    expected = original if original.endswith("\n") or not original else original + "\n"
    if "\r\n" in original:
        expected = original
    assert path.read_bytes() == expected.encode()


def test_uninstall_keeps_entries_added_after_ours_with_their_comments(tmp_path):
    path = tmp_path / "hooks.toml"
    path.write_text(THEIRS)
    install(path)
    later = "\n# added by hand, later\n[[hooks]]\nname = \"notify\"\ntype = \"post_agent\"\n" \
            "command = \"notify-send done\"\n"
    path.write_text(path.read_text() + later)
    uninstall(path)
    assert path.read_text() == THEIRS + later


def test_uninstall_with_nothing_of_ours_changes_nothing(tmp_path):
    path = tmp_path / "hooks.toml"
    path.write_text(THEIRS)
    result = uninstall(path)
    assert result.to_json() == {"path": str(path), "added": [], "removed": [], "changed": False}
    assert path.read_text() == THEIRS


def test_an_entry_of_ours_written_with_another_path_is_recognised(tmp_path):
    path = tmp_path / "hooks.toml"
    path.write_text('[[hooks]]\nname = "mine"\ntype = "pre_tool"\n'
                    'command = "/opt/venv/bin/vwt hook vibe"\n')
    assert install(path).added == ["post_tool", "post_agent"]
    assert uninstall(path).removed == ["pre_tool", "post_tool", "post_agent"]
    assert path.read_text() == ""


def test_dry_run_writes_nothing(tmp_path):
    path = tmp_path / "hooks.toml"
    path.write_text(THEIRS)
    result = install(path, dry_run=True)
    assert result.changed and result.text.startswith(THEIRS) and len(result.text) > len(THEIRS)
    assert path.read_text() == THEIRS
    assert install(tmp_path / "absent.toml", dry_run=True).added == ["pre_tool", "post_tool",
                                                                      "post_agent"]
    assert not (tmp_path / "absent.toml").exists()


@pytest.mark.parametrize(("text", "words"), [
    ("[[hooks]\nname = ", "not valid TOML"),
    ("hooks = 3\n", "not a list of [[hooks]] tables"),
    ("\xff", "not valid TOML"),
    ('hooks = [{name = "a", type = "pre_tool", command = "x"}]\n', "inline array"),
    ('[[hooks]]\nname = "vwt-activity-pre-tool"\ntype = "pre_tool"\ncommand = "mine"\n',
     "has a hook named 'vwt-activity-pre-tool'"),
])
def test_a_file_it_cannot_edit_safely_is_refused_and_left_alone(tmp_path, text, words):
    path = tmp_path / "hooks.toml"
    path.write_bytes(text.encode("latin-1"))
    before = path.read_bytes()
    with pytest.raises(VwtError) as caught:
        install(path)
    assert words in caught.value.message and caught.value.exit_code == 1
    assert path.read_bytes() == before


def test_an_entry_of_ours_edited_out_of_shape_is_refused_on_uninstall(tmp_path):
    path = tmp_path / "hooks.toml"
    install(path)
    name = 'name = "vwt-activity-post-tool"'
    text = path.read_text().replace(f"[[hooks]]\n{name}", f"[[hooks]]\nx = [\n  [1, 2]\n]\n{name}")
    path.write_text(text)
    with pytest.raises(VwtError, match="by hand"):
        uninstall(path)
    assert path.read_text() == text


def test_a_symlinked_file_is_written_through_keeping_its_mode(tmp_path):
    real = tmp_path / "dotfiles" / "hooks.toml"
    real.parent.mkdir()
    real.write_text(THEIRS)
    real.chmod(0o600)
    link = tmp_path / "hooks.toml"
    link.symlink_to(real)
    install(link)
    assert link.is_symlink() and real.read_text().startswith(THEIRS)
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


def test_the_files_are_the_homes_and_the_projects(tmp_path):
    assert hooks_path("user", "/h", "/p") == "/h/hooks.toml"
    assert hooks_path("project", "/h", "/p") == "/p/.vibe/hooks.toml"
    with pytest.raises(VwtError) as caught:
        hooks_path("local", "/h", "/p")
    assert caught.value.exit_code == 2


def test_is_ours_knows_the_command_by_any_path():
    assert is_ours({"command": "vwt hook vibe"})
    assert is_ours({"command": "'/a b/vibe-worktree' hook vibe"})
    assert not is_ours({"command": "vwt hook claude-code"})
    assert not is_ours({"command": "vwt hook vibe && rm -rf /"})
    assert not is_ours({"command": 3})


# -- the command line ---------------------------------------------------------------------------
def test_vwt_install_vibe_writes_the_homes_hooks_file_and_uninstall_takes_it_out(vwt, sandbox):
    path = sandbox.vibe_home / "hooks.toml"
    result = vwt.ok("install", "vibe", "--json").json()
    assert result == {"path": str(path), "added": ["pre_tool", "post_tool", "post_agent"],
                      "removed": [], "changed": True}
    text = path.read_text()
    assert text.count("[[hooks]]") == 3 and "hook vibe" in text
    again = vwt.ok("install", "vibe")
    assert again.out.strip() == str(path) and "nothing changed" in again.err
    removed = vwt.ok("uninstall", "vibe", "--json").json()
    assert removed["removed"] == ["pre_tool", "post_tool", "post_agent"] and removed["changed"]
    assert path.read_text() == ""


def test_the_home_is_the_one_vwt_uses(vwt, sandbox):
    other = sandbox.tmp / "other-home"
    out = vwt.ok("--home", str(other), "install", "vibe", "--json").json()
    assert out["path"] == str(other / "hooks.toml") and (other / "hooks.toml").is_file()
    assert not (sandbox.vibe_home / "hooks.toml").exists()


def test_project_scope_is_the_repositorys_vibe_folder(vwt, repo):
    sub = repo.path / "deeper"
    sub.mkdir()
    out = vwt.ok("install", "vibe", "--scope", "project", "--json", cwd=sub).json()
    assert out["path"] == str(repo.path / ".vibe" / "hooks.toml")
    assert (repo.path / ".vibe" / "hooks.toml").is_file()


def test_a_scope_vibe_does_not_have_is_a_usage_error(vwt, sandbox):
    result = vwt("install", "vibe", "--scope", "local")
    assert result.code == 2 and "unknown scope 'local'" in result.err
    assert not (sandbox.vibe_home / "hooks.toml").exists()


def test_dry_run_prints_the_file_and_writes_nothing(vwt, sandbox):
    result = vwt.ok("install", "vibe", "--dry-run")
    assert result.out.count("[[hooks]]") == 3 and "would add" in result.err
    assert not (sandbox.vibe_home / "hooks.toml").exists()


def test_a_file_it_cannot_edit_is_one_line_and_exit_1(vwt, sandbox):
    path = sandbox.vibe_home / "hooks.toml"
    path.parent.mkdir(parents=True)
    path.write_text("[[hooks]\n")
    result = vwt("install", "vibe")
    assert result.code == 1 and len(result.err_lines) == 1 and "not valid TOML" in result.err
    assert path.read_text() == "[[hooks]\n"


# -- the real Vibe ------------------------------------------------------------------------------
@needs_vibe
def test_vibes_strict_loader_accepts_what_install_writes_next_to_other_entries(tmp_path):
    path = tmp_path / "hooks.toml"
    path.write_text(THEIRS)
    before = vibe_loads(path)
    assert before["issues"] == [] and len(before["hooks"]) == 2
    install(path)
    loaded = vibe_loads(path)
    assert loaded["issues"] == []
    assert loaded["hooks"][:2] == before["hooks"]
    ours = {h["name"]: h for h in loaded["hooks"][2:]}
    assert sorted(ours) == sorted(OUR_NAMES)
    assert {h["type"] for h in ours.values()} == {"pre_tool", "post_tool", "post_agent"}
    assert all(is_ours(h) and h["timeout"] == 10.0 and h["strict"] is False
               for h in ours.values())
    assert ours["vwt-activity-post-agent"]["match"] == "main"
    uninstall(path)
    assert vibe_loads(path) == before


@needs_vibe
def test_vibes_strict_loader_accepts_a_file_of_ours_alone(tmp_path):
    path = tmp_path / "hooks.toml"
    install(path)
    loaded = vibe_loads(path)
    assert loaded["issues"] == [] and [h["name"] for h in loaded["hooks"]] == OUR_NAMES


def installed_by_vwt(vwt, text: str = "") -> Path:
    """The home's hooks.toml holding `text`, then `vwt install vibe` run on it."""
    path = vwt.sandbox.vibe_home / "hooks.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    assert vwt.ok("install", "vibe", "--json").json()["changed"] is True
    return path


def hooks_file_running(tmp_path: Path, command: str) -> Path:
    """A hooks.toml with vwt's entries only, whose command is `command` instead."""
    path = tmp_path / "running" / "hooks.toml"
    path.unlink(missing_ok=True)
    install(path)
    path.write_text(path.read_text().replace('command = "vwt hook vibe"',
                                             f"command = {json.dumps(command)}"))
    return path


@needs_vibe
@pytest.mark.slow
def test_vibe_runs_what_install_wrote_and_sees_a_clean_pass(vwt, repo, tmp_path):
    """Vibe, from the file to the process (its loader, its app server's mapping, its
    harness's handlers and their `match`): each of vwt's entries runs at its event and
    passes quietly (a failed or talkative hook leaves a notice), the tool call goes on,
    the turn is accepted, and the worktree shows the session's activity."""
    vwt.new("vibing", "--no-fetch", cwd=repo.path)
    checkout = repo.checkout("vibing")
    theirs = THEIRS.replace("eslint --quiet .", "true").replace(
        """'''uv run python "/path/to/guard"'''""", '"true"')
    hooks = installed_by_vwt(vwt, theirs)
    assert "hook vibe" in hooks.read_text()
    outcome = vibe_runs(hooks, checkout, ["pre_tool", "post_tool"], vwt.env())
    assert outcome == {"ran": [["pre_tool", "deny-rm-rf"], ["pre_tool", "vwt-activity-pre-tool"],
                               ["post_tool", "vwt-activity-post-tool"]],
                       "results": ["RustPreToolCallContinue", "RustPreToolCallContinue",
                                   "RustPostToolCallOutput"],
                       "notices": []}
    activity_file = next(vwt.sandbox.vibe_home.joinpath("worktree-activity").rglob("*.json"))
    marked = json.loads(activity_file.read_text())
    assert (marked["state"], marked["agent"], marked["session"]) == ("working", "vibe", SESSION)

    subagent = vibe_runs(hooks, checkout, ["post_agent"], vwt.env(), parent="parent-session")
    assert subagent["ran"] == [["post_agent", "lint"]]  # match = "main": ours is not run
    assert json.loads(activity_file.read_text())["state"] == "working"
    outcome = vibe_runs(hooks, checkout, ["post_agent"], vwt.env())
    assert outcome == {"ran": [["post_agent", "lint"], ["post_agent", "vwt-activity-post-agent"]],
                       "results": ["RustCompletionHookAccept"] * 2, "notices": []}
    assert json.loads(activity_file.read_text())["state"] == "idle"


@needs_vibe
@pytest.mark.slow
def test_vibe_sees_a_clean_pass_even_where_nothing_can_be_marked(vwt, repo, tmp_path):
    """Outside a managed worktree, and with a home vwt cannot write, Vibe still sees hooks
    that passed quietly; while the same check catches a hook that prints or fails."""
    vwt.new("vibing", "--no-fetch", cwd=repo.path)
    checkout = repo.checkout("vibing")
    ours = installed_by_vwt(vwt)
    every = ["pre_tool", "post_tool", "post_agent"]
    assert vibe_runs(ours, tmp_path, every, vwt.env())["notices"] == []
    (vwt.sandbox.vibe_home / "worktree-activity").write_text("")
    (vwt.sandbox.vibe_home / "logs").write_text("")
    broken = vibe_runs(ours, checkout, every, vwt.env())
    assert len(broken["ran"]) == 3 and broken["notices"] == []
    for command in ("echo hello", "exit 1"):
        bad = hooks_file_running(tmp_path, command)
        assert [n["status"] for n in vibe_runs(bad, checkout, every, vwt.env())["notices"]] \
            == ["warning"] * 3
