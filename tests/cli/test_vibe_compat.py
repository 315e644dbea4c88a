"""Worktrees made by Mistral Vibe share the root: plain git + a hand-written record (SPEC §2)."""

from __future__ import annotations

import datetime as dt
import json
import sys

from conftest import days_ago

EXTRA = {"vibe_session": {"id": "abc123", "model": "devstral"}, "vibe_flags": [1, 2, 3]}


def vibe_worktree(repo, name="vibe-made", **overrides):
    fields = dict(EXTRA)
    fields.setdefault("claimed_at", "2026-01-02T03:04:05.123456Z")
    fields.update(overrides)
    return repo.add_vibe_worktree(name, **fields)


def assert_extra_fields_survive(repo, name):
    record = repo.record(name)
    for key, value in EXTRA.items():
        assert record[key] == value, f"unknown field {key!r} was dropped"


def test_vibe_worktree_is_listed_like_our_own(repo, vwt):
    path = vibe_worktree(repo)
    entry = vwt.entry("vibe-made")
    assert entry is not None
    assert entry["state"] == "ready"
    assert entry["branch"] == "vibe/vibe-made"
    assert entry["path"] == str(path)
    assert entry["bucket"] == repo.bucket
    assert entry["claimed_at"] == "2026-01-02T03:04:05.123456Z"
    assert entry["clean"] is True


def test_vibe_worktree_status_and_path(repo, vwt):
    path = vibe_worktree(repo)
    repo.write("wip.txt", base=path)
    assert vwt.ok("path", "vibe-made").out.strip() == str(path)
    status = vwt.ok("status", "vibe-made", "--json").json()
    assert status["changes"] == 1
    assert status["untracked"] == 1
    assert status["branch"] == "vibe/vibe-made"


def test_vibe_worktree_is_reused_and_keeps_unknown_fields(repo, vwt):
    path = vibe_worktree(repo)
    again = vwt.new("vibe-made")
    assert again["created"] is False
    assert again["path"] == str(path)
    assert again["branch"] == "vibe/vibe-made"
    assert vwt("run", "vibe-made", "--", sys.executable, "-c", "pass").code == 0
    vwt.ok("status", "vibe-made", "--json")
    vwt.ok("snapshot", "vibe-made", "--json")
    assert_extra_fields_survive(repo, "vibe-made")


def test_vibe_worktree_is_removed_with_the_branch_it_created(repo, vwt):
    path = vibe_worktree(repo)
    out = vwt.ok("rm", "vibe-made", "--json").json()
    assert out["outcome"] == "removed"
    assert out["branch_deleted"] is True
    assert not path.exists()
    assert not repo.branch_exists("vibe/vibe-made")
    assert not repo.record_path("vibe-made").exists()


def test_vibe_worktree_on_a_user_branch_keeps_the_branch(repo, vwt):
    repo.git("branch", "users-branch")
    path = repo.checkout("on-user-branch")
    path.parent.mkdir(parents=True, exist_ok=True)
    repo.git("worktree", "add", "-q", str(path), "users-branch")
    repo.write_record("on-user-branch",
                      repo.vibe_record("on-user-branch", "users-branch", branch_created=False))
    out = vwt.ok("rm", "on-user-branch", "--json").json()
    assert out["outcome"] == "removed"
    assert out["branch_deleted"] is False
    assert repo.branch_exists("users-branch")


def test_vibe_worktree_is_pruned_in_claimed_at_order_with_ours(repo, vwt):
    vibe_worktree(repo, "vibe-old", claimed_at="2020-01-01T00:00:00Z")
    vwt.new("ours-mid")
    repo.edit_record("ours-mid", claimed_at=days_ago(10))
    vwt.new("ours-new")
    out = vwt.ok("prune", "--keep", "1", "--json").json()
    assert sorted(i["name"] for i in out["removed"]) == ["ours-mid", "vibe-old"]
    assert repo.recovery_path("vibe-old").exists()
    recovery = repo.recovery("vibe-old")
    assert recovery["branch"] == "vibe/vibe-old"
    assert recovery["snapshot_ref"] == "refs/vibe/reaped/vibe-old"
    assert recovery["removed_at"].endswith("Z")


def test_vibe_worktree_dirty_work_survives_prune_and_restore(repo, vwt):
    path = vibe_worktree(repo, "vibe-dirty", claimed_at="2020-01-01T00:00:00.000001Z")
    repo.write("notes.md", "agent notes\n", base=path)
    out = vwt.ok("prune", "--keep", "0", "--json").json()
    assert [i["name"] for i in out["removed"]] == ["vibe-dirty"]
    restored = vwt.ok("restore", "vibe-dirty", "--json").json()
    assert restored["branch"] == "vibe/vibe-dirty"
    assert (path / "notes.md").read_text() == "agent notes\n"


def test_vibe_reservation_without_base_commit_is_reserved(repo, vwt):
    repo.write_record("vibe-pending",
                      repo.vibe_record("vibe-pending", "vibe/vibe-pending", base_commit=None))
    entry = vwt.entry("vibe-pending")
    assert entry["state"] == "reserved"
    assert entry["base_commit"] is None


def test_our_records_are_readable_by_vibe_rules(repo, vwt):
    """What Vibe needs from our record: every field present, timestamp with a zone."""
    vwt.new("ours")
    raw = repo.record_path("ours").read_text(encoding="utf-8")
    record = json.loads(raw)
    parsed = dt.datetime.fromisoformat(record["claimed_at"].replace("Z", "+00:00"))
    assert parsed.tzinfo is not None
    assert record["claimed_at"].endswith("Z")
    assert abs((dt.datetime.now(dt.UTC) - parsed).total_seconds()) < 300


def test_vibe_creation_interrupted_after_checkout_is_adopted_keeping_unknown_fields(repo, vwt):
    """Vibe died between `git worktree add` and writing base_commit: the record is rewritten."""
    path = vibe_worktree(repo, "half-made", base_commit=None, claimed_at=days_ago(1))
    pruned = vwt("prune", "--json")
    assert pruned.code == 0, str(pruned)
    assert pruned.json()["reservations_discarded"] == [], "a checkout with files is not empty"
    assert path.exists()
    assert_extra_fields_survive(repo, "half-made")
    result = vwt.new("half-made")
    assert result["path"] == str(path)
    record = repo.record("half-made")
    assert record["base_commit"] == repo.head(cwd=path)
    assert_extra_fields_survive(repo, "half-made")
    assert vwt.entry("half-made")["state"] == "ready"


def vibe_walk(claims):
    """How Vibe finds the claims of a home (`WorktreeClaim.all`): each folder of `.claims`
    is a bucket, each entry of a bucket a claim."""
    return sorted((bucket.name, entry.name) for bucket in claims.iterdir() if bucket.is_dir()
                  for entry in bucket.iterdir())


def test_vibe_never_takes_the_port_lease_files_for_a_bucket(repo, vwt, sandbox):
    vwt.new("ours")
    vibe_worktree(repo, "theirs")
    vwt.ok("prune")  # leases Vibe's worktree too
    claims = sandbox.vibe_home / "worktrees" / ".claims"
    assert (claims / ".ports.json").is_file() and (claims / ".ports").is_file()
    assert json.loads((claims / ".ports.json").read_text()).keys() == {
        f"{repo.bucket}/ours", f"{repo.bucket}/theirs"}
    assert vibe_walk(claims) == [(repo.bucket, "ours"), (repo.bucket, "theirs")]
    assert_extra_fields_survive(repo, "theirs")
    vwt.ok("rm", "theirs")
    assert vibe_walk(claims) == [(repo.bucket, "ours")]
