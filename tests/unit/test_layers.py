"""The package's shape (docs/design.md, "Layers"): floors that import only downwards, no
circle between files, no file over 800 lines.

Every import counts, wherever it is written: at the top of a module, inside a function
(the lazy imports that keep start-up fast) or under `if TYPE_CHECKING:`. A lazy import
may go down, never up and never round in a circle.
"""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "vibe_worktree"
MAX_LINES = 800
# lowest first; a module may import its own floor and the floors below, never above
FLOORS = [
    {"core"},                                           # 0 ground: git, files, locks, records
    {"lifecycle"},                                      # 1 work: a worktree's life
    {"landing", "health", "runtime", "sessions"},       # 2 above the work
    {"api", "schema"},                                  # 3 the facade
    {"agents", "board", "integrations"},                # 4 front ends
    {"cli", "__main__", "__init__"},                    # 5 the door
]
FRONT_ENDS = FLOORS[4]  # none imports another: only the door (cli) calls their entry points


def _name(path: Path) -> str:
    """`lifecycle.pool` of lifecycle/pool.py; `core.git` of core/git/__init__.py; `` of
    the package's own __init__.py."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _module_of(dotted: str) -> str:
    """The module an import names: `core.git.Git` -> `core.git` (the longest that exists)."""
    parts = dotted.split(".") if dotted else []
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts)


def _imports(name: str, path: Path) -> set[str]:
    """Every module of the package `name` imports, anywhere in its file."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    package = [p for p in package if p]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = [*package[: len(package) - node.level + 1],
                    *(node.module.split(".") if node.module else [])]
            found.update(_module_of(".".join([*base, alias.name])) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("vibe_worktree"):
            base = node.module.split(".")[1:]  # type: ignore[union-attr]
            found.update(_module_of(".".join([*base, alias.name])) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(_module_of(".".join(alias.name.split(".")[1:]))
                         for alias in node.names if alias.name.startswith("vibe_worktree."))
    return found - {name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _floor(name: str) -> int:
    top = name.split(".")[0] or "__init__"
    return next(i for i, tops in enumerate(FLOORS) if top in tops)


def _circles() -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w or "__init__")
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in GRAPH:
        if v not in index:
            visit(v)
    return groups


def test_every_module_belongs_to_a_floor():
    tops = {name.split(".")[0] or "__init__" for name in MODULES}
    assert tops <= set().union(*FLOORS), tops - set().union(*FLOORS)


def test_no_import_runs_up_a_floor():
    upward = [f"{name} imports {used}" for name, used_all in GRAPH.items()
              for used in sorted(used_all) if _floor(used) > _floor(name)]
    assert not upward, upward


def _across(packages: set[str]) -> list[str]:
    """Imports from one of `packages` into another."""
    return [f"{name} imports {used}" for name, used_all in GRAPH.items()
            for used in sorted(used_all)
            if name.split(".")[0] in packages and used.split(".")[0] in packages
            and used.split(".")[0] != name.split(".")[0]]


def test_no_front_end_imports_another():
    assert not _across(FRONT_ENDS), _across(FRONT_ENDS)


def test_the_packages_above_the_work_do_not_import_each_other():
    assert not _across(FLOORS[2]), _across(FLOORS[2])


def test_no_circle_between_files():
    assert not _circles(), _circles()


def test_no_source_file_is_over_800_lines():
    long = {name or "__init__": n for name, path in MODULES.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long


def test_the_facade_stays_thin_and_the_cli_modules_small():
    """The facade's methods are one call each into the module that does the work; a command
    group's module only turns arguments into facade calls and prints."""
    def lines(path: Path) -> int:
        return len(path.read_text(encoding="utf-8").splitlines())

    assert lines(PACKAGE / "api.py") <= 500
    big = {path.name: n for path in (PACKAGE / "cli").glob("*.py") if (n := lines(path)) > 300}
    assert not big, big


def test_the_checks_see_what_they_look_for():
    """The graph resolves the import forms the package uses: relative, from a package's
    __init__, absolute, and a name that is a module (`from . import setup_state`)."""
    assert "core.errors" in GRAPH["core.git.runner"]  # `from ..errors import` in a package
    assert "core.git" in GRAPH["lifecycle.create"]  # `from ..core import git as g`
    assert "lifecycle.setup_state" in GRAPH["lifecycle.hook_runner"]  # `from . import setup_state`
    assert "lifecycle.setup_state" in GRAPH["lifecycle.hook_supervisor"]  # absolute, in a def
    assert "core.git.runner" in GRAPH["core.git"]  # the package's re-exports
