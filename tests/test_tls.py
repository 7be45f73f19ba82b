"""One TLS context per process (scitaste_hf.net.tls): the package's chat exchanges and source clients share it
instead of loading the certificate bundle into a new one each, and it is httpx's default context."""

import ssl

import certifi

from scitaste_hf.net import tls


def test_exchanges_and_source_clients_load_the_certificates_once(scripted_chat, tmp_path, monkeypatch):
    from scitaste_hf.net.bounded import exchange
    from scitaste_hf.sources.options import ClientOptions
    from scitaste_hf.sources.transport import Transport

    proc, url, log = scripted_chat({"rules": [], "default": "hello"}, tmp_path)
    made = []
    real = ssl.create_default_context
    monkeypatch.setattr(ssl, "create_default_context", lambda *a, **k: made.append(k) or real(*a, **k))
    tls.ssl_context.cache_clear()
    try:
        for _ in range(5):
            status, _, body = exchange("POST", f"{url}/v1/chat/completions", limit=10, max_bytes=1 << 16,
                                       json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            assert status == 200 and b"hello" in body
        for _ in range(2):  # two source transports, each with a client of its own
            transport = Transport("Test", ClientOptions(base_url=url))
            try:
                assert transport.request("GET", "/health").data == {"status": "ok"}
            finally:
                transport.close()
    finally:
        proc.terminate()
        proc.wait()
    assert len(log.read_text().splitlines()) == 5  # the POSTs (the log holds no GET)
    assert len(made) == 1  # httpx's default context, made once for all of them


def test_the_context_is_httpxs_default_and_honours_ssl_cert_file(tmp_path, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    tls.ssl_context.cache_clear()
    default = tls.ssl_context()
    assert tls.ssl_context() is default and default.verify_mode == ssl.CERT_REQUIRED and default.check_hostname
    bundle = certifi.contents().split("-----END CERTIFICATE-----")
    one = tmp_path / "one.pem"
    one.write_text(bundle[0] + "-----END CERTIFICATE-----\n")
    monkeypatch.setenv("SSL_CERT_FILE", str(one))
    tls.ssl_context.cache_clear()
    try:
        assert tls.ssl_context().cert_store_stats()["x509_ca"] == 1
        assert default.cert_store_stats()["x509_ca"] == len(bundle) - 1 > 100
    finally:
        tls.ssl_context.cache_clear()
