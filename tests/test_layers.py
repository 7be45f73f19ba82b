"""The import layers of ARCHITECTURE.md, checked on every import statement: the core imports neither the builder
nor the top-level folders; the builder imports none of the top-level folders."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("space", "metrics", "lm_eval_tasks", "bench", "tests")


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, relative imports resolved against the file's package."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *([node.module] if node.module else [])])
            found += [(node.lineno, module)] + [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return found


def _violations(files, forbidden) -> list[str]:
    """One line per import statement that reaches a forbidden module (``from scitaste_hf import builder`` too)."""
    found = {}
    for path in files:
        for line, module in _imports(path):
            if any(module == name or module.startswith(name + ".") for name in forbidden):
                found.setdefault((path, line), f"{path.relative_to(ROOT)}:{line} imports {module}")
    return list(found.values())


def test_the_core_imports_neither_the_builder_nor_the_folders():
    core = [p for p in (ROOT / "scitaste_hf").rglob("*.py") if "builder" not in p.relative_to(ROOT).parts]
    assert len(core) > 50
    assert _violations(core, ("scitaste_hf.builder", *FOLDERS)) == []


def test_the_builder_imports_none_of_the_folders():
    builder = list((ROOT / "scitaste_hf" / "builder").glob("*.py"))
    assert _violations(builder, FOLDERS) == []
    # the rule is enforced, not vacuous: the builder does import the core
    assert any(m.startswith("scitaste_hf.index") for p in builder for _, m in _imports(p))


@pytest.mark.parametrize("source, module", [
    ("from scitaste_hf.builder import layout", "scitaste_hf.builder"),
    ("from scitaste_hf import builder", "scitaste_hf.builder"),
    ("from ..builder.layout import card", "scitaste_hf.builder.layout"),
    ("import space.app", "space.app"),
])
def test_a_violation_is_found(monkeypatch, source, module):
    path = ROOT / "scitaste_hf" / "cli" / "_layer_probe.py"
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: source)
    assert _violations([path], ("scitaste_hf.builder", *FOLDERS)) == [
        f"scitaste_hf/cli/_layer_probe.py:1 imports {module}"]
