"""The Space in Hub mode as a real server: ``SYSTEM=spaces`` with the OAuth variables a Space with ``hf_oauth: true``
gets, and a session cookie signed exactly as Gradio's OAuth callback signs it (Starlette's SessionMiddleware keyed by
``sha256(OAUTH_CLIENT_SECRET + "-v4")``, holding authlib's token under ``oauth_info``). Every handler that takes the
signed-in user is called through Gradio's queue, so that what Gradio injects (``gr.OAuthProfile``) is what the
handler sees: the ratings are stored under ``hf:<username>``, the runs' submitter is the account, and the rate limits
are the account's, whatever address or name the client sends."""

import base64
import hashlib
import json
import sqlite3
import time
from importlib import resources

import pytest

pytestmark = pytest.mark.slow

SECRET = "test-oauth-secret"
HUB_ENV = {"SYSTEM": "spaces", "SPACE_ID": "scitaste/leaderboard-test", "OAUTH_CLIENT_ID": "test-client",
           "OAUTH_CLIENT_SECRET": SECRET, "OAUTH_SCOPES": "openid profile",
           # Never reached: only /login/huggingface reads the provider's metadata, and no test signs in through it.
           "OPENID_PROVIDER_URL": "http://127.0.0.1:9", "SCITASTE_SUBMIT_LIMIT": "2/3600"}
PAPER_ID, STATUS = 1, 10
EXAMPLES = resources.files("scitaste_hf").joinpath("data/examples")


def session_cookie(username: str, *, secret: str = SECRET, expires_in: int = 3600) -> str:
    """The ``session`` cookie Gradio's ``/login/callback`` sets after a Hugging Face sign-in (gradio/oauth.py:
    ``request.session["oauth_info"] = oauth_info``, authlib's token with its parsed ``userinfo``), signed as
    Starlette's SessionMiddleware signs it (base64 JSON, itsdangerous TimestampSigner)."""
    import itsdangerous

    now = int(time.time())
    oauth_info = {"access_token": f"hf_oauth_{username}", "token_type": "bearer", "expires_in": expires_in,
                  "id_token": "header.payload.signature", "scope": "openid profile",
                  "expires_at": now + expires_in,
                  "userinfo": {"sub": hashlib.sha256(username.encode()).hexdigest()[:24], "name": username.title(),
                               "preferred_username": username, "profile": f"https://huggingface.co/{username}",
                               "picture": "", "website": "", "aud": "test-client", "auth_time": now,
                               "nonce": "n", "iat": now, "exp": now + expires_in, "iss": "https://huggingface.co"}}
    key = hashlib.sha256((secret + "-v4").encode()).hexdigest()
    data = base64.b64encode(json.dumps({"oauth_info": oauth_info}).encode("utf-8"))
    return itsdangerous.TimestampSigner(key).sign(data).decode("utf-8")


def _client(url, username=None, **headers):
    from suite_http import space_client

    if username is not None:
        headers["Cookie"] = f"session={session_cookie(username)}"
    return space_client(url, headers=headers)


def _rows(data_dir, table, db="ratings.sqlite"):
    with sqlite3.connect(data_dir / db) as con:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute(f"SELECT * FROM {table} ")]


@pytest.fixture(scope="module")
def hub_space(tmp_path_factory, space_starter, servers):
    data = tmp_path_factory.mktemp("hub-space-data")
    proc, url = space_starter(data, data / "log.txt", HUB_ENV)
    yield url, data
    servers[1](proc)


def test_a_signed_in_rater_rates_skips_and_stops_under_the_account(hub_space):
    url, data_dir = hub_space
    ann = _client(url, "ann")
    shown = ann.predict("mallory", "physics", api_name="/annotate_next")  # the name sent is ignored on the Hub
    assert shown[PAPER_ID], shown[STATUS]
    rated = ann.predict("mallory", "physics", shown[PAPER_ID], *[61, 62, 63, 64, 65, 66, 67, 68],
                        api_name="/annotate_rate")
    assert rated[STATUS].startswith(f"Stored: rating of {shown[PAPER_ID]} stored. You have rated 1 paper(s)"), \
        rated[STATUS]
    [row] = _rows(data_dir, "ratings")
    assert (row["rater"], row["bibcode"], row["innovation_score"]) == ("hf:ann", shown[PAPER_ID], 61.0)

    skipped = ann.predict("mallory", "physics", rated[PAPER_ID], api_name="/annotate_skip")
    assert skipped[STATUS].startswith(f"Skipped {rated[PAPER_ID]}. You have rated 1 paper(s)"), skipped[STATUS]
    stopped = ann.predict("mallory", api_name="/annotate_stop")
    assert stopped[STATUS].startswith("Stopped; come back any time. You have rated 1 paper(s)"), stopped[STATUS]
    states = {(r["rater"], r["bibcode"]): r["state"] for r in _rows(data_dir, "assignments")}
    assert states == {("hf:ann", shown[PAPER_ID]): "rated", ("hf:ann", rated[PAPER_ID]): "skipped",
                      ("hf:ann", skipped[PAPER_ID]): "released"}


def test_without_a_valid_session_nothing_is_stored(hub_space):
    url, data_dir = hub_space
    before = _rows(data_dir, "ratings")
    anonymous = _client(url)
    assert anonymous.predict("ann", "physics", api_name="/annotate_next")[STATUS] == \
        "Refused: sign in with Hugging Face first (the button above)"
    forged = _client(url, Cookie=f"session={session_cookie('ann', secret='not-the-space-secret')}")
    assert forged.predict("ann", "physics", "x", *[50] * 8, api_name="/annotate_rate")[STATUS] == \
        "Refused: sign in with Hugging Face first (the button above)"
    expired = _client(url, Cookie=f"session={session_cookie('ann', expires_in=-10)}")
    assert expired.predict("ann", "physics", api_name="/annotate_next")[STATUS] == \
        "Refused: sign in with Hugging Face first (the button above)"
    assert _rows(data_dir, "ratings") == before


def test_a_signed_in_submitter_is_the_account_and_the_limit_is_the_accounts(hub_space):
    from gradio_client import handle_file

    url, data_dir = hub_space
    predictions = handle_file(str(EXAMPLES.joinpath("predictions.jsonl")))
    # A forwarded address is whatever the client writes: it neither names the submitter nor moves the limit.
    bob = _client(url, "bob", **{"X-Forwarded-For": "203.0.113.7"})
    accepted = bob.predict(predictions, "bob-model", "pure_qa", "", "", None, None, api_name="/submit")
    assert accepted.startswith("Accepted: scored as run #"), accepted
    run = int(accepted.split("#")[1].split(":")[0])
    [meta] = [r for r in _rows(data_dir, "runs", "leaderboard.sqlite") if r["id"] == run]
    assert meta["submitter"] == "hf:bob"
    # the limit (2 accepted an hour here) is bob's account, whichever address each request claims
    second = _client(url, "bob", **{"X-Forwarded-For": "198.51.100.1"})
    assert second.predict(predictions, "bob-model", "native_search", "", "", None, None,
                          api_name="/submit").startswith("Accepted: ")
    third = _client(url, "bob", **{"X-Forwarded-For": "198.51.100.2"})
    refused = third.predict(predictions, "bob-model", "dimagent_v3", "", "", None, None, api_name="/submit")
    assert refused.startswith("Rejected: too many submissions"), refused
    # another account is not held back by bob's
    carol = _client(url, "carol").predict(predictions, "carol-model", "dimagent_v3_native", "", "", None, None,
                                          api_name="/submit")
    assert carol.startswith("Accepted: "), carol
