"""Serve the leaderboard Space (space/app.py) on 127.0.0.1 over a local data folder.

The folder holds the store (SQLite + submitted files). Gold labels: --gold, else DATA/dataset (as written by
`scitaste demo`), else the bundled synthetic example. Needs the `space` extra (pip install '.[space]' in the
repository).
"""

from __future__ import annotations

import argparse
import os


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste space``."""
    parser.add_argument("--data", default="scitaste-space-data", help="data folder of the leaderboard store")
    parser.add_argument("--gold", help="gold labels of the selected split: a file, a dataset folder or a Hub id")
    parser.add_argument("--port", type=int, default=7860, help="port on 127.0.0.1 (default 7860)")


def run(args: argparse.Namespace) -> int:
    """Load the Space app by path and launch it."""
    import runpy

    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.resources import bundled_dir, install_hint

    try:
        import gradio  # noqa: F401
    except ImportError:
        raise ScitasteError(f"the Space needs Gradio: {install_hint('space')}") from None
    os.environ["SCITASTE_DATA"] = str(args.data)
    if args.gold:
        os.environ["SCITASTE_GOLD"] = args.gold
    app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="scitaste_space")
    print(f"leaderboard data in {os.path.abspath(args.data)}; serving on http://127.0.0.1:{args.port}/")
    app["serve"](server_name="127.0.0.1", server_port=args.port, show_error=True)
    return 0
