"""What the lm-eval task family ``lm_eval_tasks/scitaste`` calls: documents, prompts, per-item results and the
aggregations (Scheme 1, Scheme 2, WAPE, coverage, per-discipline Scheme 2, and the bounds of the 95% bootstrap
intervals of Scheme 1 and Scheme 2, which lm-eval cannot compute itself for these aggregations: it prints
``stderr: N/A`` for them). The task folder's ``utils.py`` only re-exports the hooks its YAMLs name; the
aggregations reach lm-eval through the task class (:func:`aggregations`, :func:`higher_is_better`), so the
formulas stay in :mod:`scitaste_hf.scoring` and no YAML lists a metric.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from scitaste_hf import constants
from scitaste_hf.agent.loop import ROUND_TWO, evidence_text, fixed_round, opening, tool_turn
from scitaste_hf.modes import MODE_SPECS
from scitaste_hf.predictions import reply_answer
from scitaste_hf.prompts import paper_prompt
from scitaste_hf.schema import DIMENSIONS, HUB_DATASET, Answer, Failure
from scitaste_hf.scoring import score_run
from scitaste_hf.taxonomy import packaged_disciplines

#: The lm-eval task of each evaluation mode (the YAMLs in lm_eval_tasks/scitaste/).
TASKS = {mode: spec.task for mode, spec in MODE_SPECS.items()}

#: The interval bounds reported as metrics of their own: (metric, scheme, figure, bound index).
INTERVALS = {"scheme1_ci_low": ("scheme1", "scheme1", 0), "scheme1_ci_high": ("scheme1", "scheme1", 1),
             "scheme2_ci_low": ("scheme2", "score", 0), "scheme2_ci_high": ("scheme2", "score", 1)}
#: Skill over the constant no-information floor and its interval bounds: (metric, scheme, bound index or None).
SKILLS = {f"{scheme}_skill{suffix}": (scheme, end) for scheme in ("scheme1", "scheme2")
          for suffix, end in (("", None), ("_ci_low", 0), ("_ci_high", 1))}
#: Metrics every sample reports: the overall figures, their interval bounds, and skill over the floor with its
#: bounds. Each sample also reports Scheme 2 of its own discipline (:func:`per_discipline_metric`).
OVERALL = ("scheme1", "scheme2", "wape", "coverage", *INTERVALS, *SKILLS)
#: The metrics of which lower is better (an error); every other metric is a score.
LOWER_IS_BETTER = frozenset({"wape"})


def per_discipline_metric(discipline: str) -> str:
    """The name of the metric that is Scheme 2 of ``discipline``'s papers (the paper's Table 10)."""
    return f"scheme2_{discipline}"


#: Scheme 2 per discipline of the packaged taxonomies; a release of another taxonomy reports its own disciplines'.
PER_DISCIPLINE_NAMES = tuple(per_discipline_metric(d) for d in packaged_disciplines())
#: What a run over a release of the packaged taxonomies can report: :data:`OVERALL`, then Scheme 2 of each of the
#: disciplines the release holds.
METRICS = (*OVERALL, *PER_DISCIPLINE_NAMES)
#: How a task renders the fixed round 1 of a tool mode (``--metadata '{"evidence_as": ...}'``): ``auto`` sends
#: chat messages with tool roles where the model's chat template is seen to render them, text otherwise.
EVIDENCE_AS = ("auto", "messages", "text")
#: Tasks every chat model can run (the others need scitaste-agent: its live loop, or the provider's search).
ANY_MODEL = tuple(spec.task for spec in MODE_SPECS.values() if spec.tools != "live" and not spec.search)
#: Seed of the documents' order (:func:`doc_order`): fixed, so that every run, model and ``--limit`` sees the
#: papers in the same order.
DOC_ORDER_SEED = 20250101


def doc_order(records: Sequence[Mapping[str, Any]]) -> list[int]:
    """The order in which a task hands out ``records``: round-robin over the disciplines, in an order shuffled
    once with :data:`DOC_ORDER_SEED`, each discipline's papers shuffled with it too. So ``--limit N`` takes
    papers from min(N, disciplines) disciplines (the dataset's own rows are sorted by bibcode, physics first);
    the order depends only on the records, and the scores, computed over the whole set, not at all.

    Returns
    -------
    list of int
        Indices into ``records``.
    """
    rng = np.random.default_rng(DOC_ORDER_SEED)
    by_discipline: dict[str, list[int]] = {}
    for k in sorted(range(len(records)), key=lambda k: str(records[k]["bibcode"])):
        by_discipline.setdefault(str(records[k].get("discipline")), []).append(k)
    queues = [[group[j] for j in rng.permutation(len(group))]
              for group in (by_discipline[d] for d in rng.permutation(sorted(by_discipline)))]
    return [queue[k] for k in range(max(map(len, queues), default=0)) for queue in queues if k < len(queue)]


def load_docs(data_dir: str | None = None, split: str = "selected", scitaste_task_mode: str = "pure_qa",
              evidence_dir: str | None = None, evidence_as: str = "auto", withhold: str = "",
              scitaste_task_withhold: str = "", search: str = "", **_metadata: Any):
    """The task's documents: the ``split`` of the dataset at ``data_dir`` (lm-eval's ``--metadata``), else of
    ``$SCITASTE_DATA_DIR``, else of the Hub dataset, in :func:`doc_order`. Returns ``{"test": datasets.Dataset}``.

    Each document also carries ``floor``, the constant no-information floor's answer
    (:mod:`scitaste_hf.scoring.floors`: the mean of the ``backup`` split, or of the documents' own labels when
    the dataset has no backup split), so that the aggregations can report skill over it; and ``scitaste_mode``
    (the task YAML's ``dataset_kwargs: {scitaste_task_mode: ...}``, a name no ``--metadata`` or ``--model_args``
    key is likely to take, since lm-eval hands both to this function too), from which scitaste's models take the
    mode.

    A tool mode also needs the frozen evidence (``evidence_dir``, else ``$SCITASTE_EVIDENCE_DIR``, else the
    dataset's ``tool_evidence`` config), from which its prompts render round 1. A task that cannot run here
    stops before the first paper is sent (:class:`~scitaste_hf.errors.TaskUnavailable`): no evidence, or a mode
    that needs scitaste-agent (the live loop; the provider's web search without ``search``) with a model that is not
    it.

    ``search`` (``--metadata '{"search": "PROFILE"}'``) names the profile of :data:`scitaste_hf.agent.chat.PROFILES`
    whose web-search switch a search mode's requests carry under a stock lm-eval model: ``local-chat-completions``
    sends a request's generation arguments as fields of its body (:class:`~scitaste_hf.adapters.lmeval.chat_task.
    ScitasteTask` adds them). Each document records it as ``search``.

    ``withhold`` (``--metadata '{"withhold": "TOOL"}'``, or ``scitaste_task_withhold`` in a task YAML's
    ``dataset_kwargs``, as the drop-one tasks of :func:`withheld_tasks` name it) keeps one tool's evidence back in a
    tool mode: that tool answers every paper that its service has no data on it. Each document records it as
    ``withheld`` (empty when none), from which a report tells the run apart from the full one.
    """
    import datasets

    from scitaste_hf.errors import ScitasteError, TaskUnavailable
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import record_features
    from scitaste_hf.scoring.floors import floor_matrices
    from scitaste_hf.scoring.inputs import as_answer_matrix

    mode = scitaste_task_mode
    if mode not in MODE_SPECS:
        raise TaskUnavailable(f"unknown scitaste_task_mode {mode!r}; the modes are {', '.join(MODE_SPECS)}")
    if evidence_as not in EVIDENCE_AS:
        raise TaskUnavailable(f"evidence_as must be one of {', '.join(EVIDENCE_AS)}, not {evidence_as!r}")
    _check_runnable(mode, search)
    withheld = _withheld(mode, withhold, scitaste_task_withhold)
    source = data_dir or constants.read(constants.SCITASTE_DATA_DIR) or HUB_DATASET
    evidence = _evidence_source(evidence_dir, source) if MODE_SPECS[mode].tools != "none" else ""
    records = load_records(source, split)
    if evidence and (missing := [r["bibcode"] for r in records if r["bibcode"] not in toolbox(evidence).papers]):
        raise TaskUnavailable(
            f"the frozen evidence at {evidence} lacks {len(missing)} of the {len(records)} papers (first: "
            f"{missing[0]}): it was frozen for another dataset; pass the evidence of this one (`scitaste evidence "
            "freeze`)")
    try:
        backup = load_records(source, "backup") if split != "backup" else None
    except ScitasteError:  # a file or a dataset without a backup split: the floor comes from the documents
        backup = None
    floor = floor_matrices(as_answer_matrix(records, str(source)), None, backup)["constant"]
    features = record_features()
    rows = [{**{k: records[i].get(k) for k in features}, "floor": list(floor[i]), "scitaste_mode": mode,
             "evidence": evidence, "evidence_as": evidence_as, "withheld": withheld, "search": search}
            for i in doc_order(records)]
    features["floor"] = datasets.Sequence(datasets.Value("float64"))
    for column in ("scitaste_mode", "evidence", "evidence_as", "withheld", "search"):
        features[column] = datasets.Value("string")
    return {"test": datasets.Dataset.from_list(rows, features=features)}


def _withheld(mode: str, given: str, from_task: str) -> str:
    """The tool a task withholds ("" for none), checked now: a tool's name, only in a tool mode, and not two."""
    from scitaste_hf.agent.evidence import check_withheld
    from scitaste_hf.errors import InvalidInput, TaskUnavailable

    if given and from_task and given != from_task:
        raise TaskUnavailable(f"this task withholds {from_task}; --metadata cannot withhold {given} instead (one tool "
                              "at a time: run the task scitaste_dimagent with --metadata withhold)")
    tool = given or from_task
    try:
        tool = check_withheld(tool) or ""
    except InvalidInput as exc:
        raise TaskUnavailable(str(exc)) from None
    if tool and MODE_SPECS[mode].tools == "none":
        raise TaskUnavailable(f"withhold: {mode} has no tools to withhold; run a tool mode (scitaste_dimagent)")
    return tool


#: The mode whose drop-one tasks :func:`withheld_tasks` lists: the paper's tool mode that any chat model runs.
WITHHELD_MODE = "dimagent_v3"
#: The group of the drop-one tasks (``lm_eval_tasks/scitaste/<group>.yaml``).
WITHHELD_GROUP = "scitaste_dimagent_withheld"


def withheld_task(tool: str) -> str:
    """The name of the task that runs :data:`WITHHELD_MODE` with ``tool``'s evidence withheld."""
    return f"{TASKS[WITHHELD_MODE]}_without_{tool}"


def withheld_tasks() -> dict[str, str]:
    """The task files of per-tool attribution, file name -> YAML text: one task per tool that runs
    :data:`WITHHELD_MODE` with that tool withheld, and the group :data:`WITHHELD_GROUP` of the nine. The files in
    ``lm_eval_tasks/scitaste/`` are written from here (``python docs/generate.py``; its check finds a stale one)."""
    from scitaste_hf.agent.tools import TOOL_NAMES

    files = {}
    for tool in TOOL_NAMES:
        files[f"{withheld_task(tool)}.yaml"] = (
            f"# Generated by docs/generate.py from scitaste_hf.adapters.lmeval.tasks.withheld_tasks: do not edit.\n"
            f"# SciTaste-Bench, mode {WITHHELD_MODE} with the evidence of {tool} withheld (that tool answers that its "
            "service has no data on the paper).\n"
            "include: _scitaste_template.yaml\n"
            "tag:\n"
            f"  - {WITHHELD_GROUP}_tasks\n"
            f"task: {withheld_task(tool)}\n"
            "dataset_kwargs:\n"
            f"  scitaste_task_mode: {WITHHELD_MODE}\n"
            f"  scitaste_task_withhold: {tool}\n")
    files[f"{WITHHELD_GROUP}.yaml"] = (
        "# Generated by docs/generate.py from scitaste_hf.adapters.lmeval.tasks.withheld_tasks: do not edit.\n"
        f"# Per-tool attribution: {TASKS[WITHHELD_MODE]} with each of the nine tools' evidence withheld in turn.\n"
        f"# Run it beside {TASKS[WITHHELD_MODE]}; `scitaste report` gives each tool's effect on skill.\n"
        f"group: {WITHHELD_GROUP}\n"
        "task:\n" + "".join(f"  - {withheld_task(tool)}\n" for tool in TOOL_NAMES)
        + "metadata:\n  version: 2.0\n")
    return files


def _check_runnable(mode: str, search: str = "") -> None:
    """Stop at once when ``mode`` needs what only scitaste-agent has and no scitaste model here can run it (lm-eval
    builds the model before it loads the tasks, so a model of this package would be registered by now); a search
    mode runs under any model when ``search`` names a profile with a web-search switch, which its requests carry."""
    import sys

    from scitaste_hf.agent.chat import PROFILES
    from scitaste_hf.errors import TaskUnavailable

    spec = MODE_SPECS[mode]
    searching = ", ".join(name for name, profile in PROFILES.items() if profile.search)
    if search and not PROFILES.get(search, PROFILES["default"]).search:
        raise TaskUnavailable(f"search must name a profile with a web-search switch ({searching}), not {search!r}")
    if spec.tools != "live" and (not spec.search or search):
        return
    models = sys.modules.get("scitaste_hf.adapters.lmeval.models")
    if models is not None and models.can_run(mode):
        return
    instead = f"with this model, run {' or '.join(ANY_MODEL)}"
    if spec.search:
        raise TaskUnavailable(
            f"{spec.task} needs the provider's own web search, which this model cannot switch on: pass --metadata "
            f"'{{\"search\": \"P\"}}' to send P's switch to an endpoint that has it, or run `scitaste eval --model "
            f"scitaste-agent --model_args base_url=...,model=...,profile=P` (P one of {searching}); {instead}")
    raise TaskUnavailable(
        f"{spec.task} is the live tool loop, in which the model chooses its own calls: run it with `scitaste eval "
        f"--model scitaste-agent --model_args base_url=...,model=...`; {instead} (round 1 made by the harness)")


def _evidence_source(evidence_dir: str | None, data_source: str) -> str:
    """Where a tool mode's frozen evidence is, checked now: a task without it must not start."""
    from scitaste_hf.errors import TaskUnavailable

    source = evidence_dir or constants.read(constants.SCITASTE_EVIDENCE_DIR) or str(data_source)
    if toolbox(source) is None:
        raise TaskUnavailable(
            f"the tool modes need frozen tool evidence and {source} has none: pass --metadata "
            "'{\"evidence_dir\": \"DIR\"}' (or a data_dir whose dataset has the tool_evidence config; `scitaste "
            "evidence freeze` writes it)")
    return source


@functools.lru_cache(maxsize=4)
def toolbox(source: str):
    """The frozen evidence at ``source`` (:meth:`~scitaste_hf.agent.evidence.FrozenToolBox.find`), read once per
    process: every document of a task, and scitaste's models, share it."""
    from scitaste_hf.agent.evidence import FrozenToolBox

    return FrozenToolBox.find(source)


def doc_toolbox(doc: Mapping[str, Any], tools=None):
    """The evidence a document's paper is answered from: ``tools`` (a model's own), else the evidence its task
    found, with the task's withheld tool withheld; None when there is neither."""
    if tools is None:
        tools = toolbox(doc["evidence"]) if doc.get("evidence") else None
    return None if tools is None else tools.withholding(doc.get("withheld"))


def doc_to_text(doc: Mapping[str, Any]) -> str:
    """The prompt of one paper: :func:`scitaste_hf.prompts.paper_prompt`; in a tool mode whose round 1 the harness
    makes, that round's evidence and the request for the answer as text
    (:func:`scitaste_hf.agent.loop.evidence_text`), which any model can read."""
    if not _fixed(doc):
        return paper_prompt(doc)
    return evidence_text(doc, *fixed_round(doc, doc_toolbox(doc)))


def doc_to_messages(doc: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The conversation of a fixed-round tool mode as chat messages (round 1 in tool roles, then the request for
    the answer), exactly as scitaste's own models send it; None for the other modes."""
    if not _fixed(doc):
        return None
    calls, results = fixed_round(doc, doc_toolbox(doc))
    return [*opening(doc), *tool_turn(calls, results), {"role": "user", "content": ROUND_TWO}]


def _fixed(doc: Mapping[str, Any]) -> bool:
    return MODE_SPECS[doc.get("scitaste_mode") or "pure_qa"].tools == "fixed"


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The gold answer as JSON, for lm-eval's sample logs."""
    return json.dumps({"innovation_score": doc["innovation_score"], "dimension_scores": doc["dimension_scores"]})


def _gold(doc: Mapping[str, Any]) -> list[float]:
    return [float(doc["innovation_score"]), *(float(doc["dimension_scores"][k]) for k in DIMENSIONS)]


def process_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, dict[str, Any]]:
    """One item per metric: the parsed answer (or its failure reason) beside the gold scores, JSON-safe so that
    lm-eval can log it with the sample. Of the per-discipline metrics a sample reports its own discipline's only
    (whatever taxonomy it comes from): lm-eval aggregates only the metrics its samples report, so a six-discipline
    release shows six, not ten with four NaN."""
    answer = reply_answer(results[0] if results else "")  # as a samples log's reply is read (scitaste score)
    item = {"bibcode": doc["bibcode"], "discipline": doc.get("discipline"), "gold": _gold(doc),
            "floor": [float(v) for v in doc["floor"]] if doc.get("floor") else None,
            "pred": list(answer.vector()) if isinstance(answer, Answer) else None,
            "reason": answer.reason if isinstance(answer, Failure) else None}
    # the task class has an aggregation for the discipline of each of its documents (ScitasteTask.aggregation)
    discipline = doc.get("discipline")
    return dict.fromkeys((*OVERALL, *([per_discipline_metric(discipline)] if discipline else [])), item)


def _canonical(items: Sequence[Mapping[str, Any]]) -> str:
    """The items as JSON, in bibcode order: the order of a dataset's rows, so that the bootstrap resamples the
    papers as `scitaste score` does over the same split, whatever order the documents came in."""
    return json.dumps(sorted(items, key=lambda i: str(i["bibcode"])), sort_keys=True)


def _run(items: Sequence[Mapping[str, Any]], *, intervals: bool = False) -> dict[str, Any]:
    """The scored run; with ``intervals`` the bootstrap too, computed once for the four bounds that ask."""
    return _scored(_canonical(items), intervals)


@functools.lru_cache(maxsize=4)
def _scored(items_json: str, intervals: bool) -> dict[str, Any]:
    from scitaste_hf.scoring.bootstrap import N_RESAMPLES

    items = json.loads(items_json)

    def record(item: Mapping[str, Any]) -> dict[str, Any]:
        return {"bibcode": item["bibcode"], "discipline": item["discipline"], "innovation_score": item["gold"][0],
                "dimension_scores": dict(zip(DIMENSIONS, item["gold"][1:]))}

    predictions: dict[str, Answer | Failure] = {}
    for item in items:
        if item["pred"] is None:
            predictions[item["bibcode"]] = Failure(item["reason"] or "other")
        else:
            predictions[item["bibcode"]] = Answer.model_validate(record({**item, "gold": item["pred"]}))
    # floors=False: the skill metrics use the documents' own floor (_skill), not one learned from these items
    return score_run([record(i) for i in items], predictions, n_resamples=N_RESAMPLES if intervals else 0,
                     floors=False)


def _value(block: Mapping[str, Any] | None, scheme: str, key: str) -> float:
    """A scheme's figure, or NaN when nothing was scored (never a silent 0)."""
    value = (block or {}).get(scheme) and block[scheme].get(key)
    return math.nan if value is None else float(value)


def scheme1(items: Sequence[Mapping[str, Any]]) -> float:
    """Scheme-1 score of the scored items."""
    return _value(_run(items)["overall"], "scheme1", "scheme1")


def scheme2(items: Sequence[Mapping[str, Any]]) -> float:
    """Scheme-2 score (from WAPE) of the scored items."""
    return _value(_run(items)["overall"], "scheme2", "score")


def wape(items: Sequence[Mapping[str, Any]]) -> float:
    """WAPE of the scored items, as a fraction."""
    return _value(_run(items)["overall"], "scheme2", "wape")


def coverage(items: Sequence[Mapping[str, Any]]) -> float:
    """Share of the items whose answer could be scored."""
    return float(_run(items)["overall"]["coverage"])


def _bound_of(metric: str):
    scheme, figure, end = INTERVALS[metric]

    def aggregate(items: Sequence[Mapping[str, Any]]) -> float:
        interval = ((_run(items, intervals=True)["overall"].get(scheme) or {}).get("ci") or {}).get(figure)
        return math.nan if interval is None or interval[end] is None else float(interval[end])

    aggregate.__name__ = metric
    aggregate.__doc__ = f"The {'lower' if end == 0 else 'upper'} bound of the 95% bootstrap interval of {scheme}."
    return aggregate


#: ``scheme1_ci_low`` ... ``scheme2_ci_high``: the interval bounds as aggregations.
BOUNDS = {metric: _bound_of(metric) for metric in INTERVALS}


@functools.lru_cache(maxsize=4)
def _skill(items_json: str) -> dict[str, dict[str, Any]] | None:
    from scitaste_hf.scoring.bootstrap import skill

    scored = [i for i in json.loads(items_json) if i["pred"] is not None]
    if not scored or any(i.get("floor") is None for i in scored):
        return None
    return skill(*(np.array([i[key] for i in scored]) for key in ("pred", "floor", "gold")))


def _skill_of(metric: str):
    scheme, end = SKILLS[metric]

    def aggregate(items: Sequence[Mapping[str, Any]]) -> float:
        result = (_skill(_canonical(items)) or {}).get(scheme) or {}
        value = result.get("skill") if end is None else (result.get("interval") or [None, None])[end]
        return math.nan if value is None else float(value)

    aggregate.__name__ = metric
    aggregate.__doc__ = (f"Skill of {scheme} over the constant no-information floor"
                         + ("" if end is None else f": the {'lower' if end == 0 else 'upper'} bound of its 95% "
                                                   "paired-bootstrap interval") + ".")
    return aggregate


#: ``scheme1_skill`` ... ``scheme2_skill_ci_high``: skill over the floor and its interval bounds.
SKILL_METRICS = {metric: _skill_of(metric) for metric in SKILLS}


@functools.cache
def _scheme2_of(discipline: str) -> Callable[[Sequence[Mapping[str, Any]]], float]:
    def aggregate(items: Sequence[Mapping[str, Any]]) -> float:
        return _value(_run(items)["by_discipline"].get(discipline), "scheme2", "score")

    aggregate.__name__ = per_discipline_metric(discipline)
    aggregate.__doc__ = f"Scheme-2 score of the scored {discipline} items."
    return aggregate


def aggregations(disciplines: Iterable[str]) -> dict[str, Callable[[Sequence[Mapping[str, Any]]], float]]:
    """The aggregation of every metric a task whose documents hold ``disciplines`` can report (lm-eval's
    ``Task.aggregation()``): those of :data:`OVERALL`, then Scheme 2 of each discipline, a custom taxonomy's
    included. Each per-discipline one gets only its discipline's samples (:func:`process_results`)."""
    overall = {"scheme1": scheme1, "scheme2": scheme2, "wape": wape, "coverage": coverage, **BOUNDS,
               **SKILL_METRICS}
    return {**{m: overall[m] for m in OVERALL}, **{per_discipline_metric(d): _scheme2_of(d) for d in disciplines}}


def higher_is_better(disciplines: Iterable[str]) -> dict[str, bool]:
    """Whether a higher value is better, for every metric of :func:`aggregations` (lm-eval's
    ``Task.higher_is_better()``): all but :data:`LOWER_IS_BETTER`."""
    return {metric: metric not in LOWER_IS_BETTER for metric in aggregations(disciplines)}
