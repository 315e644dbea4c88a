"""`NamedTuple` for the modules that `vwt env` and `vwt list --no-status` import.

Importing `typing` costs 2 to 3 ms, a tenth of `vwt env`, which shells and scripts call
often (SPEC §7, B15: at most 1.5 times `vwt --version`). mypy sees `typing.NamedTuple`;
at run time a class written the same way (fields with annotations and defaults, methods,
properties) becomes a `collections.namedtuple` type carrying those methods. Nothing else
is supported: no generics, no functional form.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    import collections

    _NOT_COPIED = frozenset({"__annotations__", "__module__", "__qualname__", "__classcell__"})

    class _TupleMaker(type):
        def __new__(mcls, name, bases, namespace):
            if not bases:  # NamedTuple itself
                return super().__new__(mcls, name, bases, namespace)
            fields = list(namespace.get("__annotations__", {}))
            defaults = [namespace[field] for field in fields if field in namespace]
            if any(field not in namespace for field in fields[len(fields) - len(defaults):]):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            cls = collections.namedtuple(name, fields, defaults=defaults or None,
                                         module=namespace.get("__module__"))
            for key, value in namespace.items():
                if key not in _NOT_COPIED and key not in fields:
                    setattr(cls, key, value)
            cls.__qualname__ = namespace.get("__qualname__", name)
            cls.__annotations__ = namespace.get("__annotations__", {})
            if "__classcell__" in namespace:  # a method uses super() or __class__
                namespace["__classcell__"].cell_contents = cls
            return cls

    class NamedTuple(metaclass=_TupleMaker):
        pass
