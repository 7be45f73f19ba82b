"""Fill the generated blocks of the docs from the code that owns each fact.

A page marks a block with ``<!-- generated: NAME -->`` ... ``<!-- /generated -->``; this script replaces what is
between the two markers with the text of the generator ``NAME`` below. Every generator reads its values from
``scitaste_hf``: constants are imported, or read from the module's source where importing it would be slow
(:func:`constants`), and formulas that are literals inside a function are quoted line for line from it
(:func:`quote`), so that a page can never state another number than the code.

    python docs/generate.py           # rewrite the blocks of every page
    python docs/generate.py --check   # exit 1 and list the stale or unknown blocks, change nothing

The pages are ``docs/*.md``, ``ARCHITECTURE.md``, ``CONTRIBUTING.md``, ``README.md``, the metric cards, the task
folders' READMEs, the Inspect tasks' card and the Space's card; ``tests/test_docs.py`` runs the check.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import functools
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.DOTALL)
GENERATORS: dict[str, Callable[[], str]] = {}


def pages() -> list[Path]:
    """The pages whose blocks are generated."""
    return [*sorted((ROOT / "docs").glob("*.md")),
            ROOT / "ARCHITECTURE.md", ROOT / "CONTRIBUTING.md", ROOT / "README.md",
            *sorted(ROOT.glob("metrics/*/README.md")), *sorted(ROOT.glob("lm_eval_tasks/*/README.md")),
            ROOT / "scitaste_hf" / "adapters" / "inspect" / "README.md", ROOT / "space" / "README.md"]


def generator(name: str):
    """Register the function as the generator of block ``name``."""

    def register(func: Callable[[], str]) -> Callable[[], str]:
        GENERATORS[name] = functools.cache(func)
        return func

    return register


# -- reading the code without importing it --------------------------------------------------------------------

_SAFE = {name: getattr(builtins, name) for name in ("dict", "tuple", "list", "set", "frozenset", "float", "int",
                                                    "str", "len", "sorted", "zip", "range")}


def _source(module: str) -> tuple[Path, str]:
    parts = module.split(".")
    path = ROOT.joinpath(*parts).with_suffix(".py")
    if not path.is_file():
        path = ROOT.joinpath(*parts, "__init__.py")
    return path, path.read_text("utf-8")


@functools.cache
def constants(module: str) -> dict[str, object]:
    """The module-level constants of ``module`` (a dotted name under the repository), evaluated from its source:
    each top-level assignment whose value is built of literals and constants assigned before it. Assignments that
    need anything else (a call of the module's own functions, an imported name) are left out."""
    _, text = _source(module)
    env: dict[str, object] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        try:
            result = eval(compile(ast.Expression(value), module, "eval"), {"__builtins__": _SAFE}, dict(env))
        except Exception:  # not a constant expression of literals
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                env[target.id] = result
            elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
                if isinstance(result, tuple) and len(result) == len(target.elts):
                    env.update({e.id: v for e, v in zip(target.elts, result)})
    return env


def const(module: str, name: str) -> object:
    """One constant of :func:`constants`; an error when the module has no such constant (any more)."""
    found = constants(module)
    if name not in found:
        raise KeyError(f"{module} has no module-level constant {name}")
    return found[name]


def quote(module: str, function: str, *patterns: str, flat: bool = False) -> str:
    """The lines of ``function`` in ``module`` that match each regex of ``patterns``, in source order, dedented
    (``flat``: each line on its own), as a Python code block; an error when a pattern matches nothing (the code
    changed: the page must too)."""
    _, text = _source(module)
    tree = ast.parse(text)
    node = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function), None)
    if node is None:
        raise KeyError(f"{module} has no function {function}")
    lines = text.splitlines()[node.lineno - 1:node.end_lineno]
    chosen: list[str] = []
    for pattern in patterns:
        hits = [line for line in lines if re.search(pattern, line)]
        if not hits:
            raise KeyError(f"{module}.{function} has no line matching {pattern!r}")
        chosen += [h for h in hits if h not in chosen]
    chosen.sort(key=lines.index)
    indent = min(len(line) - len(line.lstrip()) for line in chosen)
    body = [line.strip() if flat else line[indent:] for line in chosen]
    return f"`{module}.{function}`:\n\n```python\n" + "\n".join(body) + "\n```"


