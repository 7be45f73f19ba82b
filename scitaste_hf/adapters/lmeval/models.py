"""lm-eval models of scitaste-hf, registered when ``scitaste eval`` starts (lm-eval 0.4 has no plugin lookup).

- ``scitaste-agent``: any OpenAI-compatible chat endpoint run through the DimAgent-v3 loop of the task's mode.
- ``scitaste-baseline``: the offline, deterministic floor of the leaderboard, through the same loop.

The mode and the paper come from the request's document (``scitaste_mode``, which the task's ``load_docs`` adds;
tool-free when absent), and so does the frozen evidence the task found, unless ``evidence_dir`` is given here. A
failed item never stops a run: it becomes a counted failure with its reason. Each item appends a trace line
(messages, tool calls, latency, token usage) to a JSONL file.

Under ``--use_cache`` each paper is stored in lm-eval's cache as soon as it is done, so a run that was killed
resumes with the papers it had not finished. A failure of the endpoint (``api_error``, ``timeout``) is never
replayed from the cache: it is a fact about the service at the time, not the model's answer.
"""

from __future__ import annotations

import inspect
import json
import threading
import weakref
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from scitaste_hf import constants
from scitaste_hf.agent.loop import TOOL_MODES, run_item
from scitaste_hf.errors import ScitasteError
from scitaste_hf.modes import MODE_SPECS
from scitaste_hf.schema import HUB_DATASET, TRANSIENT_FAILURES, failure_of, failure_text

#: What lm-eval's runner adds to every model's arguments (from ``--batch_size`` and ``--device``); these models
#: have nothing to do with them.
_RUNNER_ARGS = frozenset({"batch_size", "max_batch_size", "device"})


def parse_model_args(text: str) -> dict[str, Any]:
    """``--model_args`` (``key=value,key=value``) as lm-eval itself parses it, values typed as it types them."""
    from lm_eval.utils import simple_parse_args_string

    return simple_parse_args_string(text)


def _tools(evidence_dir: str | None):
    """Frozen evidence named for the model: ``evidence_dir``, else ``$SCITASTE_EVIDENCE_DIR``; None when neither is
    set (then each document's ``evidence``, where its task found it, is used)."""
    from scitaste_hf.agent.evidence import FrozenToolBox

    source = evidence_dir or constants.read(constants.SCITASTE_EVIDENCE_DIR)
    return FrozenToolBox.load(source) if source else None


#: The scitaste models alive in this process. lm-eval builds the model before it loads the tasks, so a task that
#: only these models can run (the live loop, the provider's search) asks them here whether to start at all.
_ALIVE: weakref.WeakSet = weakref.WeakSet()


def can_run(mode: str) -> bool:
    """Whether a scitaste model alive in this process can run ``mode`` (see :meth:`_LoopLM.runs`)."""
    return any(model.runs(mode) for model in list(_ALIVE))


