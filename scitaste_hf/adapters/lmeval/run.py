"""lm-eval's own command line, with the scitaste models registered: what ``scitaste eval`` hands its arguments to."""

from __future__ import annotations

import sys

from scitaste_hf.errors import ScitasteError
from scitaste_hf.resources import install_hint


def run_lm_eval(args: list[str]) -> int:
    """Run ``lm_eval`` on ``args`` (its arguments, without the program name) in this process; its exit status.

    lm-eval's errors pass through (the caller words them for its own command line); a missing lm-eval is one line
    that says how to install it.
    """
    try:
        import lm_eval.models  # noqa: F401  lm-eval imports its built-in models only into an empty registry
        from lm_eval.__main__ import cli_evaluate
    except ImportError:
        raise ScitasteError(f"scitaste eval needs lm-eval: {install_hint('lmeval')}") from None
    import scitaste_hf.adapters.lmeval.models  # noqa: F401  registers scitaste-baseline and scitaste-agent

    saved = sys.argv
    sys.argv = ["lm_eval", *args]
    try:
        cli_evaluate()
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int) else 1
    finally:
        sys.argv = saved
    return 0
