"""Every relative link in the README and docs/ resolves inside the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
PAGES = sorted([PROJECT / "README.md", PROJECT / "CHANGELOG.md",
                PROJECT / "src" / "vibe_worktree" / "schemas" / "README.md",
                *(PROJECT / "docs").rglob("*.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
PUBLIC = ("https://", "http://", "mailto:")


def links(page: Path) -> list[str]:
    text = CODE.sub("", FENCE.sub("", page.read_text(encoding="utf-8")))
    return LINK.findall(text)


def anchors(page: Path) -> set[str]:
    """The ids GitHub gives the page's headings."""
    found: set[str] = set()
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    for heading in re.findall(r"^#{1,6} +(.+?) *$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        candidate, n = slug, 0
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(PROJECT)))
def test_every_relative_link_resolves_inside_the_repository(page):
    for target in links(page):
        if target.startswith(PUBLIC):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.is_relative_to(PROJECT), f"{target} leaves the repository"
        assert resolved.exists(), f"{target}: no such file"
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), f"{target}: no such heading"


def test_links_are_found_and_checked():
    readme = links(PROJECT / "README.md")
    assert "docs/cli.md" in readme and "docs/README.md" in readme
    assert "vwt-new" in anchors(PROJECT / "docs" / "cli.md")
    assert not any("shared/SPEC" in target for page in PAGES for target in links(page))
