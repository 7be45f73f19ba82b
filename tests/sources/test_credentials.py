"""Credentials: keyword argument, then environment, then the credentials file; never in errors."""

import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.sources.credentials import resolve_secret


def test_precedence(tmp_path, monkeypatch):
    path = tmp_path / "credentials.toml"
    path.write_text('ADS_API_TOKEN = "from-file"\nOPENALEX_API_KEY = "oa-file"\n')
    monkeypatch.setenv("SCITASTE_CREDENTIALS", str(path))
    monkeypatch.delenv("ADS_API_TOKEN", raising=False)
    assert resolve_secret(None, "ADS_API_TOKEN") == "from-file"
    monkeypatch.setenv("ADS_API_TOKEN", "from-env")
    assert resolve_secret(None, "ADS_API_TOKEN") == "from-env"
    assert resolve_secret("from-arg", "ADS_API_TOKEN") == "from-arg"
    assert resolve_secret(None, "NOT_THERE") is None


def test_client_reads_the_file(tmp_path, monkeypatch, recorded):
    """A server that insists on a key: the client finds it in the credentials file, and fails without it."""
    from replay_server import ServerProcess

    from scitaste_hf.sources import OpenAlexClient
    from scitaste_hf.sources.errors import SourceError

    monkeypatch.delenv("OPENALEX_API_KEY", raising=False)
    monkeypatch.setenv("SCITASTE_CREDENTIALS", str(tmp_path / "none.toml"))
    with ServerProcess([recorded], require_token="oa-file-key") as server:
        client = OpenAlexClient(base_url=server.url + "/openalex", cache_dir=None)
        with pytest.raises(SourceError) as refused:
            client.get_work("W2741809807")
        assert "oa-file-key" not in str(refused.value)
        path = tmp_path / "credentials.toml"
        path.write_text('OPENALEX_API_KEY = "oa-file-key"\n')
        monkeypatch.setenv("SCITASTE_CREDENTIALS", str(path))
        client = OpenAlexClient(base_url=server.url + "/openalex", cache_dir=None)
        assert client.get_work("W2741809807").id == "W2741809807"


def test_bad_file_is_a_one_line_error(tmp_path, monkeypatch):
    path = tmp_path / "credentials.toml"
    path.write_text("ADS_API_TOKEN = \n")
    monkeypatch.setenv("SCITASTE_CREDENTIALS", str(path))
    monkeypatch.delenv("ADS_API_TOKEN", raising=False)
    with pytest.raises(ScitasteError, match="is not valid TOML"):
        resolve_secret(None, "ADS_API_TOKEN")
