"""`scitaste evidence freeze --source mirror` points its clients at the mirror's layout and without the live
services' rate limits (the mirror is local); `--source live` keeps them."""

import json

from scitaste_hf.cli import main
from scitaste_hf.sources import ADSClient, OpenAlexClient


def test_freeze_against_the_mirror_runs_without_the_live_limits(mirror, world, tmp_path, monkeypatch):
    from scitaste_hf.agent import evidence

    built = {}
    real = evidence.freeze

    def spy(toolbox, *args, **kwargs):
        built[kwargs["source"]] = toolbox
        return real(toolbox, *args, **kwargs) if kwargs["source"] == "mirror" else tmp_path  # live: no internet

    monkeypatch.setattr(evidence, "freeze", spy)
    i = next(k for k in range(world.n_candidates) if world.discipline(k) != "physics")
    record = {"bibcode": f"SYN-{i}", "discipline": world.discipline(i), "openalex_id": world.work_id(i),
              "doi": world.doi(i)}
    (tmp_path / "records.jsonl").write_text(json.dumps(record) + "\n")
    common = ["evidence", "freeze", "--dataset", str(tmp_path / "records.jsonl"), "--out", str(tmp_path / "ev")]
    assert main([*common, "--mirror-url", mirror + "/"]) == 0
    assert main([*common, "--source", "live"]) == 0

    local, live = built["mirror"], built["live"]
    assert local.openalex.transport.base_url == f"{mirror}/openalex"
    assert local.ads.transport.base_url == f"{mirror}/ads/v1"
    assert local.openalex.transport.rate_limit is None and local.ads.transport.rate_limit is None
    assert local.openalex.stats.sent > 0 and (tmp_path / "ev" / "README.md").is_file()
    assert live.openalex.transport.rate_limit == OpenAlexClient().transport.rate_limit == (10, 1.0)
    assert live.ads.transport.rate_limit == ADSClient().transport.rate_limit == (5, 1.0)
