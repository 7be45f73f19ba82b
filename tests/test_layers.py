"""The import layers of ARCHITECTURE.md, checked on every import statement, those written inside functions too.

The package is a stack of units (a subpackage, or a module at its root): each imports only units below it in
:data:`ORDER`, so no two units depend on each other at any depth. The core imports none of the top-level folders
(the Space, the ``evaluate`` modules, the lm-eval tasks, the benchmarks, the tests), and only the adapters import
the harnesses.
"""

import ast
import functools
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "scitaste_hf"
FOLDERS = ("space", "metrics", "lm_eval_tasks", "bench", "tests")
#: The package's units, lowest first: base facts, HTTP and data I/O, scoring, the index, the sources and the
#: agent, rTaste's protocol stages (they ask models through the agent's chat client), the worlds and their
#: snapshots, the services, the adapters, and the commands on top. The builder is a plugin of the command line
#: (an entry point), so nothing imports it.
ORDER = (
    "errors", "constants", "progress", "modes", "bounded_load", "net", "output", "resources", "taxonomy", "schema",
    "prompts", "weights", "records", "sources", "scoring", "predictions", "analysis", "index", "rtaste", "agent",
    "rtaste_protocol", "simworld", "mirror", "snapshot", "scale", "leaderboard", "ratings", "release", "adapters",
    "cli", "builder",
)
#: The package's face and its ``python -m`` entry, which may reach any unit.
ENTRIES = ("__init__", "__main__")
#: The harnesses and the app framework: only :mod:`scitaste_hf.adapters` imports them.
HARNESSES = ("lm_eval", "evaluate", "gradio", "inspect_ai", "lighteval")


@functools.cache
def _imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, relative imports resolved against the file's package."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *([node.module] if node.module else [])])
            found += [(node.lineno, module)] + [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def _units(root: Path = ROOT) -> set[str]:
    """The package's units: its subpackages and the modules at its root."""
    return {p.stem if p.is_file() else p.name for p in (root / PACKAGE).iterdir()
            if p.suffix == ".py" or (p / "__init__.py").is_file()}


def _unit(module: str, units: set[str]) -> str | None:
    """The unit a dotted module name belongs to (``scitaste_hf.scoring.wape`` -> ``scoring``); None outside the
    package, and for a name of the package's face (``from scitaste_hf import __version__``)."""
    parts = module.split(".")
    return parts[1] if parts[0] == PACKAGE and len(parts) > 1 and parts[1] in units else None


def _dependencies(root: Path = ROOT) -> dict[tuple[str, str], list[str]]:
    """(unit, unit it imports) -> the ``file:line`` of each import that makes the edge."""
    units = _units(root)
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        own = _unit(".".join(path.relative_to(root).with_suffix("").parts), units)
        for line, module in _imports(path, root):
            target = _unit(module, units)
            if own and target and target != own and own not in ENTRIES:
                where = f"{path.relative_to(root)}:{line}"
                if where not in edges.setdefault((own, target), []):
                    edges[(own, target)].append(where)
    return edges


def _cycle(edges) -> list[str]:
    """One cycle of units (``[a, b, a]``), or [] when the units form a stack."""
    graph: dict[str, set[str]] = {}
    for own, target in edges:
        graph.setdefault(own, set()).add(target)
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return []


def _violations(files, forbidden) -> list[str]:
    """One line per import statement that reaches a forbidden module (``from scitaste_hf import builder`` too)."""
    found = {}
    for path in files:
        for line, module in _imports(path, ROOT):
            if any(module == name or module.startswith(name + ".") for name in forbidden):
                found.setdefault((path, line), f"{path.relative_to(ROOT)}:{line} imports {module}")
    return list(found.values())


def test_the_units_form_a_stack_without_a_cycle():
    edges = _dependencies()
    assert len(edges) > 100  # the rule reads the real imports, function-level ones among them
    assert _cycle(edges) == []


def test_every_import_reaches_down_the_order():
    upward = [f"{where}: {own} imports {target}, which is above it in ORDER"
              for (own, target), places in _dependencies().items()
              if ORDER.index(target) > ORDER.index(own) for where in places]
    assert upward == []


def test_every_unit_has_its_place_in_the_order():
    assert _units() - set(ENTRIES) == set(ORDER)


def test_a_cycle_hidden_inside_a_function_is_caught(tmp_path):
    package = tmp_path / PACKAGE
    for unit, source in [("low", "def f():\n    from scitaste_hf.high.view import show\n"),
                         ("high", "from scitaste_hf.low.core import f\n")]:
        (package / unit).mkdir(parents=True)  # two subpackages, each with an __init__
        (package / unit / "__init__.py").write_text("")
        (package / unit / ("core.py" if unit == "low" else "view.py")).write_text(source)
    edges = _dependencies(tmp_path)
    assert edges == {("low", "high"): [f"{PACKAGE}/low/core.py:2"], ("high", "low"): [f"{PACKAGE}/high/view.py:1"]}
    assert set(_cycle(edges)) == {"low", "high"} and len(_cycle(edges)) == 3


def test_only_the_adapters_import_the_harnesses():
    outside = [p for p in (ROOT / PACKAGE).rglob("*.py") if "adapters" not in p.relative_to(ROOT).parts]
    assert len(outside) > 100
    assert _violations(outside, HARNESSES) == []


def test_the_core_imports_none_of_the_folders():
    core = list((ROOT / PACKAGE).rglob("*.py"))
    assert _violations(core, FOLDERS) == []


@pytest.mark.parametrize("source, module", [
    ("from scitaste_hf.builder import layout", "scitaste_hf.builder"),
    ("from scitaste_hf import builder", "scitaste_hf.builder"),
    ("from ..builder.layout import card", "scitaste_hf.builder.layout"),
    ("import space.app", "space.app"),
])
def test_a_violation_is_found(monkeypatch, source, module):
    path = ROOT / PACKAGE / "cli" / f"_layer_probe_{abs(hash(source))}.py"  # a name of its own: _imports is cached
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: source)
    assert _violations([path], ("scitaste_hf.builder", *FOLDERS)) == [
        f"scitaste_hf/cli/{path.name}:1 imports {module}"]
