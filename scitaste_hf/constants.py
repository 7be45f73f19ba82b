"""Every environment variable the package reads, in one place (huggingface_hub's ``constants.py`` is the model).

Each variable's name is a constant here, and every read goes through this module: :func:`read` for a plain value,
a reader of its own where a default or parsing is involved. Nothing else in the package (nor the Space, which uses
the same names) reads ``os.environ`` for these names, so that a variable's meaning, default and spelling live once;
code that sets a variable for child code (``scitaste space``, ``scitaste eval``) writes it under these names.

Values are read when asked for, not at import: a test or a command may set a variable after the import.
An empty value counts as unset. Variables of other programs, consulted as those programs define them (the
terminal's ``COLUMNS``, Java's ``JAVA_HOME``, the Space platform's ``SYSTEM``), are not repeated here.
"""

from __future__ import annotations

import os

from scitaste_hf.errors import ScitasteError

# -- the Hugging Face Hub, as huggingface_hub reads it ---------------------------------------------------------------

#: The Hub endpoint (a mirror or a local Hub); default the public Hub (:data:`DEFAULT_HF_ENDPOINT`).
HF_ENDPOINT = "HF_ENDPOINT"
#: Offline mode (``1``, ``ON``, ``YES`` or ``TRUE``): a command that needs the Hub says so at once instead of trying.
HF_HUB_OFFLINE = "HF_HUB_OFFLINE"
#: A Hugging Face token: writes the Space's Hub copy (with :data:`SCITASTE_RESULTS_REPO`) and ``scitaste publish``.
HF_TOKEN = "HF_TOKEN"

# -- the services' credentials ---------------------------------------------------------------------------------------

#: The NASA ADS API token (``--source live``).
ADS_API_TOKEN = "ADS_API_TOKEN"
#: The OpenAlex API key (``--source live``).
OPENALEX_API_KEY = "OPENALEX_API_KEY"
#: The e-mail address sent to OpenAlex (its "polite pool"); personal, so kept with the credentials.
OPENALEX_MAILTO = "OPENALEX_MAILTO"
#: The key of an OpenAI-compatible chat server (the agent's model).
OPENAI_API_KEY = "OPENAI_API_KEY"
#: The credentials file: TOML with these variables' names as keys; default :data:`DEFAULT_CREDENTIALS_FILE`.
SCITASTE_CREDENTIALS = "SCITASTE_CREDENTIALS"

# -- the benchmark's data, for the lm-eval tasks and models ----------------------------------------------------------

#: The benchmark *dataset* the lm-eval tasks and the prior baseline read: a dataset folder, a ``.jsonl`` or
#: ``.parquet`` file, or a Hub dataset id; default the Hub dataset. Not the board's data folder
#: (:data:`SCITASTE_DATA`).
SCITASTE_DATA_DIR = "SCITASTE_DATA_DIR"
#: A folder of frozen tool evidence for the tool modes; default the dataset's ``tool_evidence`` configuration.
SCITASTE_EVIDENCE_DIR = "SCITASTE_EVIDENCE_DIR"
#: The JSON-lines file the agent's traces are appended to; default :data:`DEFAULT_TRACE_FILE` (``scitaste eval``
#: sets it beside lm-eval's ``--output_path``).
SCITASTE_TRACE = "SCITASTE_TRACE"

# -- the leaderboard and its Space -----------------------------------------------------------------------------------

#: The *leaderboard's* data folder: the local store (SQLite and the submitted files, the source of truth) and the
#: ratings; default :data:`DEFAULT_BOARD_DATA`. Not the benchmark dataset (:data:`SCITASTE_DATA_DIR`); the name
#: is the one deployed Spaces set.
SCITASTE_DATA = "SCITASTE_DATA"
#: The gold labels of the ``selected`` split the board scores against: a Hub dataset id, a dataset folder or a
#: records file; default ``DATA/dataset`` (``scitaste demo`` writes it), else the bundled synthetic example.
SCITASTE_GOLD = "SCITASTE_GOLD"
#: The dataset repo every new run and rating is copied to (with :data:`HF_TOKEN`); default none (no copy).
SCITASTE_RESULTS_REPO = "SCITASTE_RESULTS_REPO"
#: Accepted submissions per submitter (the signed-in account, else the address): ``N``, ``N/SECONDS`` or ``off``;
#: default the board's ``RATE_LIMIT``.
SCITASTE_SUBMIT_LIMIT = "SCITASTE_SUBMIT_LIMIT"
#: The operator's endpoints that a request may name (``scitaste worker``): a JSON file of ``{NAME: {"base_url": URL,
#: "model": MODEL, "model_args": "K=V,..."}}``; their key is :data:`OPENAI_API_KEY`; default none.
SCITASTE_ENDPOINTS = "SCITASTE_ENDPOINTS"
#: The evaluation worker's secret: seals each ``server-run`` result, and the board checks the seals with it on open;
#: the same value on the Space and the worker; without it nothing is ``server-run``.
SCITASTE_WORKER_SECRET = "SCITASTE_WORKER_SECRET"
#: The key of the sealed runs' Hub copy (any long random text): their answers go up encrypted with it, so that only
#: the Space reads them back after a restart; needed when the board has a prospective split and a Hub copy.
SCITASTE_SEALED_KEY = "SCITASTE_SEALED_KEY"

