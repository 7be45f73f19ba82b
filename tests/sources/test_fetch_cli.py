"""The ``fetch`` command module (scitaste_hf.sources.cli) over the replay server."""

from __future__ import annotations

import argparse
import json

import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.sources import cli
from scitaste_hf.sources.errors import OfflineCacheMiss


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(list(argv)))


def test_fetch_prints_json_lines_and_fills_the_cache(replay, tmp_path, capsys):
    base = ["--base-url", replay.url + "/openalex", "--cache-dir", str(tmp_path)]
    assert run("openalex", "W2741809807", *base) == 0
    work = json.loads(capsys.readouterr().out)
    assert work["id"] == "W2741809807" and work["publication_date"] == "2018-02-13"
    assert run("openalex", "W2741809807", *base, "--offline") == 0
    assert json.loads(capsys.readouterr().out) == work
    with pytest.raises(OfflineCacheMiss):
        run("openalex", "W3045921891", *base, "--offline")


def test_fetch_arxiv_and_a_clear_error_for_links(replay, capsys):
    assert run("arxiv", "1707.08567", "--base-url", replay.url + "/arxiv/api") == 0
    entry = json.loads(capsys.readouterr().out)
    assert entry["id"] == "1707.08567" and entry["published"].startswith("2017-")
    with pytest.raises(ScitasteError, match="arXiv has no citation links"):
        run("arxiv", "1707.08567", "--citers")
