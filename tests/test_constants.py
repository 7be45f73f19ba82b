"""scitaste_hf.constants is the one reader of the package's environment variables: its readers, and a scan that no
other module (the Space, the metrics and the task folders included) reads one of them itself."""

import ast
from pathlib import Path

import pytest

from scitaste_hf import constants
from scitaste_hf.errors import ScitasteError

ROOT = Path(__file__).resolve().parents[1]
#: The code that ships: the package, the Space, the ``evaluate`` modules and the lm-eval task folders.
SHIPPED = ("scitaste_hf", "space", "metrics", "lm_eval_tasks")
OWNER = ROOT / "scitaste_hf" / "constants.py"
#: The prefixes of the names only :mod:`scitaste_hf.constants` may read.
OWNED_PREFIXES = ("SCITASTE_", "HF_")


def _owned(name: str) -> bool:
    return name.startswith(OWNED_PREFIXES) or name in constants.CREDENTIAL_VARIABLES or name in constants.VARIABLES


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ`` (``from os import environ``)."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


def _key_is_owned(node: ast.AST | None) -> bool:
    """Whether the key of a read names an owned variable: a literal one, one of the constants (``constants.HF_TOKEN``,
    ``HF_TOKEN``), or a name that cannot be known here (a parameter: ``os.environ.get(env_var)``)."""
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and _owned(node.value)
    return True  # not a literal: whatever it names, it bypasses the readers


def environment_reads(source: str) -> list[int]:
    """The lines of ``source`` that read an owned variable from the environment: ``os.environ.get(NAME)``,
    ``os.getenv(NAME)``, ``os.environ[NAME]``, ``NAME in os.environ``, ``os.environ.setdefault``/``pop``. An
    assignment (``os.environ[NAME] = ...``, setting a variable for child code) and a whole copy
    (``dict(os.environ)``) pass."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Call):
            func = node.func
            getter = isinstance(func, ast.Attribute) and (
                (func.attr in ("get", "setdefault", "pop") and _is_environ(func.value))
                or (func.attr == "getenv" and isinstance(func.value, ast.Name) and func.value.id == "os"))
            if getter or (isinstance(func, ast.Name) and func.id == "getenv"):
                key = node.args[0] if node.args else None
        elif isinstance(node, ast.Subscript) and _is_environ(node.value) and isinstance(node.ctx, ast.Load):
            key = node.slice
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators) \
                and all(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            key = node.left
        if _key_is_owned(key):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_no_module_but_constants_reads_an_owned_variable():
    found = []
    for folder in SHIPPED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path != OWNER:
                found += [f"{path.relative_to(ROOT)}:{line}" for line in environment_reads(path.read_text("utf-8"))]
    assert found == [], "read these through scitaste_hf.constants: " + ", ".join(found)


def test_the_scan_catches_every_form_of_read():
    source = '''
import os
from os import environ, getenv
from scitaste_hf import constants

a = os.environ.get("SCITASTE_DATA_DIR")
b = os.getenv("HF_TOKEN", "")
c = os.environ["OPENAI_API_KEY"]
d = "SCITASTE_TRACE" not in os.environ
e = environ.get(constants.HF_ENDPOINT)
f = getenv("ADS_API_TOKEN")
g = os.environ.setdefault("SCITASTE_GOLD", "x")
def secret(env_var):
    return os.environ.get(env_var)
os.environ["SCITASTE_TRACE"] = "t.jsonl"
h = os.environ.get("JAVA_HOME")
i = "PYSPARK_GATEWAY_PORT" in os.environ
j = dict(os.environ)
'''
    assert environment_reads(source) == [6, 7, 8, 9, 10, 11, 12, 14]


def test_every_variable_is_named_once_and_the_credentials_are_among_them():
    assert len(set(constants.VARIABLES)) == len(constants.VARIABLES)
    assert set(constants.CREDENTIAL_VARIABLES) <= set(constants.VARIABLES)
    assert all(getattr(constants, name) == name for name in constants.VARIABLES)
    assert {"HF_TOKEN", "ADS_API_TOKEN", "OPENALEX_API_KEY", "OPENALEX_MAILTO", "OPENAI_API_KEY",
            "SCITASTE_CREDENTIALS", "SCITASTE_WORKER_SECRET", "SCITASTE_SEALED_KEY"} == set(
        constants.CREDENTIAL_VARIABLES)


def test_read_treats_empty_as_unset_and_refuses_an_unknown_name(monkeypatch):
    monkeypatch.setenv("SCITASTE_GOLD", "")
    assert constants.read(constants.SCITASTE_GOLD) is None
    monkeypatch.setenv("SCITASTE_GOLD", "org/gold")
    assert constants.read(constants.SCITASTE_GOLD) == "org/gold"
    with pytest.raises(KeyError, match="SCITASTE_GOLDEN"):
        constants.read("SCITASTE_GOLDEN")


def test_the_readers_defaults_and_parsing(monkeypatch, tmp_path):
    for name in constants.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert constants.hf_endpoint() == "https://huggingface.co"
    assert constants.hf_hub_offline() is False
    assert constants.board_data() == "data"
    assert constants.trace_file() == "scitaste-traces.jsonl"
    assert constants.credentials_file().endswith("/.config/scitaste/credentials.toml")
    assert "~" not in constants.credentials_file()
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9/")
    monkeypatch.setenv("HF_HUB_OFFLINE", " yes ")
    monkeypatch.setenv("SCITASTE_CREDENTIALS", str(tmp_path / "c.toml"))
    assert constants.hf_endpoint() == "http://127.0.0.1:9"
    assert constants.hf_hub_offline() is True
    assert constants.credentials_file() == str(tmp_path / "c.toml")


@pytest.mark.parametrize(("value", "expected"), [
    (None, (5, 3600.0)), ("", (5, 3600.0)), ("off", None), (" OFF ", None), ("7", (7, 3600.0)),
    ("2/60", (2, 60.0)),
])
def test_submit_limit(monkeypatch, value, expected):
    monkeypatch.delenv("SCITASTE_SUBMIT_LIMIT", raising=False)
    if value is not None:
        monkeypatch.setenv("SCITASTE_SUBMIT_LIMIT", value)
    assert constants.submit_limit((5, 3600.0)) == expected


@pytest.mark.parametrize(("value", "message"), [
    ("many", "SCITASTE_SUBMIT_LIMIT must be N, N/SECONDS or off, got 'many'"),
    ("0/60", "SCITASTE_SUBMIT_LIMIT must be positive, got '0/60'"),
    ("3/0", "SCITASTE_SUBMIT_LIMIT must be positive, got '3/0'"),
])
def test_a_bad_submit_limit_is_one_line(monkeypatch, value, message):
    monkeypatch.setenv("SCITASTE_SUBMIT_LIMIT", value)
    with pytest.raises(ScitasteError) as caught:
        constants.submit_limit((5, 3600.0))
    assert str(caught.value) == message
