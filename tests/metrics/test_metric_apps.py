"""The metric Spaces' app.py, run as real Gradio servers on 127.0.0.1 and called through gradio_client."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scitaste_hf.adapters.metrics.app import example_inputs, read_inputs
from scitaste_hf.errors import ScitasteError

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NAMES = ["scitaste_wape", "scitaste_scheme1", "rtaste_brier", "rtaste_ranking"]


@pytest.fixture(scope="module")
def spaces(tmp_path_factory, servers):
    """Every metric Space of :data:`NAMES`, each its own Gradio server, all in one process
    (tests/fixtures/metric_spaces.py); yields name -> URL."""
    log = tmp_path_factory.mktemp("spaces") / "log.txt"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fixtures" / "metric_spaces.py"),
                                 str(ROOT / "metrics"), *NAMES], stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        urls = {}
        while len(urls) < len(NAMES):
            line = proc.stdout.readline()  # the suite's timeout bounds the wait
            if not line:
                raise RuntimeError(f"the metric Spaces exited: {log.read_text()[-3000:]}")
            if line.startswith("READY "):
                _, name, url = line.split()
                urls[name] = url
        yield urls
    finally:
        servers[1](proc)


@pytest.fixture(params=NAMES)
def space(request, spaces):
    return request.param, spaces[request.param]


def test_space_computes_the_example(space):
    from suite_http import space_client

    name, url = space
    client = space_client(url)
    result = client.predict(json.dumps(example_inputs(name)), None, api_name="/compute")
    if name.startswith("rtaste_"):
        key = {"rtaste_brier": "brier", "rtaste_ranking": "top1_hit_rate"}[name]
        assert 0.0 <= result[key] <= 1.0
        return
    expected = {"scitaste_wape": ("wape", "score", "grade"), "scitaste_scheme1": ("scheme1", "part_a", "part_b")}
    for key in expected[name]:
        assert result[key] is not None
    assert result["n_scored"] == result["n_total"] == 6


def test_space_reports_bad_input_as_one_line(space):
    from gradio_client.exceptions import AppError
    from suite_http import space_client

    name, url = space
    client = space_client(url)
    with pytest.raises(AppError, match="not valid JSON"):
        client.predict("{broken", None, api_name="/compute")
    bad = {"rtaste_brier": {"predictions": [1.5], "references": [1]},
           "rtaste_ranking": {"predictions": [[1, 1, 2, 3, 4]], "references": [[0, 1, 2, 3, 0]]},
           "scitaste_wape": {"predictions": [1.0, 2.0], "references": [0.0, 0.0]},
           "scitaste_scheme1": {"predictions": [None], "references": [{"innovation_score": 5}]}}[name]
    message = {"rtaste_brier": "not a probability", "rtaste_ranking": "not a permutation",
               "scitaste_wape": "sum to 0", "scitaste_scheme1": "lacks"}[name]
    with pytest.raises(AppError, match=message):
        client.predict(json.dumps(bad), None, api_name="/compute")


def test_read_inputs_from_upload(tmp_path):
    upload = tmp_path / "pairs.jsonl"
    upload.write_text('{"prediction": 40.0, "reference": 50.0}\n{"prediction": null, "reference": 20.0}\n')
    assert read_inputs(None, str(upload)) == {"predictions": [40.0, None], "references": [50.0, 20.0]}
    upload.write_text('{"prediction": 40.0}\n')
    with pytest.raises(ScitasteError, match="needs 'prediction' and 'reference'"):
        read_inputs(None, str(upload))
    with pytest.raises(ScitasteError, match=r'must be a JSON object \{"predictions"'):
        read_inputs("[1, 2]", None)
