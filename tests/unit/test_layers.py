"""The package's imports point one way: each layer uses only the layers below it."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "vibe_worktree"
# lowest first; a module may import its own layer and the ones before it
LAYERS = [
    {"core"},
    {"lifecycle"},
    {"landing", "health", "sessions"},
    {"api", "schema", "agents"},  # agents: the API as agents see it (hooks, activity)
    {"render", "board", "integrations"},
    {"cli", "__main__", "__init__"},
]


def _layer(top: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if top in names)


def _imported_tops(path: Path) -> set[str]:
    """The top-level parts of vibe_worktree that `path` imports (relative imports resolved)."""
    here = path.relative_to(PACKAGE).with_suffix("").parts
    package = here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            parts = [*base, *(node.module.split(".") if node.module else [])]
            if parts:
                found.add(parts[0])
            else:
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [
                a.name for a in node.names]
            for name in names:
                if name and name.startswith("vibe_worktree."):
                    found.add(name.split(".")[1])
    return found - {"__version__"}


def test_every_module_imports_only_its_own_layer_and_those_below():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        top = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for used in _imported_tops(path):
            if _layer(used) > _layer(top):
                upward.append(f"{path.relative_to(PACKAGE)} imports {used}")
    assert not upward, upward


def test_every_module_belongs_to_a_layer():
    tops = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()
            if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert tops <= set().union(*LAYERS), tops - set().union(*LAYERS)
