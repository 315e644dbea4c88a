"""`vwt conflicts` in a hostile repository: it is housekeeping (SPEC §6, §13), so no hook,
fsmonitor, filter, merge driver, external diff or textconv of the repository ever runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import GitRepo, Sandbox
from .test_hostile import hostile_config, make_dirty, script, touch_tracked

pytestmark = pytest.mark.timeout(90)


@pytest.mark.parametrize("filters", [False, True], ids=["hooks-fsmonitor", "filters"])
def test_conflicts_never_runs_repository_commands(sb: Sandbox, repo: GitRepo,
                                                  filters: bool) -> None:
    repo.commit("filtered files", {
        ".gitattributes": "*.evil filter=evil diff=evil merge=evil\n*.proc filter=proc\n"
                          "*.inc filter=inc\nREADME.md merge=evil\n",
        "a.evil": "A\n", "b.proc": "B\n", "c.inc": "C\n"})
    one = Path(repo.ok("new", "one", "--json").json()["path"])
    two = Path(repo.ok("new", "two", "--json").json()["path"])
    make_dirty(one)
    (two / "README.md").write_text("# demo\nanother edit\n")
    repo.git("commit", "-qam", "two's edit", cwd=two)
    repo.commit("main moves", {"README.md": "# demo on main\n"})
    hostile_config(sb, repo, filters=filters)
    repo.git("config", "merge.evil.driver", script(sb, "merge-driver", "exit 0"))
    if filters:
        (one / "a.evil").write_text("changed through a filter\n")
    for marker in sb.markers.iterdir():
        marker.unlink()
    for args in (("conflicts", "--json"), ("conflicts", "--all"),
                 ("conflicts", "one", "--check"), ("conflicts", "--path", "README.md")):
        touch_tracked(one)
        run = repo.vwt(*args, cwd=one)
        assert run.returncode in (0, 1), str(run)
        assert sb.fired_markers() == [], f"vwt {' '.join(args)} ran {sb.fired_markers()}"
    doc = json.loads(repo.ok("conflicts", "--json").stdout)
    by_name = {w["name"]: w for w in doc["worktrees"]}
    if filters:  # one's a.evil could only be read through the filter: reported, left out
        assert "a.evil" in by_name["one"]["error"] and by_name["one"]["changed"] is None
        assert doc["pairs"] == []
    else:
        assert by_name["one"]["error"] is None
        assert doc["pairs"][0]["overlap"] == ["README.md"]
        assert doc["pairs"][0]["conflicts"] == ["README.md"], \
            "the path the repository's merge driver would merge is reported as conflicting"
    assert by_name["two"]["target_conflicts"] == ["README.md"]
    assert sb.fired_markers() == []
