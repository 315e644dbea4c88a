"""The board's Land action (SPEC §18, §10): asks first, lands through the queue with the
repository's approved gate, and says what happened; a POST without the page's CSRF token
is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from .test_page import has_class, open_dialog, result_line, row


def test_land_asks_first_then_lands_through_the_queue(page, repo, vwt, sandbox):
    ran = sandbox.tmp / "gate-ran"
    repo.commit("gate", {".vibe/worktree.toml": f'[land]\ngate = "touch {ran}"\n'})
    vwt.ok("hooks", "approve", "gate")
    created = vwt.new("shipping", "--no-fetch")
    repo.commit("ship it", {"shipped.txt": "shipped\n"}, cwd=Path(created["path"]))
    repo.commit("main moves on", {"main.txt": "main\n"})
    before = repo.head()
    dialog = open_dialog(page, "shipping", "land")
    expect(dialog).to_contain_text("merge queue")
    dialog.locator("#confirm-cancel").click()
    assert repo.head() == before and not ran.exists()  # one click changed nothing
    dialog = open_dialog(page, "shipping", "land")
    dialog.locator("#confirm-ok").click()
    expect(result_line(page)).to_contain_text("landed shipping on main")
    expect(result_line(page)).to_contain_text(f"checked by `touch {ran}`")
    assert ran.exists()
    assert repo.git("show", "main:shipped.txt") == "shipped"
    assert repo.git("rev-parse", "main^") == before  # rebased onto the tip it was gated on
    expect(row(page, "shipping").locator("td.state")).to_contain_text("snapshot")


@pytest.mark.slow
def test_a_failed_gate_is_shown_with_its_log(page, repo, vwt):
    repo.commit("gate", {".vibe/worktree.toml": '[land]\ngate = "echo nope; false"\n'})
    vwt.ok("hooks", "approve", "gate")
    created = vwt.new("failing", "--no-fetch")
    repo.commit("work", {"w.txt": "w\n"}, cwd=Path(created["path"]))
    before = repo.head()
    dialog = open_dialog(page, "failing", "land")
    dialog.locator("#confirm-ok").click()
    box = page.page.locator("#result")
    expect(box).to_have_class(has_class("refused"))
    expect(result_line(page)).to_contain_text("failing: gate_failed")
    expect(box.locator("li")).to_contain_text(["gate log: "])
    assert repo.head() == before and Path(created["path"]).is_dir()


def test_land_without_the_pages_csrf_token_is_refused(board, repo, vwt):
    created = vwt.new("guarded", "--no-fetch")
    repo.commit("work", {"w.txt": "w\n"}, cwd=Path(created["path"]))
    before = repo.head()
    refused = board.post("land", {"bucket": created["bucket"], "name": "guarded"}, csrf="")
    assert refused.status == 403
    assert repo.head() == before
    landed = board.post("land", {"bucket": created["bucket"], "name": "guarded"})
    assert landed.status == 200 and landed.json()["ok"] is True
    assert repo.git("show", "main:w.txt") == "w"
