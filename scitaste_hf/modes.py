"""The evaluation modes: what each one gives the model and which lm-eval task runs it (docs/modes.md).

A new mode is one entry of :data:`MODE_SPECS`; its behaviour follows from the entry's fields (``tools``,
``search``) wherever a mode is run: the agent loop, the lm-eval tasks and models.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, NamedTuple


class Mode(NamedTuple):
    """How one evaluation mode runs.

    ``tools`` is ``"none"``; ``"fixed"`` when the harness makes round 1 itself (all nine tools for the paper,
    answered from frozen evidence, rendered into the conversation) and the model answers round 2, which any chat
    model can do; or ``"live"`` when the model chooses its own calls in round 1 (a function-calling endpoint
    behind ``scitaste-agent``). ``search`` switches the provider's own web search on: ``scitaste-agent`` with a
    profile that has it, or any chat model whose task is given a search profile (``--metadata``), whose switch
    each request then carries.
    """

    task: str
    tools: Literal["none", "fixed", "live"]
    search: bool
    about: str

    @property
    def runs_with(self) -> str:
        """Which lm-eval models run the mode, as the CLI's help and the docs' modes table say it."""
        if self.tools == "live":
            return "scitaste-agent"
        if self.search:
            return ("scitaste-agent with a search profile, or any chat model given one "
                    "(--metadata '{\"search\": \"PROFILE\"}')")
        return "any chat model, stock lm_eval included"


#: The evaluation modes: the paper's four (no tools, the model's native web search, the nine DimAgent-v3 tools
#: with round 1 made by the harness, the tools plus native search) and the live DimAgent-v3 loop, in which the
#: model chooses its calls; its results are kept apart from the paper's ``dimagent_v3``.
MODE_SPECS: Mapping[str, Mode] = MappingProxyType({
    "pure_qa": Mode("scitaste_pure_qa", "none", False, "title and abstract only, no tools"),
    "native_search": Mode("scitaste_native_search", "none", True, "the model's own web search"),
    "dimagent_v3": Mode("scitaste_dimagent", "fixed", False,
                        "the nine DimAgent-v3 bibliometric tools on frozen evidence, all nine called by the harness "
                        "in round 1"),
    "dimagent_v3_native": Mode("scitaste_dimagent_native", "fixed", True,
                               "the nine tools as in dimagent_v3, plus the model's own web search"),
    "dimagent_v3_live": Mode("scitaste_dimagent_live", "live", False,
                             "the nine tools on frozen evidence, the model choosing its own calls in round 1"),
})
MODES: tuple[str, ...] = tuple(MODE_SPECS)
