"""`vwt schema`: the JSON Schemas (draft 2020-12) of the documents vwt prints.

One file per document in the package's `schemas/` folder: `<command>.json` for
`vwt <command> --json`, `mcp-<tool>.json` for the structured result of an MCP
tool. A file may point at another with `"$ref": "<name>.json"`; `load` bundles
the files it points at into `$defs` (each with its own `$id`), so a printed
schema is complete on its own.
"""

from __future__ import annotations

import json
import os

from .core.errors import EXIT_USAGE, VwtError

SCHEMA_DIR = os.path.join(os.path.dirname(__file__), "schemas")
SUFFIX = ".json"


def names() -> list[str]:
    """Every schema's name, sorted: the commands' first, then the MCP tools'."""
    found = [f[: -len(SUFFIX)] for f in os.listdir(SCHEMA_DIR) if f.endswith(SUFFIX)]
    return sorted(found, key=lambda n: (n.startswith("mcp-"), n))


def _read(name: str) -> dict[str, object]:
    if name not in names():  # also keeps a name from reaching outside the folder
        raise VwtError(f"no schema named {name!r}; `vwt schema` lists them", EXIT_USAGE)
    with open(os.path.join(SCHEMA_DIR, name + SUFFIX), encoding="utf-8") as handle:
        data: dict[str, object] = json.load(handle)
    return data


def _refs(node: object) -> set[str]:
    """The other schema files a schema points at (`"$ref": "<name>.json"`)."""
    if isinstance(node, dict):
        found = set().union(*(_refs(v) for v in node.values())) if node else set()
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.endswith(SUFFIX) and "/" not in ref:
            found.add(ref[: -len(SUFFIX)])
        return found
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def load(name: str) -> dict[str, object]:
    """Schema NAME with every file it refers to (directly or not) embedded in `$defs`."""
    schema = _read(name)
    wanted, bundled = _refs(schema), {}
    while wanted:
        other = wanted.pop()
        if other == name or other in bundled:
            continue
        embedded = _read(other)
        embedded.pop("$schema", None)
        bundled[other] = {"$id": other + SUFFIX, **embedded}
        wanted |= _refs(embedded)
    if bundled:
        defs = schema.setdefault("$defs", {})
        assert isinstance(defs, dict)
        defs.update(sorted(bundled.items()))
    return schema


def text(name: str) -> str:
    return json.dumps(load(name), indent=2) + "\n"