def table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> str:
    """A Markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _pct(x: float) -> str:
    return f"{100 * x:g}%"


# -- the generators ---------------------------------------------------------------------------------------------


@generator("dimensions")
def _dimensions() -> str:
    from scitaste_hf.schema import DIMENSION_LETTERS, DIMENSIONS

    rows = [(DIMENSION_LETTERS[k], f"`{k}`", f"[{DIMENSION_LETTERS[k]}. {k.replace('_', ' ').capitalize()}]"
             f"(index-dimensions.md#{DIMENSION_LETTERS[k].lower()}-{k.replace('_', '-')})") for k in DIMENSIONS]
    return ("Owner: `scitaste_hf.schema.DIMENSIONS` and `DIMENSION_LETTERS`.\n\n"
            + table(("letter", "key", "definition"), rows))


@generator("disciplines")
def _disciplines() -> str:
    from scitaste_hf.taxonomy import PACKAGED, load_taxonomy

    default, extended = load_taxonomy("default"), load_taxonomy("extended")
    rows = [(f"`{d.name}`", f"`{d.code}`", f"{d.citation_culture:+g}", "default" if d in default.disciplines
             else "extended", len(extended.of(d.name)), "; ".join(f"`{c.id}` {c.name}" for c in extended.of(d.name)))
            for d in extended.disciplines]
    return (f"Owners: `scitaste_hf/{PACKAGED['default']}` (the default release; `scitaste_hf.schema.DISCIPLINES` is "
            f"its disciplines, in order) and `scitaste_hf/{PACKAGED['extended']}` (`extends: default`).\n\n"
            + table(("discipline", "code", "citation culture", "taxonomy", "sub-disciplines", "cells (id and name)"),
                    rows)
            + f"\n\n{len(default.cells)} sub-disciplines in the default taxonomy ({len(default.disciplines)} "
              f"disciplines), {len(extended.cells)} in the extended one ({len(extended.disciplines)}).")


@generator("record-schema")
def _record_schema() -> str:
    from collections.abc import Mapping

    from scitaste_hf.schema import DIMENSIONS, RECORD_FIELDS

    rows = []
    for key, dtype in RECORD_FIELDS.items():
        if isinstance(dtype, Mapping):
            if list(dtype) != list(DIMENSIONS) or len(set(dtype.values())) != 1:
                raise KeyError(f"RECORD_FIELDS: {key} is not one type for each dimension key")
            kind = f"struct of the {len(DIMENSIONS)} dimension keys, each {next(iter(dtype.values()))}"
        else:
            kind = dtype
        rows.append((f"`{key}`", kind))
    return "Owner: `scitaste_hf.schema.RECORD_FIELDS`.\n\n" + table(("field", "type"), rows)


@generator("dataset-files")
def _dataset_files() -> str:
    from scitaste_hf.schema import BIBCODE_MAP_FILE, HUB_DATASET, JOURNAL_TIERS, SPLITS

    ev = constants("scitaste_hf.agent.evidence")
    rows = [("Hub dataset", f"`{HUB_DATASET}`", "`scitaste_hf.schema.HUB_DATASET`"),
            ("splits of the default config", ", ".join(f"`{s}`" for s in SPLITS), "`scitaste_hf.schema.SPLITS`"),
            ("split files", ", ".join(f"`data/{s}-*.parquet`" for s in SPLITS), "`scitaste_hf/builder/layout.py`"),
            ("bibcode map", f"`{BIBCODE_MAP_FILE}`", "`scitaste_hf.schema.BIBCODE_MAP_FILE`"),
            ("evidence config", f"`{ev['CONFIG']}` (split `train`)", "`scitaste_hf.agent.evidence.CONFIG`"),
            ("evidence files", f"`{ev['CONFIG_PATH']}`", "`scitaste_hf.agent.evidence.CONFIG_PATH`"),
            ("journal tiers", ", ".join(f"`{t}`" for t in JOURNAL_TIERS) + " or null",
             "`scitaste_hf.schema.JOURNAL_TIERS`")]
    return table(("what", "value", "owner"), rows)


@generator("weights")
def _weights() -> str:
    from importlib import resources

    from scitaste_hf.schema import DIMENSION_LETTERS, DIMENSIONS
    from scitaste_hf.weights import DEFAULT_WEIGHTS, default_contributions

    config = json.loads(resources.files("scitaste_hf").joinpath("config/weights_default.json").read_text("utf-8"))
    raw, assumed = default_contributions()
    total = sum(raw.values())
    interval = config["weights_interval"]
    rows = [(DIMENSION_LETTERS[k], f"`{k}`", f"{raw[k]:g}", f"{DEFAULT_WEIGHTS[k]:.6f}",
             "assumed: equal split" if k in assumed else "published",
             f"[{interval[k][0]:g}, {interval[k][1]:g}]") for k in DIMENSIONS]
    middle = sum(raw[k] for k in assumed)
    return ("Owner: `scitaste_hf/config/weights_default.json`, loaded by `scitaste_hf.weights.load_weights` into "
            "`DEFAULT_WEIGHTS`.\n\n"
            + table(("letter", "key", "raw contribution (%)", "weight", "status",
                     "95% interval (this package's, not the paper's)"), rows)
            + f"\n\nRaw total {total:.2f}; weight = raw / total. The dimensions marked *assumed* share "
              f"{middle:.2f} equally ({middle / len(assumed):g} each). "
              f"The file's own note: \"{config['assumption']}\". The interval: \"{config['interval_note']}\"")


@generator("subparameters")
def _subparameters() -> str:
    from scitaste_hf.schema import DIMENSION_LETTERS

    sub = const("scitaste_hf.index.dimensions", "SUBPARAMETERS")
    rows = [(DIMENSION_LETTERS[k], f"`{k}`", ", ".join(f"`{p}`" for p in params)) for k, params in sub.items()]
    return ("Owner: `scitaste_hf.index.dimensions.SUBPARAMETERS` (column order of each matrix).\n\n"
            + table(("letter", "dimension", "sub-parameters"), rows)
            + f"\n\n`knn10_distance` averages the {const('scitaste_hf.index.dimensions', 'NEIGHBOURS')} nearest "
              "papers (`NEIGHBOURS`).")


@generator("formula-normalise")
def _formula_normalise() -> str:
    return (quote("scitaste_hf.index.normalise", "percentile", r"return 100\.0 \* below")
            + "\n\n" + quote("scitaste_hf.index.normalise", "mean_rank", r"if values\.size == 1",
                               r"return np\.array\(\[", r"order = ", r"ordered = ", r"starts = ", r"ends = ",
                               r"ranks = ", r"ranks\[order\] = ", r"return 100\.0 \* \(ranks"))


@generator("formula-citation-impact")
def _formula_a() -> str:
    return quote("scitaste_hf.index.dimensions", "citation_impact", r"log_part = ", r"return 0\.5")


@generator("formula-journal-impact")
def _formula_g() -> str:
    tiers = const("scitaste_hf.index.journals", "TIER_SCORES")
    return (quote("scitaste_hf.index.dimensions", "journal_impact", r"return 0\.70")
            + "\n\nTier scores (`scitaste_hf.index.journals.TIER_SCORES`): "
            + ", ".join(f"Q{i + 1} / zone {i + 1} = {s:g}" for i, s in enumerate(tiers)) + ", unknown = 0.")


@generator("formula-cd")
def _formula_cd() -> str:
    return quote("scitaste_hf.index.cd", "cd", r"citers = n_i \+ n_j", r"total = citers", r"np\.divide\(n_i - n_j")


@generator("formula-composite")
def _formula_composite() -> str:
    return quote("scitaste_hf.weights", "composite", r"return round\(")


#: The benchmark paper's worked example (its published numbers, not a constant of the code): dimensions A..G and
#: the composite it prints.
WORKED_EXAMPLE = ("1998PhRvA..58.3983S", (51.55, 35.33, 34.39, 79.22, 44.51, 13.77, 57.58), 46.36)


@generator("worked-example")
def _worked_example() -> str:
    from scitaste_hf.schema import DIMENSIONS
    from scitaste_hf.weights import composite

    bibcode, dims, printed = WORKED_EXAMPLE
    ours = composite(dict(zip(DIMENSIONS, dims)))
    return (f"The paper's worked example `{bibcode}` has dimensions A..G = {', '.join(f'{d:g}' for d in dims)} and "
            f"prints the composite {printed:g}. `scitaste_hf.weights.composite` with the default weights gives "
            f"**{ours:.2f}** (a difference of {ours - printed:+.2f}).")


@generator("weights-derive")
def _weights_derive() -> str:
    c = constants("scitaste_hf.index.weights")
    methods = ", ".join(f"`{m}` = {', '.join(v)}" for m, v in c["METHODS"].items())
    return (quote("scitaste_hf.index.weights", "_model", r'"(linear|ridge|lasso|random_forest|gradient_boosting)"')
            + f"\n\nMethods (`METHODS`): {methods}. Seed `SEED` = {c['SEED']}; at least `MIN_RECORDS_DERIVE` = "
              f"{c['MIN_RECORDS_DERIVE']} records.\n\n"
            + quote("scitaste_hf.index.weights", "_analysis", r"train_test_split\(x", r"KFold\("))


@generator("weights-by-discipline")
def _weights_by_discipline() -> str:
    from scitaste_hf.index import weights
    from scitaste_hf.scoring.bootstrap import N_RESAMPLES

    return (f"At least `MIN_RECORDS_BY_DISCIPLINE` = {weights.MIN_RECORDS_BY_DISCIPLINE} records per discipline; "
            f"the top decile is the top `TOP_SHARE` = {weights.TOP_SHARE:g} of a discipline's papers; "
            f"`--n-resamples` defaults to `N_RESAMPLES` = {N_RESAMPLES:,}, `--seed` to 0.\n\n"
            f"**Rule** (`VERDICT_RULE`): {weights.VERDICT_RULE}. `SHARED_SPEARMAN_MIN` = "
            f"{weights.SHARED_SPEARMAN_MIN:g}; `SHARED_WAPE_MAX` = `WAPE_BANDS[0].high` = "
            f"{weights.SHARED_WAPE_MAX:g}.")


@generator("scheme1-formula")
def _scheme1_formula() -> str:
    return (quote("scitaste_hf.scoring.scheme1", "part_a_batch",
                  r"s_rho=", r"s_r=", r"s_mae=s_mae", r"s_bias=", r'out\["part_a"\] =', flat=True)
            + "\n\n" + quote("scitaste_hf.scoring.scheme1", "part_b_batch", r'out\["part_b"\] =',
                               r'"weighted_dimension_accuracy": 100', flat=True)
            + "\n\n" + quote("scitaste_hf.scoring.scheme1", "scheme1_of", r"return sum", flat=True)
            + "\n\n" + _scheme1_summary() + "\n\n" + quote(
        "scitaste_hf.scoring.scheme1", "_ratio_score", r"with np\.errstate", r"ratio =", r"return np\.where"))


@generator("scheme1-summary")
def _scheme1_summary() -> str:
    from scitaste_hf.scoring.describe import scheme1_text

    return scheme1_text() + " Owner: `scitaste_hf.schema.SCHEME1_POINTS`, `SCHEME1_PARTS`, `SCHEME1_GRADES`."


@generator("weights-note")
def _weights_note() -> str:
    from scitaste_hf.weights import weights_note

    return weights_note()


@generator("benchmark-size")
def _benchmark_size() -> str:
    from scitaste_hf.builder.sample import SELECTED_PER_DISCIPLINE
    from scitaste_hf.schema import DISCIPLINES

    names = [d.lower() for d in DISCIPLINES]
    return (f"{SELECTED_PER_DISCIPLINE * len(DISCIPLINES)} papers in the default release "
            f"({SELECTED_PER_DISCIPLINE} in each of {', '.join(names[:-1])} and {names[-1]})")


@generator("discipline-names")
def _discipline_names() -> str:
    from scitaste_hf.schema import DISCIPLINES
    from scitaste_hf.taxonomy import packaged_disciplines

    added = [d.replace("_", " ") for d in packaged_disciplines() if d not in DISCIPLINES]
    return (f"{len(DISCIPLINES)} disciplines ({', '.join(DISCIPLINES)}; `scitaste build --taxonomy extended` adds "
            f"{', '.join(added[:-1])} and {added[-1]})")


@generator("scheme1-grades")
def _scheme1_grades() -> str:
    from scitaste_hf.schema import SCHEME1_GRADES

    rows = [(f"at least {t:g}" if t > float("-inf") else "below the others", g) for t, g in SCHEME1_GRADES]
    return "Owner: `scitaste_hf.schema.SCHEME1_GRADES`.\n\n" + table(("Scheme 1", "grade"), rows)


@generator("wape-bands")
def _wape_bands() -> str:
    from scitaste_hf.schema import WAPE_BANDS

    rows = []
    for i, b in enumerate(WAPE_BANDS):
        last = i == len(WAPE_BANDS) - 1
        rows.append((b.grade, f"[{_pct(b.low)}, {_pct(b.high)}{']' if last else ')'}",
                     f"{b.score_at_low:g} -> {b.score_at_high:g}" + (", and 0 beyond" if last else "")))
    return "Owner: `scitaste_hf.schema.WAPE_BANDS`.\n\n" + table(("grade", "WAPE", "score"), rows)


@generator("wape-checks")
def _wape_checks() -> str:
    from scitaste_hf.scoring import wape, wape_grade, wape_score

    rows = [(_pct(w), f"{wape_score(w):.2f}", wape_grade(w)) for w in (0.0, 0.05, 0.131, 0.3, 0.5, 0.744, 1.0, 1.2)]
    example = wape([50, 40], [50, 50])
    return (table(("WAPE", "score", "grade"), rows)
            + f"\n\n`wape([50, 40], [50, 50])` = {example:g} (|0| + |10| over 50 + 50).")


@generator("bootstrap")
def _bootstrap() -> str:
    b = constants("scitaste_hf.scoring.bootstrap")
    r = constants("scitaste_hf.scoring.ranks")
    rows = [("`N_RESAMPLES`", f"{b['N_RESAMPLES']:,}", "resamples of the papers per interval"),
            ("`CONFIDENCE`", b["CONFIDENCE"], "coverage of every interval"),
            ("`SEED`", b["SEED"], "seed of the resampling"),
            ("`MIN_DEFINED`", b["MIN_DEFINED"], "share of resamples on which a statistic must be defined"),
            ("`MAX_RESAMPLES`", f"{b['MAX_RESAMPLES']:,}", "most resamples accepted"),
            ("`RANK_RESAMPLES`", r["RANK_RESAMPLES"], "resamples behind a board's rank intervals "
                                                      "(`scitaste_hf.scoring.ranks`)")]
    return "Owner: `scitaste_hf.scoring.bootstrap` unless named.\n\n" + table(("constant", "value", "meaning"), rows)


@generator("n-resamples")
def _n_resamples() -> str:
    return (f"`N_RESAMPLES` (`scitaste_hf.scoring.bootstrap`), the default of every `n_resamples`, is "
            f"{const('scitaste_hf.scoring.bootstrap', 'N_RESAMPLES'):,}.")


@generator("floors")
def _floors() -> str:
    floors = const("scitaste_hf.scoring.floors", "FLOORS")
    return ("Owner: `scitaste_hf.scoring.floors.FLOORS`, in reporting order: "
            + ", ".join(f"`{f}`" for f in floors) + f". Skill is measured over the first, `{floors[0]}`.")


#: What each failure reason means; the generator refuses a reason of the code that is not described here.
FAILURE_MEANINGS = {
    "no_json": "the reply holds no JSON object at all (or one nested too deeply to decode)",
    "schema": "no object with `innovation_score` or `dimension_scores`, a missing or extra dimension, a quoted "
              "number or a bool, or a predictions line with neither answer fields, `response` nor `failure`",
    "out_of_range": "a NaN, infinite or out-of-range number (scores 0-100, `confidence` 0-1)",
    "api_error": "the endpoint failed (an HTTP error, a reply that is not a chat completion); also a predictions "
                 "line whose `response` is null",
    "timeout": "a request or the whole paper ran past its time limit",
    "missing": "a gold paper without a prediction line (or a `None` prediction in an `evaluate` metric)",
    "other": "anything else: an unknown mode, a model that kept calling tools in round 2, an unknown reason in a "
             "`failure` line",
}


@generator("failure-reasons")
def _failure_reasons() -> str:
    from scitaste_hf.schema import FAILURE_REASONS

    unknown = set(FAILURE_REASONS) ^ set(FAILURE_MEANINGS)
    if unknown:
        raise KeyError(f"describe the failure reasons {sorted(unknown)} in docs/generate.py FAILURE_MEANINGS")
    rows = [(f"`{r}`", FAILURE_MEANINGS[r]) for r in FAILURE_REASONS]
    return "Owner: `scitaste_hf.schema.FAILURE_REASONS`.\n\n" + table(("reason", "when"), rows)


@generator("answer-instruction")
def _answer_instruction() -> str:
    from scitaste_hf.prompts import ABSTRACT_CHARS, ANSWER_INSTRUCTION

    return (f"Abstracts are cut at `ABSTRACT_CHARS` = {ABSTRACT_CHARS} characters (at the last space before it, "
            "then ` ...`). The instruction (`scitaste_hf.prompts.ANSWER_INSTRUCTION`), verbatim:\n\n```text\n"
            + ANSWER_INSTRUCTION + "\n```")


@generator("modes")
def _modes() -> str:
    from scitaste_hf.modes import MODE_SPECS

    round_one = {"none": "no tools", "fixed": "made by the harness", "live": "the model's own calls"}
    rows = [(f"`{m}`", f"`{s.task}`", round_one[s.tools], "yes" if s.search else "no",
             re.sub(r"scitaste-agent|--metadata '[^']*'", lambda m: f"`{m[0]}`", s.runs_with), s.about)
            for m, s in MODE_SPECS.items()]
    return ("Owner: `scitaste_hf.modes.MODE_SPECS`.\n\n"
            + table(("mode", "lm-eval task", "round 1", "provider search", "runs with", "what the model gets"), rows))


@generator("inspect-tasks")
def _inspect_tasks() -> str:
    from scitaste_hf.modes import MODE_SPECS

    native = constants("scitaste_hf.adapters.inspect.tasks")["NATIVE_SEARCH"]
    searching = "a model of " + ", ".join(f"`{p}/`" for p in native)
    round_one = {"none": "no tools", "fixed": "tool messages made by the harness", "live": "the model's own calls"}
    rows = [(f"`scitaste_hf/{s.task}`", f"`{m}`", round_one[s.tools], searching if s.search else "any model",
             s.about) for m, s in MODE_SPECS.items()]
    return ("Owner: `scitaste_hf.modes.MODE_SPECS`; the providers with their own search: "
            "`scitaste_hf.adapters.inspect.tasks.NATIVE_SEARCH`.\n\n"
            + table(("task", "mode", "round 1", "runs with", "what the model gets"), rows))


@generator("citation")
def _citation() -> str:
    from scitaste_hf.schema import CITATION

    return "```bibtex\n" + CITATION + "```"


@generator("tools")
def _tools() -> str:
    c = constants("scitaste_hf.agent.tools")
    rows = [(i, f"`{name}`", text) for i, (name, text) in enumerate(c["DESCRIPTIONS"].items(), start=1)]
    return ("Owner: `scitaste_hf.agent.tools.DESCRIPTIONS` (the text the model is given).\n\n"
            + table(("#", "tool", "returns"), rows)
            + f"\n\nLists in a result keep at most `MAX_ITEMS` = {c['MAX_ITEMS']} items (counts stay complete); "
              f"`semantic_neighbours` returns the {c['NEIGHBOURS']} nearest (`NEIGHBOURS`).")


@generator("agent-messages")
def _agent_messages() -> str:
    from scitaste_hf import schema
    from scitaste_hf.agent import loop

    return ("Owner: `scitaste_hf.agent.loop`; the failure text: `scitaste_hf.schema`.\n\n"
            + table(("constant", "value"), [
                ("`REVIEWER` (system message)", loop.REVIEWER),
                ("`ROUND_ONE` (after the paper block)", loop.ROUND_ONE),
                ("`ROUND_TWO`", "`You have the tools' evidence. ` + the answer instruction"),
                ("`EVIDENCE_HEADER` (text rendering)", loop.EVIDENCE_HEADER),
                ("`MAX_CALLS`", loop.MAX_CALLS),
                ("`FAILURE_PREFIX`", f"`{schema.FAILURE_PREFIX}`"),
                ("`TRANSIENT_FAILURES`", ", ".join(f"`{r}`" for r in schema.TRANSIENT_FAILURES))]))


@generator("profiles")
def _profiles() -> str:
    from scitaste_hf.agent.chat import PROFILES

    rows = [(f"`{n}`", "yes" if p.temperature_with_tools else "no", p.max_tokens,
             f"`{json.dumps(p.search)}`" if p.search else "none", "yes" if p.answer_schema else "no",
             "yes" if p.tool_roles else "no (round 1 as text)") for n, p in PROFILES.items()]
    return ("Owner: `scitaste_hf.agent.chat.PROFILES`.\n\n"
            + table(("profile", "temperature with tools", "max tokens", "web search fields", "answer schema",
                     "tool roles"), rows))


@generator("task-metrics")
def _task_metrics() -> str:
    from scitaste_hf.taxonomy import packaged_disciplines

    lm = constants("scitaste_hf.adapters.lmeval.tasks")
    overall = ("scheme1", "scheme2", "wape", "coverage", *lm["INTERVALS"], *lm["SKILLS"])
    return ("Owner: `scitaste_hf.adapters.lmeval.tasks` (`OVERALL`, `aggregations`, `higher_is_better`). The task "
            "YAMLs list no metric: the task class `ScitasteTask` supplies lm-eval's `aggregation()` and "
            "`higher_is_better()`, for the overall metrics and for `scheme2_<discipline>` of every discipline of "
            "its documents, a custom taxonomy's included.\n\n"
            "Overall (every sample): " + ", ".join(f"`{m}`" for m in overall)
            + ". Lower is better for " + ", ".join(f"`{m}`" for m in sorted(lm["LOWER_IS_BETTER"]))
            + " only.\n\nPer discipline (the samples of each discipline the run's papers hold), for the packaged "
            "taxonomies: " + ", ".join(f"`scheme2_{d}`" for d in packaged_disciplines())
            + ".\n\n`evidence_as` (`EVIDENCE_AS`): " + ", ".join(f"`{v}`" for v in lm["EVIDENCE_AS"]) + ".")


@generator("statuses")
def _statuses() -> str:
    s = constants("scitaste_hf.leaderboard.store")
    return ("Owner: `scitaste_hf.leaderboard.store`. Statuses (`STATUSES`): "
            + ", ".join(f"`{x}`" for x in s["STATUSES"]) + ". Run kinds (`KINDS`): "
            + ", ".join(f"`{x}`" for x in s["KINDS"]) + ". Renamed on open (`RENAMED_STATUSES`): "
            + ", ".join(f"`{a}` -> `{b}`" for a, b in s["RENAMED_STATUSES"].items()) + ".")


@generator("integrity")
def _integrity() -> str:
    c = constants("scitaste_hf.leaderboard.integrity")
    names = ("RULE_VERSION", "MIN_PAPERS", "COPY_SHARE", "COPY_TOLERANCE", "RANKED_SHARE", "RANKED_TOLERANCE",
             "RANKED_MIN_PAPERS", "COPY_SPEARMAN", "FIT_BAND", "EXACT_TOLERANCE")
    return ("Owner: `scitaste_hf.leaderboard.integrity`.\n\n"
            + table(("constant", "value"), [(f"`{n}`", c[n]) for n in names]))


@generator("service-limits")
def _service_limits() -> str:
    c = constants("scitaste_hf.leaderboard.service")
    limit, window = c["RATE_LIMIT"]
    return ("Owner: `scitaste_hf.leaderboard.service`.\n\n" + table(("constant", "value"), [
        ("`RATE_LIMIT`", f"{limit} submissions per {window:g} s per submitter"),
        ("`MAX_BYTES`", f"{c['MAX_BYTES']:,} bytes (predictions file)"),
        ("`MAX_EVIDENCE_BYTES`", f"{c['MAX_EVIDENCE_BYTES']:,} bytes (each evidence file)"),
        ("`FLOOR_NAMES`", "; ".join(f"`{k}`: {v}" for k, v in c["FLOOR_NAMES"].items()))]))


def _environment_rows(names: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """(variable, what it is) of the variables of :mod:`scitaste_hf.constants`, from the ``#:`` comment above each
    name, in :data:`~scitaste_hf.constants.VARIABLES`' order; a default named by its constant is shown as its
    value."""
    c = constants("scitaste_hf.constants")
    comments: dict[str, str] = {}
    above: list[str] = []
    for line in _source("scitaste_hf.constants")[1].splitlines():
        if line.startswith("#:"):
            above.append(line[2:].strip())
            continue
        if (name := line.split(" = ", 1)[0]) in c["VARIABLES"] and above:
            comments[name] = " ".join(above)
        above = []

    def plain(text: str) -> str:
        text = re.sub(r":data:`(DEFAULT_\w+)`", lambda m: f"`{c[m.group(1)]}`", text)
        return re.sub(r":\w+:`~?([\w.]+)`", r"`\1`", text).replace("``", "`")

    return [(f"`{n}`", plain(comments[n])) for n in (names or c["VARIABLES"])]


@generator("environment")
def _environment() -> str:
    return ("Owner: `scitaste_hf.constants` (every read of these variables goes through it; the Space uses the same "
            "names).\n\n" + table(("variable", "what it is"), _environment_rows()))


@generator("space-environment")
def _space_environment() -> str:
    service = constants("scitaste_hf.leaderboard.service")
    limit, window = service["RATE_LIMIT"]
    rows = _environment_rows(("SCITASTE_DATA", "SCITASTE_GOLD", "HF_TOKEN", "SCITASTE_RESULTS_REPO",
                              "SCITASTE_SUBMIT_LIMIT", "SCITASTE_SEALED_KEY"))
    return (table(("variable", "what it is"), rows)
            + f"\n\nThe board's `RATE_LIMIT` is `{limit}/{window:g}`; rejected attempts have a separate bound of "
            f"{service['ATTEMPTS_PER_ACCEPTED']} times the limit. Owner: `scitaste_hf.constants`.")


@generator("rating-guide")
def _rating_guide() -> str:
    from scitaste_hf.ratings.guide import GUIDE, NUMBERS, SCALE, label

    return ("Owner: `scitaste_hf.ratings.guide.GUIDE` (the Annotate tab shows the same text).\n\n"
            f"Every slider: {SCALE}\n\n"
            + table(("slider", "rate", "the index measures"), [(label(n), GUIDE[n].rate, GUIDE[n].index)
                                                                for n in NUMBERS]))


@generator("ratings-constants")
def _ratings_constants() -> str:
    a, s, v = (constants(f"scitaste_hf.ratings.{m}") for m in ("agreement", "store", "service"))
    limit, window = v["RATE_LIMIT"]
    rows = [(f"`{n}` (agreement)", a[n]) for n in ("MIN_RATERS", "MIN_PAPERS", "MIN_JUDGED", "FLAG_RATIO",
                                                    "TARGET_RELIABILITY", "TARGET_HALF_WIDTH")]
    rows += [("`BIN_EDGES` (agreement)", ", ".join(f"{x:g}" for x in a["BIN_EDGES"])),
             ("`LEASE_S` (store)", f"{s['LEASE_S']:g} s"), ("`PSEUDONYM_HEX` (store)", s["PSEUDONYM_HEX"]),
             ("`SALT_BYTES` (store)", s["SALT_BYTES"]),
             ("`RATE_LIMIT` (service)", f"{limit} ratings and skips per {window:g} s per rater"),
             ("`BLIND_FIELDS` (service)", ", ".join(f"`{f}`" for f in v["BLIND_FIELDS"])),
             ("`N_RUNS` (service)", v["N_RUNS"])]
    return "Owner: `scitaste_hf.ratings` (module named).\n\n" + table(("constant", "value"), rows)


@generator("rtaste-constants")
def _rtaste_constants() -> str:
    s = constants("scitaste_hf.rtaste.schema")
    rows = [(f"`{n}`", s[n]) for n in ("N_MVES", "N_AUDITORS", "N_NOVELTY_JUDGES", "N_REVIEWERS", "VALUE_MAX")]
    rows += [("`RELATIONS`", ", ".join(f"`{r}`" for r in s["RELATIONS"])),
             ("`NOVELTY_LABELS`", ", ".join(f"`{r}`" for r in s["NOVELTY_LABELS"])),
             ("`ORGANISATIONS`", ", ".join(f"`{r}`" for r in s["ORGANISATIONS"])),
             ("`VALUABLE_MIN` (report)", const("scitaste_hf.rtaste.report", "VALUABLE_MIN")),
             ("`RANDOM_TOP1` (metrics)", const("scitaste_hf.rtaste.metrics", "RANDOM_TOP1")),
             ("`UNIT_SCALES` (events)", ", ".join(f"`{u}` = {v:g}" for u, v in
                                                  const("scitaste_hf.rtaste.events", "UNIT_SCALES").items()))]
    return "Owner: `scitaste_hf.rtaste.schema` unless named.\n\n" + table(("constant", "value"), rows)


@generator("rtaste-protocol")
def _rtaste_protocol() -> str:
    from scitaste_hf.rtaste_protocol.limits import DEFAULT_LIMITS

    propose, rerun = constants("scitaste_hf.rtaste_protocol.propose"), constants("scitaste_hf.rtaste_protocol.rerun")
    rows = [(f"`{n}` (propose)", propose[n]) for n in ("MAX_SEARCHES", "SEARCH_RESULTS", "FULL_TEXT_CHARS")]
    rows += [(f"`{n}` (rerun)", f"`{rerun[n]}`") for n in ("MVE_FILE", "STATISTIC_PREFIX", "TOKEN_VARIABLE")]
    rows.append(("`POLL_S` (rerun)", f"{rerun['POLL_S']:g} s"))
    labels = constants("scitaste_hf.rtaste_protocol.labels")
    rows += [(f"`{n}` (labels)", labels[n]) for n in ("N_OBVIOUS", "CODE_CHARS")]
    rows += [(f"`DEFAULT_LIMITS.{k}` (limits)", f"{v:g}") for k, v in vars(DEFAULT_LIMITS).items()]
    return "Owner: `scitaste_hf.rtaste_protocol`, the module named.\n\n" + table(("constant", "value"), rows)


@generator("rtaste-flaws")
def _rtaste_flaws() -> str:
    from scitaste_hf.rtaste_protocol.calibrate import FLAWS

    return ("Owner: `scitaste_hf.rtaste_protocol.calibrate.FLAWS`.\n\n"
            + table(("flaw", "files", "what is planted"), [(f"`{n}`", f"`{files}`", what)
                                                         for n, (what, files, _) in FLAWS.items()]))


@generator("rtaste-review")
def _rtaste_review() -> str:
    labels = constants("scitaste_hf.rtaste_protocol.labels")
    return ("Owner: `scitaste_hf.rtaste_protocol.labels` (`REVIEW_QUESTIONS`, `REVIEW_ANSWERS`). Answers: "
            + ", ".join(f"`{a}`" for a in labels["REVIEW_ANSWERS"]) + ".\n\n"
            + "\n".join(f"{n}. {q}" for n, q in enumerate(labels["REVIEW_QUESTIONS"], start=1)))


@generator("layers")
def _layers() -> str:
    order = const("tests.test_layers", "ORDER")
    return ("Owner: `ORDER` in `tests/test_layers.py`. Each unit imports only units after it in this list, from the "
            "top of the stack down:\n\n" + " > ".join(f"`{unit}`" for unit in reversed(order)))


@generator("mirror-layout")
def _mirror_layout() -> str:
    from scitaste_hf.sources.endpoints import LIVE, MIRROR_PREFIXES

    rows = [(s, f"`{LIVE[s]}`", f"`{MIRROR_PREFIXES[s]}`") for s in LIVE]
    return ("Owner: `scitaste_hf.sources.endpoints` (`LIVE`, `MIRROR_PREFIXES`).\n\n"
            + table(("service", "live API root", "prefix on the mirror"), rows))


# -- rewriting and checking -------------------------------------------------------------------------------------


def render(name: str) -> str:
    """The body of block ``name``, ending in a newline."""
    return GENERATORS[name]().rstrip("\n") + "\n"


def process(text: str) -> tuple[str, list[str], list[str]]:
    """``text`` with every known block filled in, the names of the blocks that changed, and unknown names."""
    stale: list[str] = []
    unknown: list[str] = []

    def fill(match: re.Match) -> str:
        name = match.group(2)
        if name not in GENERATORS:
            unknown.append(name)
            return match.group(0)
        body = render(name)
        if body != match.group(3):
            stale.append(name)
        return match.group(1) + body + match.group(4)

    return BLOCK.sub(fill, text), stale, unknown


def generated_files() -> dict[Path, str]:
    """Whole files written from the code, path -> text: the drop-one task YAMLs of per-tool attribution."""
    from scitaste_hf.adapters.lmeval.tasks import withheld_tasks

    return {ROOT / "lm_eval_tasks" / "scitaste" / name: text for name, text in withheld_tasks().items()}


def check() -> list[str]:
    """Problems of every page, one line each: stale blocks, unknown block names and stale generated files."""
    problems = [f"{path.relative_to(ROOT)}: stale (run python docs/generate.py)"
                for path, text in generated_files().items()
                if not path.is_file() or path.read_text("utf-8") != text]
    for page in pages():
        if not page.is_file():
            continue
        _, stale, unknown = process(page.read_text("utf-8"))
        rel = page.relative_to(ROOT)
        problems += [f"{rel}: block '{n}' is stale (run python docs/generate.py)" for n in stale]
        problems += [f"{rel}: unknown generated block '{n}'" for n in unknown]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="list stale or unknown blocks and exit 1; write nothing")
    args = parser.parse_args(argv)
    if args.check:
        problems = check()
        print("\n".join(problems) if problems else "docs: every generated block is up to date")
        return 1 if problems else 0
    for path, text in generated_files().items():
        if not path.is_file() or path.read_text("utf-8") != text:
            path.write_text(text, "utf-8")
            print(f"{path.relative_to(ROOT)}: rewrote")
    unknown_all = []
    for page in pages():
        if not page.is_file():
            continue
        text = page.read_text("utf-8")
        new, stale, unknown = process(text)
        unknown_all += [f"{page.relative_to(ROOT)}: unknown generated block '{n}'" for n in unknown]
        if new != text:
            page.write_text(new, "utf-8")
            print(f"{page.relative_to(ROOT)}: rewrote {', '.join(stale)}")
    if unknown_all:
        print("\n".join(unknown_all))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