class _LoopLM(LM):
    """Runs each request through :func:`~scitaste_hf.agent.loop.run_item`, ``num_concurrent`` at a time."""

    #: The name the model is registered under (``--model``).
    name = ""

    def __init__(self, chat, tools, *, num_concurrent: int = 1, trace_path: str | None = None,
                 item_timeout: float | None = None) -> None:
        super().__init__()
        self.chat, self.tools = chat, tools
        self.num_concurrent = max(1, int(num_concurrent))
        self.item_timeout = item_timeout
        self.trace_path = Path(trace_path or constants.trace_file())
        self._lock = threading.Lock()
        _ALIVE.add(self)

    def runs(self, mode: str) -> bool:
        """Whether this model can run ``mode``: every mode, unless a subclass lacks what the mode needs."""
        return mode in MODE_SPECS

    def evidence_as_text(self, doc: Mapping[str, Any]) -> bool:
        """Whether a round 1 made by the harness goes to this model as text rather than tool messages (the task's
        ``evidence_as``); the baseline reads tool messages only."""
        return False

    @property
    def tokenizer_name(self) -> str:
        """What lm-eval keys its request cache by under ``--apply_chat_template``; these models have no tokenizer."""
        return self.name

    def apply_chat_template(self, chat_history: list[dict[str, Any]], add_generation_prompt: bool = True) -> str:
        """The conversation as JSON, as lm-eval's API models give it: these models build their conversation from
        the document themselves, so what lm-eval renders under ``--apply_chat_template`` is only logged."""
        return json.dumps(chat_history, ensure_ascii=False)

    @classmethod
    def check_model_args(cls, model_args: Mapping[str, Any]) -> None:
        """Raise a one-line error for a ``--model_args`` key this model does not take: a typo such as
        ``num_concurent`` must not be ignored silently.

        Parameters
        ----------
        model_args : mapping
            The parsed ``--model_args`` (lm-eval's runner arguments such as ``batch_size`` are allowed).
        """
        import difflib

        taken = [p for p in inspect.signature(cls.__init__).parameters if p not in ("self", "lm_eval_options")]
        unknown = sorted(set(model_args) - set(taken) - _RUNNER_ARGS)
        if unknown:
            close = {key: difflib.get_close_matches(key, taken, n=1) for key in unknown}
            hint = "; ".join(f"{key}: did you mean {match[0]}?" for key, match in close.items() if match)
            raise ScitasteError(f"{cls.name} does not take {', '.join(unknown)} in --model_args; it takes "
                                f"{', '.join(taken)}" + (f" ({hint})" if hint else ""))

    @classmethod
    def _check_required(cls, model_args: Mapping[str, Any]) -> None:
        """Raise a one-line error naming the ``--model_args`` keys this model needs and was not given."""
        parameters = inspect.signature(cls.__init__).parameters.values()
        missing = [p.name for p in parameters if p.name != "self" and p.default is inspect.Parameter.empty
                   and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name not in model_args]
        if missing:
            raise ScitasteError(f"{cls.name} needs {', '.join(missing)} in --model_args (e.g. --model_args "
                                + ",".join(f"{name}=..." for name in missing) + ")")

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """lm-eval's constructor from ``--model_args``: an unknown key (a typo) or a missing one is one line
        naming it, not a ``TypeError`` from ``__init__``."""
        return cls.create_from_arg_obj(parse_model_args(arg_string), additional_config)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: Mapping[str, Any], additional_config: dict | None = None):
        """As :meth:`create_from_arg_string`, from the parsed arguments."""
        given = {**arg_dict, **{k: v for k, v in (additional_config or {}).items() if v is not None}}
        cls.check_model_args(given)
        cls._check_required(given)
        return super().create_from_arg_obj(arg_dict, additional_config)

    def set_cache_hook(self, cache_hook) -> None:
        """lm-eval's ``--use_cache`` hook; endpoint failures stored by an earlier run are dropped from the cache
        here, before lm-eval looks anything up in it, so that those papers are asked again."""
        super().set_cache_hook(cache_hook)
        cache = getattr(cache_hook, "dbdict", None)
        if cache is not None:
            for key in [k for k, v in cache.items() if not isinstance(v, str) or failure_of(v) in TRANSIENT_FAILURES]:
                del cache[key]

    @staticmethod
    def _mode(request) -> str:
        return request.doc.get("scitaste_mode") or "pure_qa"

    def _toolbox(self, request):
        """The model's own evidence, else the one the request's task found (None when neither has any), with the
        task's withheld tool withheld."""
        from scitaste_hf.adapters.lmeval.tasks import doc_toolbox

        return doc_toolbox(request.doc, self.tools)

    def _one(self, request) -> str:
        outcome = run_item(self.chat, self._toolbox(request), request.doc, self._mode(request),
                           time_budget=self.item_timeout, evidence_as_text=self.evidence_as_text(request.doc))
        text = failure_text(outcome.failure, outcome.trace.get("error", "")) if outcome.failure else outcome.text
        with self._lock:
            if outcome.failure not in TRANSIENT_FAILURES:  # stored as soon as it is done: a killed run resumes
                self.cache_hook.add_partial("generate_until", request.args, text)
            self.trace_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.trace_path, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(outcome.trace, default=str) + "\n")
        return text

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """One reply per request, in order.

        Raises
        ------
        ScitasteError
            When a tool mode is asked for and there is no frozen evidence, or a mode this model cannot run
            (before any request is sent).
        """
        for request in requests:
            mode = self._mode(request)
            if not self.runs(mode):
                raise ScitasteError(f"{self.name} cannot run mode {mode} here (see `scitaste eval --help`)")
            if mode in TOOL_MODES and self._toolbox(request) is None:
                raise ScitasteError("the tool modes need frozen evidence: run `scitaste evidence freeze` (or "
                                    "`scitaste build`) and pass evidence_dir=... or data_dir=... in --model_args")
        with ThreadPoolExecutor(max_workers=self.num_concurrent) as pool:
            return list(pool.map(self._one, requests))

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("scitaste models only generate answers (generate_until tasks)")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("scitaste models only generate answers (generate_until tasks)")


