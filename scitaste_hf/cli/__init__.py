"""The ``scitaste`` command.

Each subcommand is a module with ``add_arguments(parser)`` and ``run(args) -> int`` (or, for a command that
hands its raw arguments to another tool, ``PASSTHROUGH = True`` and ``run_passthrough(argv)``); modules import
heavy libraries inside ``run`` only, so that ``scitaste --help`` stays fast. Commands of the core live in
:data:`CORE_COMMANDS`; the other top-level folders (dataset builder, Space) add theirs through the
``scitaste_hf.commands`` entry-point group, so the core never imports them.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from importlib.metadata import entry_points

from scitaste_hf.errors import ScitasteError

#: (name, module, one-line help) of the core's subcommands.
CORE_COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("demo", "scitaste_hf.cli.demo", "the main job offline: world -> dataset -> every mode -> leaderboard"),
    ("score", "scitaste_hf.cli.score", "score a predictions file against the gold labels (Scheme 1 and 2)"),
    ("report", "scitaste_hf.cli.report",
     "the paper's tables and findings for any runs: Markdown, HTML and PNG figures, every figure with its interval"),
    ("publish", "scitaste_hf.cli.publish",
     "push the metric modules, the leaderboard Space or a built dataset to the Hugging Face Hub"),
    ("space", "scitaste_hf.cli.space", "serve the leaderboard Space locally"),
    ("worker", "scitaste_hf.cli.worker", "evaluate the board's queued requests with lm-eval, as server-run results"),
    ("fetch", "scitaste_hf.sources.cli",
     "fetch OpenAlex/ADS/arXiv records as JSON lines (--cache-dir, --offline, --record)"),
    ("mirror", "scitaste_hf.cli.mirror", "serve an offline mirror of OpenAlex, ADS and arXiv (simulated or recorded)"),
    ("eval", "scitaste_hf.cli.eval", "run lm-eval with the scitaste models and tasks (lm_eval arguments pass through)"),
    ("preflight", "scitaste_hf.cli.preflight", "check a model endpoint on a few papers per mode before a large run"),
    ("evidence", "scitaste_hf.cli.evidence", "freeze the nine tools' evidence of a dataset (tool_evidence config)"),
    ("tasks-path", "scitaste_hf.cli.tasks_path", "print the folder of the lm-eval tasks (for --include_path)"),
    ("rtaste", "scitaste_hf.cli.rtaste", "score research-taste agents' registered experiments (rTaste)"),
    ("ratings", "scitaste_hf.cli.ratings", "expert ratings of the Space: agreement report, expert_ratings export"),
    ("weights", "scitaste_hf.cli.weights",
     "derive the index weights from records, or recover those a record set was built with"),
    ("index", "scitaste_hf.cli.index",
     "the Academic Taste Index of focal papers within an OpenAlex snapshot (DuckDB or Spark)"),
    ("release", "scitaste_hf.cli.release", "compare two releases: membership, drift, rank stability, runs re-scored"),
)


def first_sentence(text: str) -> str:
    """A command's one-line help from its docstring, when it names none: the first sentence, its lines joined,
    and of a long one the clause before its colon (``Build the SciTaste-Bench dataset: collect ...``)."""
    joined = " ".join(text.strip().split("\n\n")[0].split())
    end = joined.find(". ")
    sentence = (joined[:end] if end > 0 else joined).rstrip(".")
    head = sentence.split(": ", 1)[0]
    return head if len(sentence) > 80 and len(head) < len(sentence) else sentence


def _commands() -> list[tuple[str, str, str]]:
    commands = list(CORE_COMMANDS)
    for ep in entry_points(group="scitaste_hf.commands"):
        # An entry point's value is the command module's import path; its help is the module docstring.
        commands.append((ep.name, ep.value, ""))
    return commands


def whole_number(low: int):
    """An argparse ``type``: an int of at least ``low``, refused while parsing, before any work.

    :param low: smallest value accepted.
    """
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value

    return parse


def iso_date(text: str):
    """An argparse ``type``: an ISO date (``YYYY-MM-DD``), refused while parsing, before any work."""
    from datetime import date

    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``scitaste`` with every registered subcommand."""
    from scitaste_hf import __version__

    parser = argparse.ArgumentParser(
        prog="scitaste",
        description="SciTaste-Bench on the Hugging Face stack: build the dataset, evaluate models, score, publish.",
    )
    parser.add_argument("--version", action="version", version=f"scitaste-hf {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name, help_text in _commands():
        module = importlib.import_module(module_name)
        # The module docstring is the description; kept as written, so that its example commands stay one a line.
        cmd = sub.add_parser(name, help=help_text or first_sentence(module.__doc__ or ""),
                             description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=getattr(module, "run", None))  # pass-through commands run before argparse
    return parser


def _passthrough(argv: list[str]):
    """The raw-argument runner of a command that hands its arguments to another tool (``scitaste eval``)."""
    if not argv or argv[0] in ("-h", "--help"):
        return None
    for name, module_name, _ in CORE_COMMANDS:
        if name == argv[0]:
            module = importlib.import_module(module_name)
            return module.run_passthrough if getattr(module, "PASSTHROUGH", False) else None
    return None


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``scitaste`` console script."""
    argv = sys.argv[1:] if argv is None else list(argv)
    # httpx logs every request at INFO, and lm-eval and datasets turn INFO logging on: a demo's evidence stage
    # printed 1,652 "HTTP Request:" lines. Its warnings still show.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    passthrough = _passthrough(argv)
    args = None if passthrough else build_parser().parse_args(argv)
    try:
        return int(passthrough(argv[1:]) if passthrough else args._run(args) or 0)
    except ScitasteError as exc:
        print(f"scitaste: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        # A file or folder the command was given cannot be read or written (no permission, a folder where a
        # file belongs, a read-only or full disk): one line that names it, not a traceback. An OSError
        # without a file (a refused connection, a closed pipe) is not about user input and stays as it is.
        if exc.filename is None:
            raise
        print(f"scitaste: error: cannot read/write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("scitaste: interrupted", file=sys.stderr)
        return 130
