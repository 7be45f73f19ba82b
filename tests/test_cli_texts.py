"""Texts a newcomer reads: the command list of `scitaste --help`, `scitaste eval --help`, and the dataset card's
body (the tool_evidence configuration and how to load both)."""

import subprocess
import sys
from pathlib import Path

from scitaste_hf.agent.evidence import CONFIG
from scitaste_hf.cli import first_sentence
from scitaste_hf.schema import HUB_DATASET
from scitaste_hf.weights import DEFAULT_WEIGHTS

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def test_a_docstrings_help_line_is_a_whole_sentence_or_clause():
    assert first_sentence("Serve the app.\n\nMore.") == "Serve the app"
    assert first_sentence("Score a run against the\ngold. Then print it.") == "Score a run against the gold"
    long = ("Build the SciTaste-Bench dataset: collect from NASA ADS / OpenAlex / arXiv (or the offline mirror), fuse, "
            "classify, score and sample.")
    assert first_sentence(long) == "Build the SciTaste-Bench dataset"


def test_help_lists_whole_lines_and_publish_says_all_it_pushes():
    out = subprocess.run([SCITASTE, "--help"], capture_output=True, text=True, timeout=60, check=True).stdout
    assert "build     Build the SciTaste-Bench dataset\n" in out
    publish = " ".join(out.split("\n    publish ")[1].split("\n    space ")[0].split())
    assert publish == "push the metric modules, the leaderboard Space or a built dataset to the Hugging Face Hub"


def test_eval_help_shows_no_sphinx_markup():
    out = subprocess.run([SCITASTE, "eval", "--help"], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    for markup in (":class:", ":func:", ":data:", ":meth:", "``"):
        assert markup not in out, markup
    assert "A key of scitaste_hf.agent.chat.PROFILES" in out and "Per request (ChatClient)" in out
    heading = out.split("Parameters (--model_args)\n", 1)[1].split("\n", 1)[0]
    assert heading == "-" * len("Parameters (--model_args)")


def test_the_dataset_card_shows_how_to_load_the_splits_and_the_tool_evidence():
    from scitaste_hf.builder.layout import card

    body = card({"selected": 300, "backup": 600}, DEFAULT_WEIGHTS, synthetic=True).split("\n---\n", 1)[1]
    assert f'load_dataset("{HUB_DATASET}")' in body and f'load_dataset("{HUB_DATASET}", "{CONFIG}")' in body
    assert f"The `{CONFIG}` configuration holds" in body