@register_model("scitaste-agent")
class AgentLM(_LoopLM):
    """An OpenAI-compatible chat model behind the DimAgent-v3 loop.

    Parameters (``--model_args``)
    -----------------------------
    base_url : str
        The endpoint root ending in ``/v1`` (vLLM, llama.cpp, OpenAI, OpenRouter, ...).
    model : str
    num_concurrent : int
        Papers in flight at once.
    profile : str
        A key of :data:`scitaste_hf.agent.chat.PROFILES` (parameters the provider accepts).
    evidence_dir : str
        Frozen evidence (see :func:`_tools`); by default the tasks' (``data_dir``'s ``tool_evidence`` config, or
        the Hub dataset's).
    data_dir : str
        Read by the tasks (lm-eval hands ``--model_args`` to them too).
    trace_path : str
        JSONL trace file (default ``$SCITASTE_TRACE``, which ``scitaste eval`` points beside lm-eval's
        ``--output_path``, else ``scitaste-traces.jsonl``).
    max_gen_toks : int
        Token budget of a reply; default the profile's.
    timeout, max_retries, max_retry_after : float, int, float
        Per request (:class:`~scitaste_hf.agent.chat.ChatClient`). The API key comes from ``$OPENAI_API_KEY``.
    item_timeout : float
        Seconds one paper may take in all (both rounds, every retry); then it is a ``timeout`` failure.
    """

    name = "scitaste-agent"

    def __init__(self, base_url: str, model: str, num_concurrent: int = 1, profile: str = "default",
                 max_gen_toks: int | None = None, evidence_dir: str | None = None, data_dir: str | None = None,
                 trace_path: str | None = None, timeout: float = 120.0, max_retries: int = 4,
                 max_retry_after: float = 30.0, item_timeout: float = 300.0, **lm_eval_options: Any) -> None:
        from scitaste_hf.agent.chat import make_client

        self.check_model_args(lm_eval_options)
        del data_dir  # read by the tasks, to which lm-eval hands --model_args too
        client = make_client(base_url, model, profile=profile, max_gen_toks=max_gen_toks, timeout=timeout,
                             max_retries=max_retries, max_retry_after=max_retry_after)
        super().__init__(client.chat, _tools(evidence_dir), num_concurrent=int(num_concurrent),
                         trace_path=trace_path, item_timeout=float(item_timeout))
        self.search, self.tool_roles = bool(client.profile.search), client.profile.tool_roles

    def runs(self, mode: str) -> bool:
        """Every mode but the search modes, which need a profile that switches the provider's search on."""
        return super().runs(mode) and (self.search or not MODE_SPECS[mode].search)

    def evidence_as_text(self, doc: Mapping[str, Any]) -> bool:
        """The task's ``evidence_as``; under ``auto``, text where the profile says the endpoint's template has no
        tool roles."""
        wanted = doc.get("evidence_as") or "auto"
        return wanted == "text" or (wanted == "auto" and not self.tool_roles)


@register_model("scitaste-baseline")
class BaselineLM(_LoopLM):
    """The offline baseline: discipline priors learned from the ``backup`` split without tools, fixed maps from
    the tools' raw evidence in the tool modes (:mod:`scitaste_hf.baseline`).

    Parameters (``--model_args``)
    -----------------------------
    data_dir : str, optional
        The dataset whose ``backup`` split the priors come from; default ``$SCITASTE_DATA_DIR``, else the Hub.
    evidence_dir, trace_path, num_concurrent
        As for ``scitaste-agent``.
    model : str
        Only a name: lm-eval takes the ``model_name`` of its results from ``model=`` in ``--model_args`` (else it
        draws a random one), and ``scitaste eval`` passes this default.
    """

    name = "scitaste-baseline"

    def __init__(self, data_dir: str | None = None, evidence_dir: str | None = None, trace_path: str | None = None,
                 num_concurrent: int = 4, model: str = "scitaste-baseline", **lm_eval_options: Any) -> None:
        from scitaste_hf.agent.baseline import BaselineChat
        from scitaste_hf.records import load_records
        from scitaste_hf.scoring.floors import PriorBaseline

        self.check_model_args(lm_eval_options)

        source = data_dir or constants.read(constants.SCITASTE_DATA_DIR) or HUB_DATASET
        chat = BaselineChat(PriorBaseline.fit(load_records(source, "backup")))
        super().__init__(chat, _tools(evidence_dir), num_concurrent=int(num_concurrent), trace_path=trace_path)
