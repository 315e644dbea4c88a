"""docs/api.md names every public method of Worktrees and every name the package exports."""

from pathlib import Path

import vibe_worktree
from vibe_worktree.api import Worktrees

API_DOC = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")


def test_every_public_method_of_worktrees_is_documented():
    public = [n for n in vars(Worktrees) if not n.startswith("_")]
    missing = [n for n in public if f"`{n}(" not in API_DOC and f"`{n}`" not in API_DOC]
    assert not missing, f"docs/api.md does not document {missing}"


def test_every_exported_name_is_documented():
    missing = [n for n in vibe_worktree.__all__
               if n != "__version__" and f"`{n}" not in API_DOC]
    assert not missing, f"docs/api.md does not name {missing}"
