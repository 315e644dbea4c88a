"""`vwt new --pr N`: a worktree on a pull (or merge) request of the remote."""

from __future__ import annotations

from pathlib import Path

from conftest import OriginRepo, Vwt, assert_error


def publish(origin_repo: OriginRepo, ref: str, files: dict[str, str]) -> str:
    """Push a commit that only the remote has, as a forge publishes a pull request."""
    pusher = origin_repo.upstream.pusher  # type: ignore[union-attr]
    pusher.git("checkout", "-q", "-b", f"topic-{len(ref)}")
    sha = pusher.commit("pull request work", files)
    pusher.git("push", "-q", "origin", f"HEAD:{ref}")
    pusher.git("checkout", "-q", "main")
    return sha


def test_pr_checks_out_the_pull_request_head_in_branch_pr_n(
        origin_repo: OriginRepo, vwt: Vwt) -> None:
    sha = publish(origin_repo, "refs/pull/7/head", {"feature.txt": "from the PR\n"})
    doc = vwt.new("--pr", "7")
    assert doc["name"] == "pr-7" and doc["branch"] == "pr-7"
    assert doc["base_commit"] == sha and doc["branch_created"] is True
    assert (Path(doc["path"]) / "feature.txt").read_text() == "from the PR\n"
    again = vwt.new("--pr", "7")
    assert again["created"] is False and again["path"] == doc["path"]


def test_a_gitlab_merge_request_is_found_too_and_name_can_be_given(
        origin_repo: OriginRepo, vwt: Vwt) -> None:
    sha = publish(origin_repo, "refs/merge-requests/3/head", {"mr.txt": "mr\n"})
    doc = vwt.new("--pr", "3", "review")
    assert doc["name"] == "review" and doc["branch"] == "pr-3" and doc["base_commit"] == sha


def test_a_missing_pull_request_is_an_error_and_creates_nothing(
        origin_repo: OriginRepo, vwt: Vwt) -> None:
    result = vwt("new", "--pr", "99")
    assert_error(result, 1, max_lines=1)
    assert "no pull request 99 on origin" in result.err
    assert vwt.list() == []
    assert not origin_repo.branch_exists("pr-99")
