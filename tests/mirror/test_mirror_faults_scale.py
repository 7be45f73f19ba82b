"""The mirror under random faults, at full benchmark scale, and replaying the recorded real responses."""

import sys
from pathlib import Path

import httpx
import pytest

from scitaste_hf.cli import main
from scitaste_hf.mirror.app import build_app
from scitaste_hf.sources import OpenAlexClient

pytestmark = pytest.mark.slow

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def test_clients_ride_out_random_faults(servers, tmp_path, world):
    start, stop = servers
    proc, url = start([SCITASTE, "mirror", "serve", "--papers", "470", "--seed", "5", "--port", "{port}",
                       "--fault", "429=0.1", "--fault", "500=0.1", "--fault", "empty=0.05",
                       "--fault", "truncated=0.05"], log=tmp_path / "log.txt", ready="/health")
    try:
        client = OpenAlexClient(base_url=f"{url}openalex", cache_dir=None, backoff=(0.01, 0.05), max_retries=12)
        works = [client.get_work(world.work_id(i)) for i in range(40)]
        assert [w.id for w in works] == [world.work_id(i) for i in range(40)]
        log = httpx.get(f"{url}_control/log").json()
        assert log["rejected_429"] > 0 and len(log["requests"]) > 40  # faults happened and were retried
    finally:
        stop(proc)


def test_bad_fault_options_are_one_line_errors(capsys):
    assert main(["mirror", "serve", "--fault", "teapot=0.5"]) == 2
    assert main(["mirror", "serve", "--fault", "429=0.7", "--fault", "500=0.7"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("scitaste: error: --fault 'teapot=0.5'") and "add up to more than 1" in err[1]
    with pytest.raises(ValueError, match="fault rates"):
        build_app(fault_rates={"teapot": 0.1})


def test_recorded_world_replays_real_responses(servers, tmp_path):
    start, stop = servers
    proc, url = start([SCITASTE, "mirror", "serve", "--world", "recorded", "--port", "{port}"],
                      log=tmp_path / "log.txt", ready="/health")
    try:
        client = OpenAlexClient(base_url=f"{url}openalex", cache_dir=None)
        work = client.get_work("W2741809807")
        assert work.id == "W2741809807" and work.cited_by_count > 0
        focal = client.get_works(["W3045921891", "W3046863325"])
        assert [w.cited_by_count for w in focal] == [0, 5]
        assert len(list(client.iter_citing(["W3046863325", "W3045921891"]))) == 5
    finally:
        stop(proc)


def test_full_scale_world_through_the_clients(servers, tmp_path):
    """The whole 6,000-paper world, served and sampled through the clients."""
    from scitaste_hf.simworld.world import generate

    start, stop = servers
    proc, url = start([SCITASTE, "mirror", "serve", "--port", "{port}"], log=tmp_path / "log.txt",
                      ready="/health", timeout=240)
    try:
        world = generate(6000, 0)
        assert world.n_candidates == 9023  # 1.5 x the quota of each cell, rounded up
        client = OpenAlexClient(base_url=f"{url}openalex", cache_dir=None)
        top = client.iter_works("type:article", sort="cited_by_count:desc", limit=50)
        counts = [w.cited_by_count for w in top]
        assert len(counts) == 50 and counts == sorted(counts, reverse=True)
        for i in (0, 1234, 5999):
            work = client.get_work(world.work_id(i))
            assert work.cited_by_count == world.citers(i).shape[0]
            assert {w.id for w in client.iter_citing(world.work_id(i))} == {
                world.work_id(int(c)) for c in world.citers(i)}
    finally:
        stop(proc)
