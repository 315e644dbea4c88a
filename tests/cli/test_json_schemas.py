"""Every `--json` document of a real run matches the JSON Schema shipped for it (SPEC §12).

The root conftest checks the schema of every `--json` run of every test; this tour makes
sure each command, each list state and each removal outcome is seen at least once.
"""

from __future__ import annotations

import shutil
from typing import Any

from conftest import assert_matches_schema, command_of, minutes_ago
from vibe_worktree import schema


def schema_enum(name: str, *path: str) -> set[str]:
    node: Any = schema.load(name)
    for key in path:
        node = node[key]
    return set(node["enum"])


class Tour:
    """Runs vwt with --json, validates each document and remembers what it saw."""

    def __init__(self, vwt: Any) -> None:
        self.vwt = vwt
        self.commands: set[str] = set()

    def __call__(self, *args: str, code: int = 0) -> Any:
        result = self.vwt(*args, "--json")
        assert result.code == code, str(result)
        document = result.json()
        name = command_of(args)
        assert name is not None
        assert_matches_schema(name, document)
        self.commands.add(name)
        return document


def test_every_json_command_of_a_session_matches_its_schema(repo, vwt, holder, tmp_path):
    tour = Tour(vwt)
    assert tour("new", "feature")["created"] is True
    assert tour("new", "feature")["created"] is False
    tour("new", "-p", "Fix the login bug")
    tour("status", "feature")
    tour("port", "feature")
    tour("snapshot", "feature")
    assert tour("skill", "install", "--target", str(tmp_path / "skill"))["changed"] is True

    repo.write("wip.txt", base=repo.checkout("feature"))
    assert tour("rm", "feature", code=3)["outcome"] == "kept_dirty"
    held = holder(repo.bucket, "feature")
    assert tour("rm", "feature", "-y", code=4)["outcome"] == "kept_in_use"
    held.kill()
    removed = tour("rm", "feature", "-y")
    assert removed["outcome"] == "removed" and removed["snapshot_ref"]
    assert tour("restore", "feature")["created"] is True
    assert tour("rm", "nobody", code=1)["outcome"] == "not_found"

    outcomes = {"kept_dirty", "kept_in_use", "removed", "not_found"}
    tour("new", "saved")
    repo.write("wip.txt", base=repo.checkout("saved"))
    tour("rm", "saved", "-y")
    assert tour("rm", "saved")["outcome"] == "forgotten"
    outcomes.add("forgotten")
    tour("new", "guarded")
    hooks_file = vwt.sandbox.vibe_home / "worktree.toml"
    hooks_file.write_text('[[hooks]]\nname = "no"\ntype = "pre_remove"\ncommand = "exit 1"\n')
    assert tour("rm", "guarded", code=1)["outcome"] == "hook_failed"
    assert tour("hooks")["hooks"][0]["name"] == "no"
    hooks_file.unlink()
    outcomes.add("hook_failed")
    assert outcomes == schema_enum("rm", "properties", "outcome")

    tour("new", "saved")
    repo.write("wip.txt", base=repo.checkout("saved"))
    tour("rm", "saved", "-y")
    repo.write_record("pending", repo.vibe_record("pending", "vibe/pending", base_commit=None))
    tour("new", "gone")
    shutil.rmtree(repo.checkout("gone"))
    tour("new", "corrupt")
    repo.record_path("corrupt").write_text("{ not json")
    tour("new", "lost")
    repo.edit_record("lost", repo_root=str(tmp_path / "moved-away"))
    listed = tour("list")
    assert {row["state"] for row in listed} == schema_enum("list", "items", "properties", "state")
    assert all(row["changes"] is None for row in tour("list", "--no-status"))
    assert tour("list", "--all") == listed


def test_prune_documents_match_their_schema(repo, vwt, holder):
    tour = Tour(vwt)
    for name in ("old", "busy", "new"):
        tour("new", name)
    held = holder(repo.bucket, "busy")
    stale = holder(repo.bucket, "new", holder_id="gone-session")
    stale.kill()
    repo.write_record("abandoned", repo.vibe_record(
        "abandoned", "vibe/abandoned", base_commit=None, claimed_at=minutes_ago(30)))
    plan = tour("prune", "--keep", "0", "--dry-run")
    assert plan["removed"] and plan["kept"]
    done = tour("prune", "--keep", "0")
    assert {item["name"] for item in done["removed"]} == {"old", "new"}
    assert done["kept"] == [{"name": "busy", "bucket": repo.bucket, "reason": "held"}]
    assert done["reservations_discarded"] == [{"name": "abandoned", "bucket": repo.bucket}]
    assert done["stale_holders_removed"] == 1
    held.kill()


def test_a_document_with_a_field_the_schema_does_not_know_fails(repo, vwt):
    document = vwt.new("feature")
    assert_matches_schema("new", document)
    try:
        assert_matches_schema("new", {**document, "surprise": 1})
    except AssertionError as exc:
        assert "surprise" in str(exc) and "schemas/new.json" in str(exc)
    else:
        raise AssertionError("an unknown field passed the schema")
