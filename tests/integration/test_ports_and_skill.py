"""`vwt port` / VWT_PORT, and `vwt skill`."""

from __future__ import annotations

import re

import pytest

from vibe_worktree.integrations.skill import skill_text

from .vwt_support import Box


def test_port_is_stable_in_range_and_exported_by_run(box: Box) -> None:
    box.new("web")
    first = int(box.ok("port", "web").out)
    assert 20000 <= first <= 29999
    assert int(box.ok("port", "web").out) == first
    data = box.ok("port", "web", "--json").json()
    assert data["port"] == first and data["name"] == "web" and data["bucket"]
    ran = box.ok("run", "web", "--", "sh", "-c", 'echo "$VWT_PORT $VWT_NAME $VWT_PATH"')
    port, name, path = ran.out.split()
    assert (int(port), name) == (first, "web")
    assert path == box.ok("path", "web").out.strip()


@pytest.mark.slow
def test_ports_differ_by_name_and_follow_the_configured_range(box: Box) -> None:
    ports = {int(box.ok("port", f"w{i}").out) for i in range(20)}
    assert len(ports) > 15, "derived from the name, so names spread out"
    box.write_config("port_range = [4000, 4009]\n")
    assert all(4000 <= int(box.ok("port", f"w{i}").out) <= 4009 for i in range(5))
    box.write_config("port_range = [10, 5]\n")
    bad = box.vwt("port", "w1")
    assert bad.code == 1 and "port_range" in bad.err


def test_shell_exports_the_port(box: Box) -> None:
    box.new("sh")
    port = box.ok("port", "sh").out.strip()
    result = box.ok("shell", "sh", input='echo "port=$VWT_PORT"\n')
    assert f"port={port}" in result.out


def test_skill_has_front_matter_with_name_and_description() -> None:
    text = skill_text()
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, "YAML front matter first"
    fields = dict(line.split(": ", 1) for line in match.group(1).splitlines())
    assert fields["name"] == "vibe-worktree"
    assert len(fields["description"]) > 80
    assert "vwt new" in text and "vwt rm" in text


def test_skill_install_default_vibe_and_target(box: Box) -> None:
    default = box.ok("skill", "install", "--json").json()
    expected = box.home / ".claude" / "skills" / "vibe-worktree" / "SKILL.md"
    assert default == {"path": str(expected), "changed": True}
    assert expected.read_text() == skill_text()
    again = box.ok("skill", "install", "--json").json()
    assert again["changed"] is False
    vibe = box.ok("skill", "install", "--agent", "vibe").out.strip()
    assert vibe == str(box.vibe_home / "skills" / "vibe-worktree" / "SKILL.md")
    target = box.tmp / "custom"
    assert box.ok("skill", "install", "--target", str(target)).out.strip() == \
        str(target / "SKILL.md")
    (target / "SKILL.md").write_text("old version\n")
    assert box.ok("skill", "install", "--target", str(target), "--json").json()["changed"]
    assert box.ok("skill", "show").out == skill_text()


def test_skill_show_json_is_the_skill_as_json(box: Box) -> None:
    shown = box.ok("skill", "show", "--json").json()
    assert shown == {"name": "vibe-worktree", "text": skill_text()}
    assert box.ok("skill", "show").out == skill_text()
