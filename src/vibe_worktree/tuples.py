"""`NamedTuple` for our records and results, without importing `typing` at run time.

Importing `typing` costs about 3 ms, a tenth of what a small command may take in
all (SPEC section 7). Type checkers see `typing.NamedTuple` itself; at run time a
class statement on the stand-in below builds the same `collections.namedtuple`,
with the class's docstring, methods and properties attached, as typing does.
"""

from __future__ import annotations

TYPE_CHECKING = False  # mypy treats this as True
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    from collections import namedtuple

    _CLASS_ONLY = frozenset(
        {"__module__", "__qualname__", "__annotations__", "__doc__", "__firstlineno__",
         "__static_attributes__"}
    )

    class _Builder(type):
        def __new__(mcls, name, bases, namespace):
            if not bases:  # the stand-in itself
                return super().__new__(mcls, name, bases, namespace)
            annotations = namespace.get("__annotations__", {})
            fields = tuple(annotations)
            with_default = tuple(f for f in fields if f in namespace)
            if fields[len(fields) - len(with_default):] != with_default:
                raise TypeError(f"{name}: a field without a default follows one with a default")
            cls = namedtuple(name, fields, defaults=[namespace[f] for f in with_default],
                             module=namespace.get("__module__"))
            cls.__qualname__ = namespace.get("__qualname__", name)
            cls.__annotations__ = annotations
            if namespace.get("__doc__"):
                cls.__doc__ = namespace["__doc__"]
            for key, value in namespace.items():
                if key not in annotations and key not in _CLASS_ONLY:
                    setattr(cls, key, value)
            return cls

    class NamedTuple(metaclass=_Builder):
        """Subclass with annotated fields, as with `typing.NamedTuple`."""
