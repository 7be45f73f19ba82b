"""Where the files that are not Python modules live, in a source checkout and in an installed wheel.

The wheel carries the repository's ``metrics/`` folder as ``scitaste_hf/_bundled/metrics`` (see
pyproject.toml); a checkout or an editable install has it beside the package.
"""

from __future__ import annotations

from pathlib import Path

from scitaste_hf.errors import ScitasteError

_PACKAGE = Path(__file__).resolve().parent


def bundled_dir(name: str) -> Path:
    """The folder ``name`` (for example ``"metrics"``) of the installation or of the source checkout."""
    for candidate in (_PACKAGE / "_bundled" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise ScitasteError(f"the {name}/ folder is missing from this installation of scitaste-hf; reinstall it")


def metric_names() -> list[str]:
    """Names of the packaged ``evaluate`` modules."""
    root = bundled_dir("metrics")
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.py").is_file())


def metric_path(name: str) -> Path:
    """The folder of the packaged ``evaluate`` module ``name``."""
    path = bundled_dir("metrics") / name
    if not (path / f"{name}.py").is_file():
        raise ScitasteError(f"unknown metric {name!r}; available: {', '.join(metric_names())}")
    return path


def install_hint(extra: str) -> str:
    """How to install one of the package's extras. scitaste-hf is installed from its repository (no package index
    carries it), so the hint names the checkout, not a package name that pip would fail to find."""
    return f"pip install '.[{extra}]' in the scitaste-hf repository"
