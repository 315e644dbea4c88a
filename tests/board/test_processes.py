"""What runs inside each worktree, on the board: its leased ports, a link to each port a
process inside listens on, the mismatches, and a removal refused while a server runs."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from runtime.conftest import Procs, leased_port, procs  # noqa: F401 - procs: a fixture

from .test_page import open_dialog, result_line, row

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")
SHOWN_MS = 5_000  # a refresh a second, and the collision forecast in the same read


def test_ports_link_to_the_servers_inside_and_mark_a_mismatch(page, repo, vwt,
                                                              procs: Procs) -> None:  # noqa: F811
    web = Path(vwt.new("web")["path"])
    vwt.new("api")
    vwt.new("quiet")
    web_port, api_port = leased_port(vwt, "web"), leased_port(vwt, "api")
    procs.server(web, web_port)
    outside = procs.server(repo.path, api_port)
    link = row(page, "web").locator("td.ports a.port")
    expect(link).to_have_text(str(web_port), timeout=SHOWN_MS)
    assert link.get_attribute("href") == f"http://127.0.0.1:{web_port}/"
    expect(row(page, "web").locator(".badge.mismatch")).to_have_count(0)
    badge = row(page, "api").locator("td.ports .badge.mismatch")
    expect(badge).to_have_text("mismatch")
    assert badge.get_attribute("title") == (
        f"port {api_port} of api is served by pid {outside} in {repo.path}")
    expect(row(page, "api").locator("td.ports a")).to_have_count(0)  # not served from inside
    expect(row(page, "api").locator("td.ports span.port")).to_have_text(str(api_port))
    quiet = row(page, "quiet").locator("td.ports")
    expect(quiet).to_have_text(str(leased_port(vwt, "quiet")))  # leased, nothing serves it
    expect(quiet.locator("a, .badge")).to_have_count(0)
    expect(page.page.locator("#summary")).to_contain_text("1 with a port served from elsewhere")
    row(page, "web").locator("td.name a").click()
    facts = page.page.locator("#detail-facts")
    expect(facts).to_contain_text(re.compile(rf"pid \d+ \(:{web_port}\): .*http\.server"))


@pytest.mark.slow
def test_a_server_stopped_disappears_without_a_reload(page, repo, vwt,
                                                      procs: Procs) -> None:  # noqa: F811
    web = Path(vwt.new("web")["path"])
    port = leased_port(vwt, "web")
    procs.server(web, port)
    link = row(page, "web").locator("td.ports a.port")
    expect(link).to_have_text(str(port), timeout=SHOWN_MS)
    procs.cleanup()
    expect(link).to_have_count(0, timeout=SHOWN_MS)


def test_removing_a_worktree_a_server_runs_in_is_refused_naming_it(page, repo, vwt,
                                                                   procs: Procs) -> None:  # noqa: F811
    web = Path(vwt.new("web")["path"])
    port = leased_port(vwt, "web")
    pid = procs.server(web, port)
    expect(row(page, "web").locator("td.ports a.port")).to_have_count(1, timeout=SHOWN_MS)
    dialog = open_dialog(page, "web", "remove")
    dialog.locator("#confirm-ok").click()
    expect(page.page.locator("#result")).to_have_class(re.compile(r"(^|\s)refused(\s|$)"))
    expect(result_line(page)).to_contain_text(f"pid {pid}")
    assert web.is_dir()
