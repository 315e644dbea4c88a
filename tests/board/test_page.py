"""The board in a real Chromium: every view, every action and its confirmation, live updates.

The `page` fixture fails any test whose page asked a host other than 127.0.0.1, ran a
script dialog or threw a script error.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from conftest import make_racily_clean

LIVE_SECONDS = 2.0  # §10: a change on disk shows within 2 s, without a reload
AGE = re.compile(r"^\d+[smhd]$")


def has_class(name: str) -> re.Pattern[str]:
    return re.compile(rf"(^|\s){name}(\s|$)")


def row(page, name: str):
    return page.page.locator(f'#worktrees tbody tr[data-name="{name}"]')


def open_dialog(page, name: str, action: str):
    row(page, name).locator(f'button[data-action="{action}"]').click()
    dialog = page.page.locator("dialog#confirm")
    expect(dialog).to_be_visible()
    return dialog


def result_line(page):
    return page.page.locator("#result .message")


@pytest.fixture
def two_repos(make_repo, vwt, holder):
    """Worktrees in two repositories: one dirty, one held, one clean."""
    first, second = make_repo("alpha"), make_repo("beta")
    clean = vwt.new("clean-one", cwd=first.path)
    dirty = vwt.new("dirty-one", cwd=first.path)
    Path(dirty["path"], "notes.txt").write_text("unsaved\n")
    held = vwt.new("held-one", cwd=second.path)
    holder(held["bucket"], "held-one")
    return {"alpha": first, "beta": second, "clean": clean, "dirty": dirty, "held": held}


# -- the list -----------------------------------------------------------------------------------
def test_list_shows_every_worktree_of_every_repository(page, two_repos):
    expect(page.page.locator("#worktrees tbody tr")).to_have_count(3)
    dirty = row(page, "dirty-one")
    expect(dirty.locator("td.repo")).to_have_text("alpha")
    expect(dirty.locator("td.branch")).to_have_text("dirty-one")
    expect(dirty.locator("td.state")).to_contain_text("ready")
    expect(dirty.locator("td.changes")).to_have_text("1")
    expect(dirty.locator("td.ahead")).to_have_text("0")
    expect(dirty.locator("td.age")).to_have_text(AGE)
    expect(row(page, "held-one").locator("td.repo")).to_have_text("beta")
    expect(row(page, "held-one").locator("td.holders")).to_have_text("held by 1 live session")
    expect(page.page.locator("#summary")).to_contain_text("3 worktree(s) in 2 repositories")


@pytest.mark.slow
def test_held_and_dirty_work_stand_out(page, two_repos):
    expect(row(page, "held-one")).to_have_class(has_class("held"))
    expect(row(page, "dirty-one")).to_have_class(has_class("dirty"))
    expect(row(page, "clean-one")).not_to_have_class(has_class("held"))
    expect(row(page, "clean-one")).not_to_have_class(has_class("dirty"))
    held_bg = row(page, "held-one").evaluate("r => getComputedStyle(r).backgroundColor")
    dirty_bg = row(page, "dirty-one").evaluate("r => getComputedStyle(r).backgroundColor")
    clean_bg = row(page, "clean-one").evaluate("r => getComputedStyle(r).backgroundColor")
    assert len({held_bg, dirty_bg, clean_bg}) == 3


@pytest.mark.slow
def test_a_holder_shows_its_tool_and_pid(page, repo, vwt):
    vwt.new("running")
    proc = vwt.spawn("run", "running", "--", "sleep", "60")
    try:
        holders = row(page, "running").locator("td.holders")
        expect(holders).to_contain_text(f"vwt pid {proc.pid}", timeout=10_000)
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.slow
def test_a_held_worktree_says_so_and_by_how_many_live_sessions(page, repo, vwt, holder):
    made = vwt.new("shared")
    holder(made["bucket"], "shared", "vibe-session-1")
    holder(made["bucket"], "shared", "vibe-session-2")
    cell = row(page, "shared").locator("td.holders")
    expect(cell).to_have_text("held by 2 live sessions", timeout=LIVE_SECONDS * 1000)
    row(page, "shared").locator("td.name a").click()
    expect(page.page.locator("#detail-facts")).to_contain_text(
        "held by 2 live sessions: vibe-session-1, vibe-session-2")


@pytest.mark.slow
def test_the_most_recently_active_comes_first(page, repo, vwt):
    vwt.new("older")
    time.sleep(1.1)
    vwt.new("newer")
    names = page.page.locator("#worktrees tbody tr")
    expect(names).to_have_count(2)
    expect(names.first).to_have_attribute("data-name", "newer")
    repo.commit("work", {"x.txt": "x\n"}, cwd=Path(vwt.entry("older")["path"]))
    expect(names.first).to_have_attribute("data-name", "older", timeout=5_000)


@pytest.mark.slow
def test_a_new_worktree_appears_within_two_seconds_without_a_reload(page, repo, vwt):
    expect(page.page.locator("#empty")).to_be_visible()
    page.page.evaluate("window.__same_page = true")
    vwt.new("arrives")
    began = time.monotonic()
    expect(row(page, "arrives")).to_be_visible(timeout=LIVE_SECONDS * 1000)
    assert time.monotonic() - began <= LIVE_SECONDS
    assert page.page.evaluate("window.__same_page") is True  # no reload happened


@pytest.mark.slow
def test_an_edit_on_disk_shows_within_two_seconds(page, repo, vwt):
    created = vwt.new("editing")
    changes = row(page, "editing").locator("td.changes")
    expect(changes).to_have_text("0")
    Path(created["path"], "README.md").write_text("changed in place\n")
    expect(changes).to_have_text("1", timeout=LIVE_SECONDS * 1000)
    Path(created["path"], "new.txt").write_text("new\n")
    expect(changes).to_have_text("2", timeout=LIVE_SECONDS * 1000)


# -- the detail view ----------------------------------------------------------------------------
@pytest.mark.slow
def test_detail_shows_changed_files_commits_and_diff(page, repo, vwt):
    created = vwt.new("detailed")
    where = Path(created["path"])
    repo.commit("add the parser", {"parser.py": "def parse():\n    return 1\n"}, cwd=where)
    (where / "README.md").write_text("# demo, edited\n")
    (where / "fresh.txt").write_text("brand new\n")
    row(page, "detailed").locator("td.name a").click()
    expect(page.page.locator("#detail-title")).to_have_text("detailed")
    files = page.page.locator("#files tbody")
    expect(files).to_contain_text("README.md")
    expect(files).to_contain_text("fresh.txt")
    expect(page.page.locator("#commits tbody")).to_contain_text("add the parser")
    diff = page.page.locator("#diff")
    expect(diff).to_contain_text("+    return 1")  # committed since base
    expect(diff).to_contain_text("+# demo, edited")  # uncommitted
    expect(diff).to_contain_text("+brand new")  # untracked
    expect(diff.locator("span.add").first).to_be_visible()
    assert repo.git("status", "--porcelain", cwd=where).count("??") == 1  # index untouched


def test_detail_diff_shows_a_same_size_rewrite_beside_untracked_files(board, repo, vwt):
    """The untracked files are diffed through a copy of the index, which must keep its mtime:
    else git trusts the stale stat data of a racily clean file and leaves its change out."""
    created = vwt.new("racy")
    where = Path(created["path"])
    make_racily_clean(repo, where, "README.md", "# omed\n")  # "# demo\n", same size
    (where / "fresh.txt").write_text("brand new\n")
    detail = board.request("GET", f"/api/worktree/{created['bucket']}/racy").json()
    assert "+# omed" in detail["diff"] and "-# demo" in detail["diff"], detail["diff"]
    assert "+brand new" in detail["diff"]


@pytest.mark.slow
def test_detail_updates_live_too(page, repo, vwt):
    created = vwt.new("watched")
    page.goto(f"/worktree/{created['bucket']}/watched")
    expect(page.page.locator("#files-none")).to_be_visible()
    Path(created["path"], "late.txt").write_text("late\n")
    expect(page.page.locator("#files tbody")).to_contain_text("late.txt",
                                                              timeout=LIVE_SECONDS * 1000)


HOSTILE = '<img src=x onerror="alert(1)">'


def test_hostile_names_and_diffs_are_shown_as_text(page, repo, vwt):
    created = vwt.new("hostile")
    where = Path(created["path"])
    repo.commit("<b>bold</b> <script>alert('subject')</script>",
                {"a.txt": "</pre><script>alert(2)</script>\n"}, cwd=where)
    (where / f"{HOSTILE}.txt").write_text("<script>alert('diff')</script>\n")
    page.goto(f"/worktree/{created['bucket']}/hostile")
    expect(page.page.locator("#files tbody")).to_contain_text(f"{HOSTILE}.txt")
    expect(page.page.locator("#commits tbody")).to_contain_text("<script>alert('subject')")
    expect(page.page.locator("#diff")).to_contain_text("<script>alert('diff')</script>")
    assert page.page.locator("main img, main script, main b").count() == 0
    # `page` fails the test if any alert() ran


@pytest.mark.slow
def test_an_unknown_worktree_page_says_so_in_one_line(page):
    page.goto("/worktree/nobucket-000000000000/nothing")
    expect(result_line(page)).to_contain_text("no managed worktree named 'nothing'")


@pytest.mark.slow
def test_snapshot_only_entries_are_listed_with_restore(page, repo, vwt):
    created = vwt.new("saved")
    Path(created["path"], "keep.txt").write_text("keep me\n")
    vwt.ok("rm", "saved", "-y")
    saved = row(page, "saved")
    expect(saved.locator("td.state")).to_contain_text("snapshot")
    expect(saved.locator('button[data-action="restore"]')).to_be_visible()
    expect(saved.locator('button[data-action="remove"]')).to_have_count(0)


# -- actions ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_snapshot_saves_the_state_and_says_where(page, repo, vwt):
    created = vwt.new("snap")
    Path(created["path"], "draft.txt").write_text("draft\n")
    row(page, "snap").locator('button[data-action="snapshot"]').click()
    expect(result_line(page)).to_contain_text("saved snap to refs/vibe/reaped/snap")
    assert repo.git_ok("rev-parse", "--verify", "refs/vibe/reaped/snap")
    assert Path(created["path"], "draft.txt").exists()


def test_remove_asks_first_and_cancel_keeps_it(page, repo, vwt):
    created = vwt.new("tidy")
    dialog = open_dialog(page, "tidy", "remove")
    expect(dialog).to_contain_text("Nothing would be lost")
    assert Path(created["path"]).is_dir()  # one click removed nothing
    dialog.locator("#confirm-cancel").click()
    expect(dialog).to_be_hidden()
    assert Path(created["path"]).is_dir()
    dialog = open_dialog(page, "tidy", "remove")
    dialog.locator("#confirm-ok").click()
    expect(result_line(page)).to_contain_text("removed tidy")
    expect(row(page, "tidy")).to_have_count(0)
    assert not Path(created["path"]).exists()


def test_removing_dirty_work_needs_an_explicit_tick_and_keeps_a_snapshot(page, repo, vwt):
    created = vwt.new("risky")
    Path(created["path"], "unsaved.txt").write_text("precious\n")
    expect(row(page, "risky").locator("td.changes")).to_have_text("1")
    dialog = open_dialog(page, "risky", "remove")
    expect(dialog).to_contain_text("1 uncommitted change(s)")
    ok = dialog.locator("#confirm-ok")
    expect(ok).to_be_disabled()
    dialog.locator("#confirm-check").check()
    expect(ok).to_be_enabled()
    ok.click()
    expect(result_line(page)).to_contain_text("snapshot refs/vibe/reaped/risky")
    assert not Path(created["path"]).exists()
    snapshot = repo.git("show", "refs/vibe/reaped/risky:unsaved.txt")
    assert snapshot == "precious"
    expect(row(page, "risky").locator("td.state")).to_contain_text("snapshot")


@pytest.mark.slow
def test_restore_brings_a_removed_worktree_back(page, repo, vwt):
    created = vwt.new("comeback")
    Path(created["path"], "work.txt").write_text("work\n")
    vwt.ok("rm", "comeback", "-y")
    row(page, "comeback").locator('button[data-action="restore"]').click()
    expect(result_line(page)).to_contain_text("restored comeback")
    assert Path(created["path"], "work.txt").read_text() == "work\n"
    expect(row(page, "comeback").locator("td.state")).to_contain_text("ready")


def test_removing_a_held_worktree_is_refused_with_the_reason(page, repo, vwt, holder):
    created = vwt.new("busy")
    holder(created["bucket"], "busy")
    expect(row(page, "busy")).to_have_class(has_class("held"))
    dialog = open_dialog(page, "busy", "remove")
    expect(dialog).to_contain_text("Held by a live session")
    dialog.locator("#confirm-ok").click()
    expect(page.page.locator("#result")).to_have_class(has_class("refused"))
    expect(result_line(page)).to_contain_text("held by a live session")
    assert Path(created["path"]).is_dir()


@pytest.mark.slow
def test_prune_shows_the_plan_first_then_runs_it(page, repo, vwt):
    older = vwt.new("oldest")
    vwt.new("newest")
    page.page.locator("#prune-button").click()
    dialog = page.page.locator("dialog#confirm")
    expect(dialog).to_be_visible()
    expect(dialog.locator("#prune-plan")).to_contain_text("would remove 0")
    dialog.locator("#prune-keep").fill("1")
    dialog.locator("#prune-replan").click()
    plan = dialog.locator("#prune-plan")
    expect(plan).to_contain_text("would remove 1")
    expect(plan).to_contain_text("oldest")
    assert Path(older["path"]).is_dir()  # the plan changed nothing
    dialog.locator("#confirm-ok").click()
    expect(result_line(page)).to_contain_text("removed 1")
    assert not Path(older["path"]).exists()
    expect(row(page, "oldest").locator("td.state")).to_contain_text("snapshot")
    expect(row(page, "newest").locator("td.state")).to_contain_text("ready")


def test_an_error_is_one_readable_line(page, repo, vwt):
    created = vwt.new("filtered")
    repo.git("config", "filter.secret.clean", "cat")
    Path(created["path"], ".gitattributes").write_text("*.txt filter=secret\n")
    Path(created["path"], "a.txt").write_text("x\n")
    expect(row(page, "filtered").locator("td.changes")).to_have_text("2")
    row(page, "filtered").locator('button[data-action="snapshot"]').click()
    box = page.page.locator("#result")
    expect(box).to_have_class(has_class("error"))
    expect(result_line(page)).to_contain_text("filter driver")
    assert "\n" not in result_line(page).inner_text().strip()
    assert not repo.git_ok("rev-parse", "--verify", "--quiet", "refs/vibe/reaped/filtered")


@pytest.mark.slow
def test_the_page_works_with_no_network(page, two_repos):
    """All assets come from the board itself (the fixture blocks and fails any other host)."""
    expect(page.page.locator("#worktrees tbody tr")).to_have_count(3)
    page.goto(f"/worktree/{two_repos['dirty']['bucket']}/dirty-one")
    expect(page.page.locator("#files tbody")).to_contain_text("notes.txt")
    hosts = {url.split("/")[2] for url in page.requested}
    assert hosts == {f"127.0.0.1:{page.board.port}"}
    assert any(url.endswith("/static/board.css") for url in page.requested)


# -- landing: integration and merge (SPEC §8) --------------------------------------------------
@pytest.mark.slow
def test_integration_and_behind_are_shown_once_list_has_them(page, repo, vwt):
    created = vwt.new("landed")
    repo.commit("the work", {"work.txt": "done\n"}, cwd=Path(created["path"]))
    repo.git("merge", "-q", "--ff-only", "landed")
    repo.commit("later on main", {"main.txt": "later\n"})
    landed = row(page, "landed")
    expect(page.page.locator('th[data-col="integration"]')).to_be_visible()
    expect(landed.locator("td.integration")).to_have_text("ancestor")
    expect(landed.locator("td.behind")).to_have_text("1")


@pytest.mark.slow
def test_merge_asks_first_then_lands_the_commits_on_the_target(page, repo, vwt):
    created = vwt.new("shipping")
    repo.commit("ship it", {"shipped.txt": "shipped\n"}, cwd=Path(created["path"]))
    before = repo.head()
    expect(row(page, "shipping").locator("td.ahead")).to_have_text("1")
    dialog = open_dialog(page, "shipping", "merge")
    expect(dialog).to_contain_text("main")
    dialog.locator("#confirm-cancel").click()
    assert repo.head() == before  # one click changed nothing
    dialog = open_dialog(page, "shipping", "merge")
    dialog.locator("#merge-mode").select_option("squash")
    dialog.locator("#confirm-ok").click()
    expect(result_line(page)).to_contain_text("merged shipping into main")
    assert repo.head() != before
    assert repo.git("show", "main:shipped.txt") == "shipped"
    assert not Path(created["path"]).exists()
    expect(row(page, "shipping").locator("td.state")).to_contain_text("snapshot")


@pytest.mark.slow
def test_a_merge_conflict_is_shown_and_changes_nothing(page, repo, vwt):
    created = vwt.new("clashing")
    where = Path(created["path"])
    repo.commit("theirs", {"README.md": "# from the worktree\n"}, cwd=where)
    repo.commit("ours", {"README.md": "# from main\n"})
    before, branch_before = repo.head(), repo.head(cwd=where)
    expect(row(page, "clashing").locator("td.ahead")).to_have_text("1")
    dialog = open_dialog(page, "clashing", "merge")
    dialog.locator("#confirm-ok").click()
    box = page.page.locator("#result")
    expect(box).to_have_class(has_class("refused"))
    expect(result_line(page)).to_contain_text("conflicts with main in README.md")
    expect(box.locator("li")).to_contain_text(["conflict: README.md"])
    assert repo.head() == before and repo.head(cwd=where) == branch_before
    assert where.is_dir()


@pytest.mark.slow
def test_merging_a_held_worktree_is_refused_with_the_reason(page, repo, vwt, holder):
    created = vwt.new("taken")
    repo.commit("work", {"w.txt": "w\n"}, cwd=Path(created["path"]))
    holder(created["bucket"], "taken")
    before = repo.head()
    expect(row(page, "taken")).to_have_class(has_class("held"))
    dialog = open_dialog(page, "taken", "merge")
    dialog.locator("#confirm-ok").click()
    expect(page.page.locator("#result")).to_have_class(has_class("refused"))
    expect(result_line(page)).to_contain_text("held")
    assert repo.head() == before


# -- collisions (SPEC §13) ------------------------------------------------------------------------
@pytest.mark.slow
def test_worktrees_that_will_conflict_are_marked(page, repo, vwt):
    first, second = vwt.new("left"), vwt.new("right")
    vwt.new("elsewhere")
    Path(first["path"], "README.md").write_text("# left\n")
    Path(second["path"], "README.md").write_text("# right\n")
    for name, other in (("left", "right"), ("right", "left")):
        badge = row(page, name).locator("td.state .badge.collides")
        expect(badge).to_have_text("conflicts", timeout=10_000)
        assert f"conflicts with {other} in README.md" in badge.get_attribute("title")
    expect(row(page, "elsewhere").locator(".badge.collides")).to_have_count(0)
    row(page, "left").locator("td.name a").click()
    expect(page.page.locator("#detail-facts")).to_contain_text("conflicts with right")


@pytest.mark.slow
def test_an_agent_sessions_activity_shows_beside_its_holders(page, repo, vwt):
    path = Path(vwt.new("agent-work")["path"])
    event = json.dumps({"session_id": "s-1", "hook_event_name": "Notification",
                        "cwd": str(path), "message": "Claude needs your permission to use Bash"})
    vwt.ok("hook", "claude-code", input=event)
    holders = row(page, "agent-work").locator("td.holders")
    expect(holders).to_contain_text("waiting for you", timeout=LIVE_SECONDS * 1000)
    vwt.ok("hook", "claude-code", input=event.replace("Notification", "Stop"))
    expect(holders).to_contain_text("idle", timeout=LIVE_SECONDS * 1000)


@pytest.mark.slow
def test_any_agents_activity_shows_too_named_without_a_session(page, repo, vwt):
    path = Path(vwt.new("codex-work")["path"])
    vwt.ok("activity", "set", "working", "--agent", "codex", cwd=path)
    badge = row(page, "codex-work").locator("td.holders .activity")
    expect(badge).to_have_text("working", timeout=LIVE_SECONDS * 1000)
    assert badge.get_attribute("title").startswith("codex, working since ")
