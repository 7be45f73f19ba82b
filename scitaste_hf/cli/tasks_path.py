"""Print the folder of the installed lm-eval tasks, for `lm_eval --include_path "$(scitaste tasks-path)"`."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``scitaste tasks-path`` takes no arguments."""


def run(args: argparse.Namespace) -> int:
    """Print the path."""
    from scitaste_hf.resources import bundled_dir

    print(bundled_dir("lm_eval_tasks"))
    return 0
