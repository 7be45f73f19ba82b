"""The Annotate tab's sign-in, app functions called directly: on the Hub the rater is the signed-in Hugging Face
account and a name sent by the client is ignored; locally the typed name. (The served tab is covered in
test_space_annotate.py; outside a Space, Gradio cannot sign anyone in.)"""

import runpy
from importlib import resources

import pytest

from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.ratings import Ratings
from scitaste_hf.records import load_records
from scitaste_hf.resources import bundled_dir

GOLD = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
STATUS = 10


@pytest.fixture(scope="module")
def app():
    return runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")


@pytest.fixture()
def ratings(tmp_path):
    service = Ratings(tmp_path, GOLD)
    yield service
    service.close()


def _profile(username):
    import gradio as gr  # here, not at the top: every xdist worker imports every test module to collect it

    return gr.OAuthProfile({"preferred_username": username, "name": username.title(), "picture": "",
                            "profile": f"https://huggingface.co/{username}"})


def test_on_the_hub_the_rater_is_the_signed_in_account(app, ratings, monkeypatch):
    monkeypatch.setenv("SYSTEM", "spaces")
    refused = app["annotate_next"](ratings, "mallory", "physics", None)
    assert refused[STATUS] == "Refused: sign in with Hugging Face first (the button above)"
    shown = app["annotate_next"](ratings, "mallory", "physics", _profile("ann"))
    rated = app["annotate_rate"](ratings, "mallory", "physics", shown[1], [55] * 8, _profile("ann"))
    assert rated[STATUS].startswith("Stored: ")
    [row] = ratings.store.ratings()
    assert row["rater"] == "hf:ann"  # the account, never the name the client sent
    assert ratings.pseudonym("hf:ann") in rated[STATUS]
    # someone else signed in cannot rate ann's paper, whatever name they send
    other = app["annotate_rate"](ratings, "ann", "physics", shown[1], [55] * 8, _profile("bob"))
    assert other[STATUS] == f"Refused: {shown[1]} is not a paper assigned to you; ask for the next paper"


def test_locally_the_rater_is_the_typed_name(app, ratings, monkeypatch):
    monkeypatch.delenv("SYSTEM", raising=False)
    shown = app["annotate_next"](ratings, "Ann", "physics", _profile("ignored"))
    app["annotate_rate"](ratings, "Ann", "physics", shown[1], [55] * 8, None)
    assert [r["rater"] for r in ratings.store.ratings()] == ["local:Ann"]


def _login_buttons(demo):
    import gradio as gr

    return [b for b in demo.blocks.values() if isinstance(b, gr.LoginButton)]


@pytest.mark.slow
def test_the_hub_app_has_a_sign_in_button_and_the_local_one_a_name_box(app, tmp_path, monkeypatch):
    board = Leaderboard(tmp_path, GOLD)
    # Gradio attaches its OAuth routes to an app with a LoginButton, which needs gradio[oauth] (a Space has it);
    # this checks the app's layout, not Gradio's routes.
    monkeypatch.setattr("gradio.routes.attach_oauth", lambda fastapi_app: None)
    monkeypatch.setenv("SYSTEM", "spaces")
    hub = app["build_app"](board)
    monkeypatch.delenv("SYSTEM")
    local = app["build_app"](board)
    # one sign-in button where a visitor's identity is taken: Annotate's raters, Submit's requests and the Queue's
    # cancel (the Prospective tab reads the same signed-in session)
    assert len(_login_buttons(hub)) == 3 and _login_buttons(local) == []
    names = [c["props"] for c in local.config["components"] if c.get("type") == "textbox"
             and c["props"].get("label", "").startswith("your name")]
    assert len(names) == 3 and all(n["visible"] is not False for n in names)
    assert not [c for c in hub.config["components"] if c.get("type") == "textbox"
                and c["props"].get("label", "").startswith("your name")]  # on the Hub nobody types a name
    board.close()


def test_a_paper_is_shown_as_plain_text(app):
    paper = {"bibcode": "b", "discipline": "physics", "year": 2004, "journal_name": "J <b>x</b>",
             "title": "A [link](javascript:alert(1)) *x*", "abstract": "<img src=x onerror=alert(1)>"}
    text = app["paper_markdown"](paper)
    assert text == ("### A \\[link\\]\\(javascript:alert\\(1\\)\\) \\*x\\*\n\n*physics, 2004, J &lt;b&gt;x&lt;/b&gt;*"
                    "\n\n&lt;img src=x onerror=alert\\(1\\)&gt;")
