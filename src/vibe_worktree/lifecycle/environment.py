"""A worktree's environment (SPEC §17): built here and nowhere else.

`vwt env` prints it; every hook, `vwt run` and `vwt shell` run with it; whatever else runs a
command in a worktree gets it through the hooks' environment. It holds the worktree's own
variables (`VWT_NAME`, `VWT_BRANCH`, `VWT_PATH`, `VWT_BUCKET`, `VWT_REPO_ROOT`, `VWT_PORT`,
`VWT_PORTS`, `PORT`, `COMPOSE_PROJECT_NAME`), then the keys of the repository's `[env]` table,
whose values may name the worktree through placeholders (`{name}`, `{slug}`, `{branch}`,
`{path}`, `{repo}`, `{port}`, `{port+K}`). Values are data: nothing here runs a shell.

The `[env]` table comes with the repository's code, as its hooks do, so it takes effect only
once its exact keys and values are approved (the approvals store keeps it by a SHA-256 of them,
as it keeps hooks); unapproved, its keys are left out with one warning.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

from ..core.errors import VwtError
from ..core.light import NamedTuple

try:  # the builtin module avoids loading OpenSSL, which `hashlib` does
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other Pythons
    from hashlib import sha256

ENV_TYPE = "env"  # how the approvals store and `vwt hooks` name the table
ENV_NAME = "env"
_RESERVED_PREFIX = "VWT_"
# by hand rather than with `re`, whose import `vwt env` need not pay (SPEC §7, B15)
_LOWER_DIGITS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_COMPOSE_KEEPS = _LOWER_DIGITS | {"-"}
_KEY_STARTS = _LOWER_DIGITS - set("0123456789") | set("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_KEY_CHARS = _KEY_STARTS | set("0123456789")

Warn = Callable[[str], None]


class EnvError(VwtError):
    """An `[env]` table that cannot be applied; the message names the key."""


class Place(NamedTuple):
    """The worktree an environment describes, and the ports of its lease."""

    name: str
    branch: str
    path: str
    bucket: str
    repo_root: str
    ports: tuple[int, ...]

    @property
    def port(self) -> int:
        return self.ports[0] if self.ports else 0


def compose_project_name(repo_root: str, name: str) -> str:
    """`<repo folder>-<name>`, lowercased, each character outside `[a-z0-9_-]` a `-`
    (what docker compose accepts as a project name)."""
    folder = os.path.basename(repo_root.rstrip("/"))
    return "".join(c if c in _COMPOSE_KEEPS else "-" for c in f"{folder}-{name}".lower())


def slug(name: str) -> str:
    """The name lowercased, each character outside `[a-z0-9_]` a `_` (a database name, say)."""
    return "".join(c if c in _LOWER_DIGITS else "_" for c in name.lower())


def is_variable_name(key: str) -> bool:
    return bool(key) and key[0] in _KEY_STARTS and all(c in _KEY_CHARS for c in key)


def own_variables(place: Place) -> dict[str, str]:
    """The variables every worktree has, in the order `vwt env` prints them."""
    port = str(place.port)
    return {
        "VWT_NAME": place.name,
        "VWT_BRANCH": place.branch,
        "VWT_PATH": place.path,
        "VWT_BUCKET": place.bucket,
        "VWT_REPO_ROOT": place.repo_root,
        "VWT_PORT": port,
        "VWT_PORTS": " ".join(map(str, place.ports)),
        "PORT": port,
        "COMPOSE_PROJECT_NAME": compose_project_name(place.repo_root, place.name),
    }


# -- the [env] table ---------------------------------------------------------------------------
class EnvTable(NamedTuple):
    """A repository's `[env]` table: its keys and values in the order of the file."""

    items: tuple[tuple[str, str], ...]
    where: str  # the file it was read from, for messages

    @property
    def text(self) -> str:
        """Its exact keys and values, one `KEY = "VALUE"` line each (values as JSON strings,
        so a newline or a quote inside one is seen): what `vwt hooks` shows and approves."""
        return "\n".join(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in self.items)

    @property
    def key(self) -> str:
        """What its approval is kept by: a SHA-256 as a hook's (type, name, command)."""
        digest: str = sha256(json.dumps([ENV_TYPE, ENV_NAME, self.text]).encode()).hexdigest()
        return digest


def env_table(data: Mapping[str, object], where: str) -> EnvTable | None:
    """The `[env]` table of a parsed `.vibe/worktree.toml`, None when it has none; EnvError
    naming the key when a key is not a variable name or a value not a string."""
    table = data.get("env")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise EnvError(f"{where}: 'env' must be a table ([env]) of KEY = \"value\" lines")
    items = []
    for key, value in table.items():
        if not is_variable_name(key):
            raise EnvError(f"{where}: [env] {key!r} is not a variable name (letters, digits "
                           "and _, not starting with a digit)")
        if key.startswith(_RESERVED_PREFIX):
            raise EnvError(f"{where}: [env] {key}: names starting with VWT_ are vwt's own")
        if not isinstance(value, str):
            raise EnvError(f"{where}: [env] {key} must be a string (quote it: {key} = "
                           f"\"{value}\")")
        if "\0" in value:
            raise EnvError(f"{where}: [env] {key} holds a NUL character, which no environment "
                           "variable can")
        items.append((key, value))
    return EnvTable(tuple(items), where)


