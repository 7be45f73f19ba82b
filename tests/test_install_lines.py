"""No page, card, help text or message names an install line that cannot work: no package index carries
scitaste-hf, so `pip install scitaste-hf` (with or without extras) ends in "No matching distribution found". A
checkout (`pip install '.[extra]'`), a wheel the project builds, or a direct URL (`scitaste-hf[x] @ URL`) works."""

import re
from pathlib import Path

from scitaste_hf.resources import install_hint

ROOT = Path(__file__).resolve().parents[1]
#: `pip install` then options, then a requirement naming the package by name, not as `name @ URL`.
BY_NAME = re.compile(r"pip install\s+(?:-{1,2}[\w-]+(?:[ =]\S+)?\s+)*['\"]?scitaste-hf(?:\[[\w,]*\])?['\"]?(?!\s*@)"
                     r"(?:\s|['\"`)]|$)")


def _texts():
    folders = ("docs", "scitaste_hf", "space", "metrics", "lm_eval_tasks", "bench", ".ci")
    for path in [*ROOT.glob("*.md"), *(p for folder in folders for p in (ROOT / folder).rglob("*") if p.is_file())]:
        if path.suffix in (".md", ".py", ".txt", ".yaml", ".toml", "") and "__pycache__" not in path.parts:
            try:
                yield path, path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue


def test_the_pattern_finds_what_fails_and_passes_what_works():
    for bad in ("pip install 'scitaste-hf[lmeval]'", "pip install scitaste-hf lm-eval", "pip install -U scitaste-hf",
                '`pip install "scitaste-hf[space,lmeval]"`', "(pip install scitaste-hf)"):
        assert BY_NAME.search(bad), bad
    for good in ("pip install '.[lmeval]'", "pip install 'scitaste-hf[lmeval] @ git+https://example.org/r.git'",
                 'pip install "$(ls dist/scitaste_hf-*.whl)[lmeval]"', "pip install scitaste-hf-extra-tool",
                 install_hint("lmeval")):
        assert not BY_NAME.search(good), good


def test_no_text_names_an_install_line_that_cannot_work():
    found = [f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0).strip()}"
             for path, text in _texts() for m in BY_NAME.finditer(text.replace("\\\n", " "))]
    assert not found, "install lines no index can satisfy:\n" + "\n".join(found)
