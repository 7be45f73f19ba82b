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
    import importlib.util
    import runpy

    from scitaste_hf import constants
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.resources import bundled_dir, install_hint

    if importlib.util.find_spec("gradio") is None:
        raise ScitasteError(f"the Space needs Gradio: {install_hint('space')}")
    _check_port(args.port)
    if args.gold:  # read now, so that a wrong one is one line before anything is served
        from scitaste_hf.records import load_records

        try:
            load_records(args.gold, "selected")
        except ScitasteError as exc:
            raise ScitasteError(f"--gold {args.gold}: {exc}") from None
        os.environ[constants.SCITASTE_GOLD] = args.gold
    os.environ[constants.SCITASTE_DATA] = str(args.data)
    app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="scitaste_space")
    print(f"leaderboard data in {os.path.abspath(args.data)}; serving on http://127.0.0.1:{args.port}/")
    try:
        app["serve"](server_name="127.0.0.1", server_port=args.port, show_error=True)
    except OSError as exc:  # Gradio's "Cannot find empty port": taken between the check and the start
        if exc.filename is not None or "port" not in str(exc).lower():
            raise
        raise ScitasteError(_port_taken(args.port)) from None
    return 0


def _port_taken(port: int) -> str:
    return f"--port {port}: the port is in use on 127.0.0.1 (another `scitaste space`?); pass a free one"


def _check_port(port: int) -> None:
    """Refuse a port that is out of range or taken on 127.0.0.1, before the board is opened."""
    import socket

    from scitaste_hf.errors import InvalidInput, ScitasteError

    if not 1 <= port <= 65535:
        raise InvalidInput(f"--port {port}: expected 1-65535")
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            raise ScitasteError(_port_taken(port)) from None