#: The variables that hold secrets or point at them: never echoed, and cleared where a test or child must not
#: inherit the caller's.
CREDENTIAL_VARIABLES = (HF_TOKEN, ADS_API_TOKEN, OPENALEX_API_KEY, OPENALEX_MAILTO, OPENAI_API_KEY,
                        SCITASTE_CREDENTIALS, SCITASTE_WORKER_SECRET, SCITASTE_SEALED_KEY)
#: Every variable of this module, in the order the docs list them.
VARIABLES = (HF_ENDPOINT, HF_HUB_OFFLINE, HF_TOKEN, ADS_API_TOKEN, OPENALEX_API_KEY, OPENALEX_MAILTO, OPENAI_API_KEY,
             SCITASTE_CREDENTIALS, SCITASTE_DATA_DIR, SCITASTE_EVIDENCE_DIR, SCITASTE_TRACE, SCITASTE_DATA,
             SCITASTE_GOLD, SCITASTE_RESULTS_REPO, SCITASTE_SUBMIT_LIMIT, SCITASTE_ENDPOINTS, SCITASTE_WORKER_SECRET,
             SCITASTE_SEALED_KEY)

#: The public Hub.
DEFAULT_HF_ENDPOINT = "https://huggingface.co"
#: Where the credentials file is without :data:`SCITASTE_CREDENTIALS` (``~`` expanded when read).
DEFAULT_CREDENTIALS_FILE = "~/.config/scitaste/credentials.toml"
#: The agent's trace file without :data:`SCITASTE_TRACE`, in the working folder.
DEFAULT_TRACE_FILE = "scitaste-traces.jsonl"
#: The board's data folder without :data:`SCITASTE_DATA`, in the working folder.
DEFAULT_BOARD_DATA = "data"


def read(name: str) -> str | None:
    """The value of one of this module's variables, None when unset or empty.

    :param name: the variable, one of :data:`VARIABLES`.
    """
    if name not in VARIABLES:  # a typo would read an unset variable for good
        raise KeyError(f"{name} is not one of scitaste_hf.constants.VARIABLES")
    return os.environ.get(name) or None


def hf_endpoint() -> str:
    """The Hub endpoint huggingface_hub uses (:data:`HF_ENDPOINT`, else the public Hub), without a trailing ``/``."""
    return (read(HF_ENDPOINT) or DEFAULT_HF_ENDPOINT).rstrip("/")


def hf_hub_offline() -> bool:
    """Whether :data:`HF_HUB_OFFLINE` asks for offline mode, as huggingface_hub reads it."""
    return (read(HF_HUB_OFFLINE) or "").strip().upper() in ("1", "ON", "YES", "TRUE")


def credentials_file() -> str:
    """The credentials file in use: :data:`SCITASTE_CREDENTIALS`, else :data:`DEFAULT_CREDENTIALS_FILE`, expanded."""
    return os.path.expanduser(read(SCITASTE_CREDENTIALS) or DEFAULT_CREDENTIALS_FILE)


def trace_file() -> str:
    """The agent's trace file: :data:`SCITASTE_TRACE`, else :data:`DEFAULT_TRACE_FILE`."""
    return read(SCITASTE_TRACE) or DEFAULT_TRACE_FILE


def board_data() -> str:
    """The leaderboard's data folder: :data:`SCITASTE_DATA`, else :data:`DEFAULT_BOARD_DATA`."""
    return read(SCITASTE_DATA) or DEFAULT_BOARD_DATA


def submit_limit(default: tuple[int, float]) -> tuple[int, float] | None:
    """:data:`SCITASTE_SUBMIT_LIMIT` as (submissions, seconds): ``N`` (in ``default``'s window) or ``N/SECONDS``;
    ``default`` when unset; None for ``off`` (no limit, a board run locally).

    :param default: the limit without the variable, (submissions, seconds).
    """
    value = read(SCITASTE_SUBMIT_LIMIT)
    if not value:
        return default
    if value.strip().lower() == "off":
        return None
    count, _, window = value.partition("/")
    try:
        limit = (int(count), float(window) if window else default[1])
    except ValueError:
        raise ScitasteError(f"SCITASTE_SUBMIT_LIMIT must be N, N/SECONDS or off, got {value!r}") from None
    if limit[0] < 1 or limit[1] <= 0:
        raise ScitasteError(f"SCITASTE_SUBMIT_LIMIT must be positive, got {value!r}")
    return limit
