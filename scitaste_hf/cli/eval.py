"""Run lm-eval with scitaste-hf's models and tasks: every `lm_eval` argument passes through unchanged; the task
folder is added to --include_path and the scitaste models (scitaste-agent, scitaste-baseline) are registered
first.

usage: scitaste eval --model MODEL --model_args KEY=VALUE,... --tasks TASKS [lm_eval options]

    scitaste eval --model scitaste-baseline --tasks scitaste_pure_qa --metadata '{"data_dir": "DIR"}'
    scitaste eval --model scitaste-agent --model_args base_url=http://localhost:8000/v1,model=NAME
        --tasks scitaste --metadata '{"data_dir": "DIR"}' --output_path results --log_samples --use_cache cache

Data: --metadata '{"data_dir": DIR}' (a dataset folder, or a .jsonl/.parquet file), else $SCITASTE_DATA_DIR,
else the Hub dataset.
"""

from __future__ import annotations

import argparse

#: This command takes its arguments raw (they are lm_eval's), not through argparse.
PASSTHROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments are lm_eval's; see `lm_eval --help`."""


def _option(args: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in ``args``."""
    for k, arg in enumerate(args):
        if arg == name and k + 1 < len(args):
            return args[k + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _print_help() -> None:
    """scitaste's own usage, the --model_args of its models (from their docstrings), then where lm-eval's
    options are described."""
    import inspect

    try:
        from scitaste_hf.adapters.lmeval.models import AgentLM, BaselineLM
    except ImportError:
        AgentLM = BaselineLM = None
    print(__doc__)
    from scitaste_hf.modes import MODE_SPECS

    print("tasks (scitaste: the group of the paper's four modes):")
    for mode, spec in MODE_SPECS.items():
        print(f"    {spec.task:26} mode {mode}: {spec.about}; runs with {spec.runs_with}")
    print("    rtaste_judge               the rTaste judge task\n")
    for model in (AgentLM, BaselineLM):
        if model is not None:
            print(f"--model {model.name}\n    {_plain_text(inspect.cleandoc(model.__doc__ or ''))}\n")
    print("Every other option is lm_eval's and passes through unchanged: see `lm_eval --help` (or "
          "`lm_eval run --help`).")


def _plain_text(docstring: str) -> str:
    """A docstring as a terminal shows it: Sphinx roles (``:class:`~a.B```) as their names, ````x```` as ``x``."""
    import re

    text = re.sub(r":\w+:`~?([^`<]*?)(?: <[^`]*>)?`", lambda m: m[1].rsplit(".", 1)[-1] if "~" in m[0] else m[1],
                  docstring)
    lines = re.sub(r"``([^`]+)``", r"\1", text).split("\n")
    # a heading's underline, as long as the heading again
    return "\n".join("-" * len(lines[k - 1]) if k and set(line) == {"-"} and lines[k - 1].strip() else line
                     for k, line in enumerate(lines))


def _pairs(model_args: str | None) -> dict[str, str]:
    """``KEY=VALUE,...`` (``--model_args``) as a dict, keys stripped as lm-eval strips them."""
    return {key.strip(): value for key, value in
            (part.split("=", 1) for part in (model_args or "").split(",") if "=" in part)}


def _values(args: list[str], name: str) -> list[str]:
    """Every value of ``--name V1 V2 ...`` (up to the next option) or ``--name=V``, of each time it is given."""
    values: list[str] = []
    for k, arg in enumerate(args):
        if arg.startswith(name + "="):
            values.append(arg.split("=", 1)[1])
        elif arg == name:
            end = next((j for j in range(k + 1, len(args)) if args[j].startswith("--")), len(args))
            values += args[k + 1:end]
    return values


def _metadata(args: list[str]) -> dict:
    """``--metadata`` as lm-eval reads it: a JSON object, or ``KEY=VALUE`` words.

    Raises
    ------
    ScitasteError
        For a value that looks like JSON and is not (single quotes, bare keys), or is JSON but not an object,
        or a word without ``=``: lm-eval would stop later, or take the Hub dataset in place of the one meant.
    """
    import json

    from scitaste_hf.errors import InvalidInput

    merged: dict = {}
    for value in _values(args, "--metadata"):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError as exc:
            if "{" in value:
                raise InvalidInput(f"--metadata is not valid JSON ({exc.msg}, column {exc.colno}): {value}; use "
                                    "double quotes around keys and strings, e.g. --metadata "
                                    "'{\"data_dir\": \"DIR\"}'") from None
            if "=" not in value:
                raise InvalidInput(f"--metadata {value!r}: expected a JSON object or KEY=VALUE words, e.g. "
                                    "--metadata data_dir=DIR") from None
            key, found = value.split("=", 1)
            merged[key.strip()] = found
            continue
        if not isinstance(parsed, dict):
            raise InvalidInput(f"--metadata must be a JSON object or KEY=VALUE words, not {value}")
        merged.update(parsed)
    return merged


def _data_dir(args: list[str]) -> str | None:
    """The local data the tasks will read: ``data_dir`` in ``--metadata`` or ``--model_args`` (lm-eval hands the
    model's arguments to the tasks too), else ``$SCITASTE_DATA_DIR``; None when they will read the Hub."""
    from scitaste_hf import constants

    found = _metadata(args).get("data_dir") or _pairs(_option(args, "--model_args")).get("data_dir")
    return found or constants.read(constants.SCITASTE_DATA_DIR)


def _task_names() -> list[str]:
    """The task, group and tag names of the bundled task folders (read from their YAMLs, which hold lm-eval's
    ``!function`` tags that a plain YAML loader refuses)."""
    import re

    from scitaste_hf.resources import bundled_dir

    names: set[str] = set()
    for path in bundled_dir("lm_eval_tasks").rglob("*.yaml"):
        key = None
        for line in path.read_text(encoding="utf-8").splitlines():
            if match := re.match(r"(\w+):\s*([\w-]*)", line):
                key = match[1]
                if key in ("task", "group", "tag") and match[2]:
                    names.add(match[2])
            elif key == "tag" and (match := re.match(r"\s+-\s*([\w-]+)", line)):
                names.add(match[1])
    return sorted(names)


def _tasks_not_found(message: str) -> str:
    """lm-eval's ``Tasks not found: a, b`` as one line with the close names of the bundled tasks."""
    import difflib

    missing = [name.strip() for name in message.split(":", 1)[1].split(",") if name.strip()]
    known = _task_names()
    hints = []
    for name in missing:
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        hints.append(f"{name} (did you mean {' or '.join(close)}?)" if close else name)
    return (f"--tasks: no task named {', '.join(hints)}; scitaste's tasks are {', '.join(known)} (`scitaste eval "
            "--help`; `lm_eval ls tasks` lists lm-eval's own)")


def _named_baseline(args: list[str]) -> list[str]:
    """``args`` with ``model=scitaste-baseline`` added to the baseline's ``--model_args``: lm-eval names a run
    after ``model=`` there, and gives it a random name otherwise."""
    if _option(args, "--model") != "scitaste-baseline":
        return args
    for k, arg in enumerate(args):
        inline = arg.startswith("--model_args=")
        if (arg == "--model_args" and k + 1 < len(args)) or inline:
            value = arg.split("=", 1)[1] if inline else args[k + 1]
            if "model" in _pairs(value):
                return args
            named = f"{value},model=scitaste-baseline" if value.strip() else "model=scitaste-baseline"
            return [*args[:k], "--model_args", named, *args[k + (1 if inline else 2):]]
    return [*args, "--model_args", "model=scitaste-baseline"]


def run_passthrough(argv: list[str]) -> int:
    """Register the models, add the task path, and hand ``argv`` to lm-eval's own command line."""
    import os
    from pathlib import Path

    from scitaste_hf import constants
    from scitaste_hf.errors import InvalidInput, ScitasteError, TaskUnavailable

    if any(a in ("-h", "--help") for a in argv):
        _print_help()
        return 0
    if argv and argv[0] not in ("run", "ls", "validate") and not (_values(argv, "--tasks") or _values(argv, "-t")) \
            and not (_option(argv, "--config") or _option(argv, "-C")):
        raise InvalidInput("--tasks is required: e.g. --tasks scitaste_pure_qa (`scitaste eval --help` lists the "
                            "tasks)")
    if _data_dir(argv) is None:  # the tasks will read the Hub dataset: say now, not after lm-eval's start-up
        from scitaste_hf.net.hub import require_hub
        from scitaste_hf.schema import HUB_DATASET

        require_hub(f"dataset {HUB_DATASET} (the tasks' default data)",
                    "pass --metadata '{\"data_dir\": \"DIR\"}' with a local dataset folder, or set SCITASTE_DATA_DIR")
    from scitaste_hf.adapters.lmeval.run import run_lm_eval
    from scitaste_hf.resources import bundled_dir

    args = _named_baseline(list(argv))
    if "--include_path" not in args and not any(a.startswith("--include_path=") for a in args):
        args += ["--include_path", str(bundled_dir("lm_eval_tasks"))]
    output = _option(args, "--output_path")
    if output and constants.read(constants.SCITASTE_TRACE) is None:  # the traces go beside lm-eval's own output
        folder = Path(output).parent if output.endswith(".json") else Path(output)
        os.environ[constants.SCITASTE_TRACE] = str(folder / constants.DEFAULT_TRACE_FILE)
    try:
        return run_lm_eval(args)
    except TaskUnavailable as exc:
        raise ScitasteError(str(exc)) from None
    except ValueError as exc:
        if str(exc).startswith("Tasks not found:"):
            raise ScitasteError(_tasks_not_found(str(exc))) from None
        raise

