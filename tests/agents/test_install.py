"""`vwt install claude-code` / `vwt uninstall claude-code`: merged into real settings files
that hold other hooks, permissions and unknown keys, which stay as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EVENTS = ["WorktreeCreate", "WorktreeRemove", "UserPromptSubmit", "PreToolUse",
          "Notification", "Stop", "SessionEnd"]
THEIRS = {
    "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "~/bin/guard.sh", "timeout": 5}]}],
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [
            {"type": "command", "command": "npx prettier --write"}]}],
    },
    "statusLine": {"type": "command", "command": "~/bin/status.sh"},
    "somethingNew": {"nested": [1, 2, {"x": None}]},
}


def user_settings(sandbox) -> Path:
    return sandbox.home / ".claude" / "settings.json"


def ours(settings: dict, event: str) -> list[dict]:
    return [h for g in settings.get("hooks", {}).get(event, []) for h in g["hooks"]
            if h["command"].split()[-2:] == ["hook", "claude-code"]]


def test_install_into_an_absent_file_registers_every_event(vwt, sandbox):
    result = vwt.ok("install", "claude-code", "--json").json()
    path = user_settings(sandbox)
    assert result == {"path": str(path), "added": EVENTS, "removed": [], "changed": True}
    settings = json.loads(path.read_text())
    for event in EVENTS:
        [entry] = ours(settings, event)
        assert entry["type"] == "command"


def test_install_keeps_everything_else_and_a_second_run_changes_nothing(vwt, sandbox):
    path = user_settings(sandbox)
    path.parent.mkdir()
    path.write_text(json.dumps(THEIRS, indent=4))
    vwt.ok("install", "claude-code")
    settings = json.loads(path.read_text())
    for key in ("permissions", "statusLine", "somethingNew"):
        assert settings[key] == THEIRS[key]
    assert settings["hooks"]["PostToolUse"] == THEIRS["hooks"]["PostToolUse"]
    assert settings["hooks"]["PreToolUse"][0] == THEIRS["hooks"]["PreToolUse"][0]
    assert len(ours(settings, "PreToolUse")) == 1
    before = path.read_bytes()
    again = vwt.ok("install", "claude-code", "--json").json()
    assert again["added"] == [] and again["changed"] is False
    assert path.read_bytes() == before


def test_uninstall_removes_exactly_what_install_added(vwt, sandbox):
    path = user_settings(sandbox)
    path.parent.mkdir()
    path.write_text(json.dumps(THEIRS))
    vwt.ok("install", "claude-code")
    result = vwt.ok("uninstall", "claude-code", "--json").json()
    assert result["removed"] == EVENTS and result["changed"] is True
    assert json.loads(path.read_text()) == THEIRS
    assert vwt.ok("uninstall", "claude-code", "--json").json()["changed"] is False


def test_uninstall_keeps_other_hooks_that_share_a_group_with_ours(vwt, sandbox):
    path = user_settings(sandbox)
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "notify-send done"},
        {"type": "command", "command": "/opt/venv/bin/vwt hook claude-code"}]}]}}))
    vwt.ok("uninstall", "claude-code")
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": "notify-send done"}]}]}}


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"hooks": []}',
                                  '{"hooks": {"Stop": {"oops": 1}}}'])
def test_an_unusable_settings_file_is_refused_and_left_unchanged(vwt, sandbox, text):
    path = user_settings(sandbox)
    path.parent.mkdir()
    path.write_text(text)
    result = vwt("install", "claude-code")
    assert result.code == 1 and len(result.err_lines) == 1, str(result)
    assert path.read_text() == text


def test_dry_run_prints_the_resulting_file_and_writes_nothing(vwt, sandbox):
    result = vwt.ok("install", "claude-code", "--dry-run")
    assert ours(json.loads(result.out), "WorktreeCreate")
    assert not user_settings(sandbox).exists()


def test_project_and_local_scopes_write_into_the_repositorys_claude_folder(vwt, repo):
    sub = repo.path / "src"
    sub.mkdir(exist_ok=True)
    project = vwt.ok("install", "claude-code", "--scope", "project", "--json", cwd=sub).json()
    assert project["path"] == str(repo.path / ".claude" / "settings.json")
    local = vwt.ok("install", "claude-code", "--scope", "local", "--json", cwd=sub).json()
    assert local["path"] == str(repo.path / ".claude" / "settings.local.json")
    assert ours(json.loads(Path(local["path"]).read_text()), "Stop")


def test_a_symlinked_settings_file_is_written_through_to_its_target(vwt, sandbox):
    dotfiles = sandbox.tmp / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text("{}")
    path = user_settings(sandbox)
    path.parent.mkdir()
    path.symlink_to(dotfiles)
    vwt.ok("install", "claude-code")
    assert path.is_symlink() and ours(json.loads(dotfiles.read_text()), "Stop")


def test_claude_config_dir_moves_the_user_settings(vwt, sandbox):
    config = sandbox.tmp / "claude-config"
    result = vwt.ok("install", "claude-code", "--json",
                    env_extra={"CLAUDE_CONFIG_DIR": str(config)}).json()
    assert result["path"] == str(config / "settings.json")
    assert ours(json.loads((config / "settings.json").read_text()), "WorktreeCreate")
    assert not user_settings(sandbox).exists()


def test_an_unknown_agent_is_bad_usage(vwt):
    for command in (["install", "codex"], ["hook", "codex"]):
        result = vwt(*command, input="{}")
        assert result.code == 2 and len(result.err_lines) >= 1, str(result)


def test_the_words_on_stderr_say_what_happened(vwt, sandbox):
    """Added, would add, already there; removed, would remove, nothing to remove."""
    listed = ", ".join(EVENTS)
    assert vwt.ok("install", "claude-code", "--dry-run").err_lines == [
        f"vwt: would add the hook for {listed}"]
    assert vwt.ok("install", "claude-code").err_lines == [f"vwt: added the hook for {listed}"]
    assert vwt.ok("install", "claude-code").err_lines == [
        "vwt: the hook is registered for every event already; nothing changed"]
    assert vwt.ok("install", "claude-code", "--dry-run").err_lines == [
        "vwt: the hook is registered for every event already; nothing would change"]
    assert vwt.ok("uninstall", "claude-code", "--dry-run").err_lines == [
        f"vwt: would remove the hook for {listed}"]
    assert vwt.ok("uninstall", "claude-code").err_lines == [
        f"vwt: removed the hook for {listed}"]
    for dry in ((), ("--dry-run",)):
        assert vwt.ok("uninstall", "claude-code", *dry).err_lines == [
            "vwt: no hook of vwt's is registered; nothing to remove"]
