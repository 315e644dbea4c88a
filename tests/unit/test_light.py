"""core.light.NamedTuple behaves as typing.NamedTuple does for the classes written with it."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from vibe_worktree.core.light import NamedTuple
from vibe_worktree.core.records import Record


class Point(NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str = "origin"

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)

    def moved(self, dx: int) -> Point:
        return self._replace(x=self.x + dx)


def test_fields_defaults_methods_and_properties() -> None:
    p = Point(3)
    assert p == (3, 0, "origin")
    assert Point._fields == ("x", "y", "label")
    assert p.norm1 == 3 and p.moved(2).x == 5
    assert Point.__doc__ == "A point." and Point.__qualname__ == "Point"
    x, y, label = Point(1, 2, "a")
    assert (x, y, label) == (1, 2, "a")
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(AttributeError):
        p.x = 4  # type: ignore[misc]


def test_a_field_without_default_after_one_with_a_default_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default follows"):
        class Bad(NamedTuple):
            a: int = 1
            b: int  # type: ignore[misc]


def test_a_method_calling_super_works() -> None:
    class Named(NamedTuple):
        name: str

        def __repr__(self) -> str:
            return "Named:" + super().__repr__()  # tuple's, as with typing.NamedTuple

    assert repr(Named("a")) == "Named:('a',)"


def test_the_records_of_the_hot_paths_are_tuples() -> None:
    assert issubclass(Record, tuple) and "name" in Record._fields


def test_vwt_env_does_not_import_typing() -> None:
    code = ("import sys; import vibe_worktree.runtime.env, vibe_worktree.lifecycle.leasing; "
            "print('typing' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
