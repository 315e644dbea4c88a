"""`NamedTuple` for our records and results: `typing.NamedTuple` itself.

A stand-in here once built the same `collections.namedtuple` without importing
`typing`. Measured, that saved about 3 ms of CPU: 9% of `vwt list` on a small
repository and 6% of `vwt new` (B2), under a tenth of either command, so the
standard form is used. `vwt --version` (B5) still loads no `typing`: `cli`,
`errors` and the package's `__init__` do not import this module.
"""

from __future__ import annotations

from typing import NamedTuple as NamedTuple

__all__ = ["NamedTuple"]
