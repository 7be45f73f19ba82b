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
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert resolve_secret(None, "OPENAI_API_KEY") is None


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


def test_a_credentials_file_that_cannot_be_used_is_one_line_and_shows_no_secret(tmp_path, monkeypatch):
    import os

    monkeypatch.delenv("ADS_API_TOKEN", raising=False)

    def refused(path, message):
        monkeypatch.setenv("SCITASTE_CREDENTIALS", str(path))
        with pytest.raises(ScitasteError, match=message) as error:
            resolve_secret(None, "ADS_API_TOKEN")
        assert "\n" not in str(error.value) and "s3cr3t" not in str(error.value)

    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'ADS_API_TOKEN = "s3cr3t\xe9"\n')  # was a UnicodeDecodeError traceback
    refused(latin, r"^credentials file \S+latin\.toml is not UTF-8 text \(byte 23 is 0xe9\); save it as UTF-8$")
    # a folder or a FIFO where the file belongs was silently no file: "set ADS_API_TOKEN ... in <that path>"
    refused(tmp_path, r"^credentials file \S+ is a folder$")
    os.mkfifo(tmp_path / "fifo.toml")
    refused(tmp_path / "fifo.toml", r"^credentials file \S+fifo\.toml is not a regular file")
    refused("/proc/self/mem", r"^credentials file /proc/self/mem cannot be read \(Input/output error\)$")  # an OSError
    # a value that is no string: true was read as the token "True", a table or a float silently dropped
    typed = tmp_path / "typed.toml"
    for line in ("ADS_API_TOKEN = true", "ADS_API_TOKEN = 1.5", '[ADS_API_TOKEN]\nvalue = "s3cr3t"'):
        typed.write_text(line + "\n")
        refused(typed, r"^credentials file \S+typed\.toml: ADS_API_TOKEN must be a string: "
                       r"ADS_API_TOKEN = \"\.\.\.\"$")
    typed.write_text('ADS_API_TOKEN = 12345\nOTHER = "x"\n')
    monkeypatch.setenv("SCITASTE_CREDENTIALS", str(typed))
    assert resolve_secret(None, "ADS_API_TOKEN") == "12345"
    monkeypatch.setenv("SCITASTE_CREDENTIALS", str(tmp_path / "none.toml"))
    assert resolve_secret(None, "ADS_API_TOKEN") is None  # no file: no credential, no error
