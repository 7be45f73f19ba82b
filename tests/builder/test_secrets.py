"""`scitaste build --source live` takes the NASA ADS token from wherever the clients take it: the credentials file
counts as much as the environment (one home, scitaste_hf.sources.credentials)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scitaste_hf.sources.credentials import missing_secret, require_secret
from scitaste_hf.sources.errors import AuthError

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def _build_live(tmp_path, credentials: str | None, *extra: str):
    """`scitaste build --source live` with ``--per-discipline 0``, which is refused right after the token check:
    no request is sent (and a proxy nobody listens on stops any that would be)."""
    path = tmp_path / "credentials.toml"
    if credentials is not None:
        path.write_text(credentials)
    env = {k: v for k, v in os.environ.items() if k != "ADS_API_TOKEN"}
    env.update(SCITASTE_CREDENTIALS=str(path), HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9")
    done = subprocess.run([SCITASTE, "build", "--source", "live", "--out", str(tmp_path / "out"),
                           "--per-discipline", "0", *extra], capture_output=True, text=True, env=env, timeout=120)
    return done.returncode, done.stderr.strip().splitlines()


def test_a_token_only_in_the_credentials_file_passes_the_token_check(tmp_path):
    code, lines = _build_live(tmp_path, 'ADS_API_TOKEN = "ads-file-secret"\n')
    assert code != 0 and len(lines) == 1 and "per_discipline must be >= 1" in lines[0], lines
    assert "ads-file-secret" not in lines[0]


def test_no_token_anywhere_is_one_line_naming_both_places(tmp_path):
    code, lines = _build_live(tmp_path, None)
    where = tmp_path / "credentials.toml"
    assert code != 0 and len(lines) == 1, lines
    assert lines[0].endswith("a build from the live services needs a NASA ADS API token: set ADS_API_TOKEN in the "
                             "environment or in "
                             f"the credentials file {where}"), lines


def test_a_taxonomy_without_an_ads_route_discipline_needs_no_ads_token(tmp_path):
    # Every discipline of this taxonomy is collected from OpenAlex: the build gets past the token check without one.
    taxonomy = tmp_path / "openalex-only.yaml"
    taxonomy.write_text("finance:\n  code: FINA\n  sub_disciplines:\n"
                        "    - {id: finance.asset_pricing, name: Asset pricing, openalex_subfield: 2003,\n"
                        "       keywords: [asset pricing, expected return, risk premium]}\n")
    code, lines = _build_live(tmp_path, None, "--taxonomy", str(taxonomy))
    assert code != 0 and len(lines) == 1 and "per_discipline must be >= 1" in lines[0], lines
    # the packaged taxonomy has physics on the ADS route: the same build without a token stops at the token
    code, lines = _build_live(tmp_path, None)
    assert code != 0 and "needs a NASA ADS API token" in lines[0], lines


def test_require_secret_takes_the_argument_the_environment_then_the_file(tmp_path, monkeypatch):
    path = tmp_path / "credentials.toml"
    path.write_text('OPENALEX_API_KEY = "from-file"\n')
    monkeypatch.setenv("SCITASTE_CREDENTIALS", str(path))
    monkeypatch.delenv("OPENALEX_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert require_secret(None, "OPENALEX_API_KEY", "x") == "from-file"
    monkeypatch.setenv("OPENALEX_API_KEY", "from-env")
    assert require_secret(None, "OPENALEX_API_KEY", "x") == "from-env"
    assert require_secret("from-arg", "OPENALEX_API_KEY", "x") == "from-arg"
    with pytest.raises(AuthError) as missing:
        require_secret(None, "OPENAI_API_KEY", "the thing needs a token")
    assert str(missing.value) == missing_secret("OPENAI_API_KEY", "the thing needs a token") == (
        f"the thing needs a token: set OPENAI_API_KEY in the environment or in the credentials file {path}")
    with pytest.raises(KeyError, match=r"OPENAI_KEY is not one of scitaste_hf\.constants\.VARIABLES"):
        require_secret(None, "OPENAI_KEY", "x")  # a misspelt name fails at once, not as a missing token