def expand(value: str, key: str, place: Place, where: str) -> str:
    """`value` with its placeholders replaced; `{{` and `}}` stand for `{` and `}`."""
    known = {"name": place.name, "slug": slug(place.name), "branch": place.branch,
             "path": place.path, "repo": os.path.basename(place.repo_root.rstrip("/")),
             "port": str(place.port)}
    out = []
    i = 0
    while i < len(value):
        brace = min((j for j in (value.find("{", i), value.find("}", i)) if j >= 0),
                    default=len(value))
        out.append(value[i:brace])
        if brace == len(value):
            break
        pair = value[brace:brace + 2]
        if pair in ("{{", "}}"):
            out.append(pair[0])
            i = brace + 2
        elif value[brace] == "}":  # a lone closing brace is just a brace
            out.append("}")
            i = brace + 1
        else:
            end = value.find("}", brace + 1)
            inner = value[brace + 1:end] if end >= 0 else "{"
            if "{" in inner:
                raise EnvError(f"{where}: [env] {key}: a '{{' that opens no placeholder "
                               "(write '{{' for a brace)")
            out.append(known[inner] if inner in known else _port_plus(inner, key, place, where))
            i = end + 1
    return "".join(out)


def _port_plus(inner: str, key: str, place: Place, where: str) -> str:
    offset = inner.removeprefix("port+")
    if offset == inner or not (offset.isascii() and offset.isdigit()):
        raise EnvError(f"{where}: [env] {key}: unknown placeholder {{{inner}}} (known: "
                       "{name} {slug} {branch} {path} {repo} {port} {port+K})")
    if int(offset) >= len(place.ports):
        raise EnvError(f"{where}: [env] {key}: {{{inner}}} is past the worktree's "
                       f"{len(place.ports)} port(s) (K must be below [ports] count)")
    return str(place.ports[int(offset)])


def table_variables(table: EnvTable, place: Place) -> dict[str, str]:
    return {key: expand(value, key, place, table.where) for key, value in table.items}


def environment(place: Place, table: EnvTable | None, approved: Callable[[EnvTable], bool],
                warn: Warn) -> dict[str, str]:
    """The worktree's variables, then its `[env]` table's when that is approved (a key of
    the table may replace `PORT` or `COMPOSE_PROJECT_NAME`). Unapproved, the table's keys
    are left out and `warn` is told once."""
    variables = own_variables(place)
    if table is None or not table.items:
        return variables
    if not approved(table):
        warn(f"the [env] table of {table.where} is not approved, so its "
             f"{len(table.items)} key(s) are left out; see vwt hooks, then "
             f"vwt hooks approve {ENV_NAME}")
        return variables
    variables.update(table_variables(table, place))
    return variables


# -- printing it -------------------------------------------------------------------------------
SHELLS = ("sh", "fish")


def as_lines(variables: Mapping[str, str]) -> str:
    """`KEY=VALUE` lines, for a person to read."""
    return "".join(f"{k}={v}\n" for k, v in variables.items())


def sh_quote(value: str) -> str:
    """A single-quoted sh word that gives `value` back byte for byte (bash, zsh, dash)."""
    return "'" + value.replace("'", "'\\''") + "'"


def fish_quote(value: str) -> str:
    """A single-quoted fish word: inside one, only `\\` and `'` need a backslash."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def for_shell(variables: Mapping[str, str], shell: str) -> str:
    """Lines that set every variable when evaluated: `eval "$(vwt env --shell sh)"`, or
    `vwt env --shell fish | source`."""
    if shell == "fish":
        return "".join(f"set -gx {k} {fish_quote(v)}\n" for k, v in variables.items())
    return "".join(f"export {k}={sh_quote(v)}\n" for k, v in variables.items())


# -- a managed worktree's ----------------------------------------------------------------------
def project_env_table(checkout: str, sparse: bool = False) -> EnvTable | None:
    """The `[env]` table of the worktree's own `.vibe/worktree.toml` (a sparse checkout that
    leaves `.vibe/` out: of its HEAD commit); HooksFileError when the file is not TOML."""
    from .settings import PROJECT_FILE, parse_toml, project_file, read_toml

    path = project_file(checkout)
    data = read_toml(path)
    if data is None and sparse:
        from ..core.git import Git, file_at

        raw = file_at(Git(checkout), "HEAD", PROJECT_FILE)
        path = f"{path} (at HEAD)"
        data = None if raw is None else parse_toml(raw, path)
    return None if data is None else env_table(data, path)


class Worktree(NamedTuple):
    """What the environment of a managed worktree is built from."""

    bucket: str
    name: str
    branch: str
    path: str
    repo_root: str
    recorded_ports: tuple[int, ...] | None  # its record's `ports`
    sparse: bool = False


def of_worktree(home: str, worktree: Worktree, warn: Warn, with_table: bool = True
                ) -> dict[str, str]:
    """The environment of a managed worktree: its lease's ports (`leasing.ports_of`), its
    checkout's `[env]` table once approved (`with_table` False: without it). EnvError or
    HooksFileError when the table cannot be applied."""
    from ..core.layout import Root
    from .leasing import ports_of

    root = Root.at(home)
    ports = ports_of(root, worktree.bucket, worktree.name, worktree.recorded_ports,
                     worktree.path).ports
    place = Place(worktree.name, worktree.branch, worktree.path, worktree.bucket,
                  worktree.repo_root, ports)
    table = project_env_table(worktree.path, worktree.sparse) if with_table else None

    def approved(found: EnvTable) -> bool:
        from .settings import approved_keys

        return found.key in approved_keys(home, worktree.bucket)

    return environment(place, table, approved, warn)
