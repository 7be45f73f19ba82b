"""The specification in docs/ stays true to the code: generated blocks are current, every block has a generator,
and every relative link and #anchor between the pages (and from ARCHITECTURE.md and CONTRIBUTING.md) resolves.
Module names the pages cite in backticks must exist too."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
MODULE_REF = re.compile(r"`(scitaste_hf(?:\.\w+)+)`")


def _generate():
    spec = importlib.util.spec_from_file_location("docs_generate", ROOT / "docs" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATE = _generate()
PAGES = [p for p in GENERATE.pages() if p.is_file()]


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces to
    hyphens; link and code markup reduced to their text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, title in HEADING.findall(FENCE.sub("", path.read_text("utf-8"))):
        slug = _slug(title)
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def test_the_pages_exist():
    names = {p.relative_to(ROOT).as_posix() for p in PAGES}
    assert {"docs/README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"} <= names


def test_generated_blocks_are_current_and_known():
    problems = GENERATE.check()
    assert not problems, "\n".join(problems)


def test_an_unknown_or_stale_block_is_reported():
    text = ("<!-- generated: no-such-block -->\nx\n<!-- /generated -->\n"
            "<!-- generated: floors -->\nold\n<!-- /generated -->")
    _, stale, unknown = GENERATE.process(text)
    assert unknown == ["no-such-block"] and stale == ["floors"]


def test_every_generator_is_used_by_a_page():
    used = {name for page in PAGES for name in GENERATE.BLOCK.findall(page.read_text("utf-8"))
            for name in [name[1]]}
    assert set(GENERATE.GENERATORS) <= used, sorted(set(GENERATE.GENERATORS) - used)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_and_anchors_resolve(page):
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text("utf-8"))):
        if re.match(r"^[a-z][a-z+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def _module_path(parts: list[str]) -> Path | None:
    for candidate in (ROOT.joinpath(*parts).with_suffix(".py"), ROOT.joinpath(*parts, "__init__.py")):
        if candidate.is_file():
            return candidate
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_cited_modules_and_names_exist(page):
    """`scitaste_hf.a.b` must be a module, or a name in one (defined or re-exported; read from the source, nothing
    imported)."""
    missing = []
    for ref in sorted(set(MODULE_REF.findall(page.read_text("utf-8")))):
        parts = ref.split(".")
        for cut in range(len(parts), 0, -1):
            module = _module_path(parts[:cut])
            if module is not None:
                break
        rest = parts[cut:]
        if module is None or len(rest) > 2:
            missing.append(ref)
        elif rest and not re.search(rf"\b{rest[0]}\b", module.read_text("utf-8")):  # defined or re-exported
            missing.append(ref)
    assert not missing, f"{page.relative_to(ROOT)} cites what the code no longer has: {', '.join(missing)}"
