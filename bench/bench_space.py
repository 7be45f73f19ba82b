"""Leaderboard Space figures with 1,000 and 10,000 stored runs: building each board view (the styled table with rank
intervals, the floors' reference rows, the run lists of Compare), rows alone, one 300-line submission (validation,
integrity, scoring with intervals and skill, replicates, storing), the first view after an insert (a cache miss) and
a cached view; the Papers tab (a paper's page with every run's answer, a run's worst papers, the details table
brought up to date after a new run); the Report tab (a report of one and of REPORT_RUNS stored runs, first and
again, and by mode: every ranked run of the four modes); the board and the Queue tab while 25 requests arrive at
once; then, through a running Space (`scitaste space`), a valid submission's latency alone and while a 5 MiB upload
is being processed.

    python bench/bench_space.py [--runs 1000 10000] [--no-server]

The stored runs are honest-looking: 40 distinct runs (the example labels plus errors of SD 6 to 14, in the four
modes) are submitted and scored for real; the rest of the board are copies of them under other names, modes and
statuses, their skill and replicates shifted by a small amount each, so that no two runs tie (scoring 10,000
runs for real would take an hour and time nothing the board does). The copies have no submission file, so their
rows of the per-paper details table are their source run's, copied in SQL (what reading their files would give). A
view is timed as the Space serves it:
the table built, then gr.Dataframe's postprocessing, Gradio's walk over the value and the JSON of the result;
"first" is the first time a view is asked for, "cached" the next.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import runpy
import socket
import subprocess
import sys
import tempfile
import time
from functools import partial
from importlib import resources
from operator import itemgetter
from pathlib import Path

import numpy as np

from scitaste_hf.leaderboard import Leaderboard, Meta
from scitaste_hf.leaderboard.integrity import RULE_VERSION
from scitaste_hf.modes import MODES
from scitaste_hf.records import load_records
from scitaste_hf.resources import bundled_dir
from scitaste_hf.schema import DISCIPLINES

DISTINCT = 40
STATUSES = ["self-reported"] * 17 + ["evidence-consistent"] * 2 + ["flagged"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--no-server", action="store_true", help="skip the figures through a running Space")
    args = parser.parse_args()
    examples = resources.files("scitaste_hf").joinpath("data/examples")
    gold = load_records(str(examples.joinpath("gold.jsonl")))
    app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="bench")
    for n in args.runs:
        board_figures(app, gold, n)
    if not args.no_server:
        submission_beside_a_large_one(gold)


def _served(build, pick=lambda value: value) -> float:
    """Seconds to build a view and serialise it as Gradio does (postprocessing, its walk over the value for
    files, orjson); ``pick`` takes the table out of what ``build`` returns."""
    import gradio as gr
    import orjson
    from gradio.processing_utils import move_files_to_cache

    component = gr.Dataframe(interactive=False)
    t = time.perf_counter()
    value = pick(build())
    orjson.dumps(move_files_to_cache(component.postprocess(value).model_dump(), component, postprocess=True),
                 default=str)
    return time.perf_counter() - t


def _fill(board: Leaderboard, n: int, rng) -> None:
    """Store ``n`` runs: :data:`DISTINCT` scored ones, the rest copies of them (see the module docstring)."""
    for i in range(DISTINCT):
        board.submit(_jsonl(_noisy(board.gold, 6 + 8 * i / DISTINCT, seed=i)).encode(), f"honest-{i}", MODES[i % 4],
                     submitter="bench")
    base = [board.store.run(i + 1) for i in range(DISTINCT)]
    stored = [(json.loads(r["summary"]), json.loads(r["result"]), board.store.replicates_of(r["id"])) for r in base]
    meta_date = "2026-11-29T00:00:00"
    for i in range(n - DISTINCT):
        summary, result, values = stored[i % DISTINCT]
        shift = float(rng.normal(0, 0.01))
        summary = {scope: {**numbers, "s1_skill": None if numbers["s1_skill"] is None else numbers["s1_skill"] + shift}
                   for scope, numbers in summary.items()}
        sha = hashlib.sha256(f"run {n} {i}".encode()).hexdigest()
        meta = Meta(model=f"model-{i % 997}", mode=MODES[i % 4], submitted_at=meta_date)
        board.store.insert(sha, meta, STATUSES[i % len(STATUSES)], summary, result, 300, 300,
                           replicates={k: v.astype(np.float32) + shift for k, v in values.items()},
                           integrity_version=RULE_VERSION, derived=board.derived_key, withheld="")


def board_figures(app, gold, n: int) -> None:
    rng = np.random.default_rng(n)
    with tempfile.TemporaryDirectory() as tmp:
        filler = Leaderboard(tmp, gold, rate_limit=(10**9, 1.0))
        t = time.perf_counter()
        _fill(filler, n, rng)
        t_fill = time.perf_counter() - t
        filler.close()
        board = Leaderboard(tmp, gold, rate_limit=(10**9, 1.0))  # a fresh start: nothing cached
        print(f"\n== {len(board.store.states())} stored runs (filled in {t_fill:.0f} s) ==")
        # What the Space does before and right after it starts serving (serve(): build, freeze, warm)
        t = time.perf_counter()
        board.generation()
        t_read = time.perf_counter() - t
        t = time.perf_counter()
        board.floors()
        t_floors = time.perf_counter() - t
        t = time.perf_counter()
        cold = _served(partial(app["table"], board, "all", "physics"))
        gc.collect()
        gc.freeze()
        app["warm"](board)
        t_warm = time.perf_counter() - t
        print(f"start: reading every run {t_read:.3f} s, scoring the floors {t_floors:.3f} s (before serving); "
              f"warming every scope's view {t_warm:.3f} s (in the background); a scope's first view before it is "
              f"warmed {cold:.3f} s")
        t_submit = _submit(board, gold, 1)
        print(f"300-line submission (validation, integrity, scoring + skill, replicates, store): {t_submit:.3f} s")
        views = [("all modes, overall", {})]
        views += [(f"mode {m}", {"mode": m}) for m in MODES]
        views += [(f"discipline {d}", {"discipline": d}) for d in DISCIPLINES]
        views += [("dimagent_v3 x physics", {"mode": "dimagent_v3", "discipline": "physics"}),
                  ("grade C", {"grade": "C"}), ("status evidence-consistent", {"status": "evidence-consistent"}),
                  ("flagged shown", {"flagged": True})]
        print("each view after that insert: the table first (a cache miss: ranks computed again), then cached, "
              "and the floors' rows")
        print(f"{'view':32} {'runs':>6} {'table, first':>13} {'cached':>8} {'floors':>8}")
        worst = 0.0
        for name, filters in views:
            args = [filters.get("mode", "all"), filters.get("discipline", "overall"), filters.get("grade", "all"),
                    filters.get("status", "all"), filters.get("flagged", False)]
            table, floors_table = partial(app["table"], board, *args), partial(app["floors_table"], board, *args)
            first, cached, floors = _served(table), _served(table), _served(floors_table)
            worst = max(worst, first, floors)
            print(f"{name:32} {len(table()['data']):>6} {first:>11.3f} s {cached:>6.3f} s {floors:>6.3f} s")
        t = time.perf_counter()
        rows = board.rows()
        t_rows = time.perf_counter() - t
        t = time.perf_counter()
        choices = app["run_choices"](board)
        app["default_pair"](board)
        t_choices = time.perf_counter() - t
        print(f"rows (all modes, overall; cached view): {t_rows:.3f} s for {len(rows)} runs")
        print(f"Compare's run lists + preselection: {t_choices:.3f} s for {len(choices)} runs")
        t_submit = _submit(board, gold, 2)
        miss, hit = _served(partial(app["table"], board)), _served(partial(app["table"], board))
        print(f"another submission {t_submit:.3f} s; the first view after it (cache miss) {miss:.3f} s, the same view "
              f"cached {hit:.3f} s")
        print(f"slowest view (table or floors, first after an insert): {max(worst, miss):.3f} s   target < 1 s")
        papers_figures(app, board, gold, n)
        report_figures(app, board, gold)
        queue_figures(app, board)
        board.close()


def papers_figures(app, board: Leaderboard, gold, n: int) -> None:
    """The Papers tab over the board of :func:`board_figures`: the details table built (the copies' rows copied, see
    the module docstring), a paper's page first and again, a run's worst papers, and the first page after a new run
    (the details table brought up to date first)."""
    from scitaste_hf.leaderboard.details import COLUMNS

    papers = app["Papers"](board)
    t = time.perf_counter()
    papers.details.sync()
    t_sync = time.perf_counter() - t
    t = time.perf_counter()
    rest = [c for c in COLUMNS if c not in ("bibcode", "run_id")]
    with papers.details.transaction() as db:
        db.execute("CREATE TEMP TABLE copies (run_id INTEGER PRIMARY KEY, source INTEGER NOT NULL)")
        db.executemany("INSERT INTO copies VALUES (?, ?)",
                       [(DISTINCT + 1 + i, i % DISTINCT + 1) for i in range(n - DISTINCT)])
        db.execute(f"INSERT OR REPLACE INTO details (bibcode, run_id, {', '.join(rest)}) SELECT d.bibcode, c.run_id, "
                   f"{', '.join(f'd.{c}' for c in rest)} FROM details d JOIN copies c ON d.run_id = c.source")
        db.execute("DROP TABLE copies")
    t_copy = time.perf_counter() - t
    print(f"Papers: details of the distinct runs read in {t_sync:.1f} s, the copies' rows copied in {t_copy:.1f} s")
    page = partial(app["paper_view"], papers)
    runs_table = itemgetter(2)
    # The first page after an insert also computes the board's view with flagged runs, for its order; in the Space
    # the refresh after a submission and every page visit compute it first (Compare's run lists, Papers.refresh).
    cold = _served(partial(page, gold[0]["bibcode"]), runs_table)
    again = _served(partial(page, gold[1]["bibcode"]), runs_table)
    shown = len(page(gold[1]["bibcode"])[2]["data"])
    worst = _served(partial(app["papers_worst"], papers, 1))
    t_submit = _submit(board, gold, 3)
    t = time.perf_counter()
    app["run_choices"](board)
    papers.refresh()
    t_refresh = time.perf_counter() - t
    after = _served(partial(page, gold[2]["bibcode"]), runs_table)
    print(f"a paper's page ({shown} runs' answers): {again:.3f} s; a run's worst papers {worst:.3f} s; after another "
          f"submission ({t_submit:.1f} s) and the refresh that follows it ({t_refresh:.3f} s: the run lists, the "
          f"details and the order brought up to date) {after:.3f} s; the first page after an insert when nothing "
          f"refreshed before it {cold:.3f} s")
    slowest = max(again, worst, after)
    print(f"slowest Papers view: {slowest:.3f} s   target < 1 s")


def report_figures(app, board: Leaderboard, gold) -> None:
    """The Report tab over the board of :func:`board_figures`: a report of one stored run and of REPORT_RUNS
    (distinct runs, submitted for real: the copies have no answers file), each first, again (kept until the store
    changes) and after another submission (the store changed, so the report is built again from the runs' kept
    statistics and stored scores); matplotlib's import, which a process's first report pays once, is timed apart. The
    view is timed as built: its tables are one Markdown text, its heatmap one image."""
    from scitaste_hf.analysis.render import check_figures

    k = app["REPORT_RUNS"]
    picks = ([1], list(range(1, k + 1)))
    t = time.perf_counter()
    check_figures()  # what a process's first report pays once besides the report: timed apart
    print(f"matplotlib imported for the heatmap (once a process): {time.perf_counter() - t:.3f} s")
    for runs in picks:
        t = time.perf_counter()
        app["report_view"](board, runs, [])
        first = time.perf_counter() - t
        t = time.perf_counter()
        app["report_view"](board, runs, [])
        again = time.perf_counter() - t
        print(f"Report of {len(runs)} run(s): {first:.3f} s, the same again {again:.3f} s   target < 1 s")
    by_mode_figures(app, board)
    t_submit = _submit(board, gold, 4)
    for runs in picks:
        t = time.perf_counter()
        app["report_view"](board, runs, [])
        print(f"Report of {len(runs)} run(s) after another submission ({t_submit:.1f} s; runs already seen): "
              f"{time.perf_counter() - t:.3f} s   target < 1 s")


def by_mode_figures(app, board: Leaderboard) -> None:
    """The Report tab by mode, every ranked run of the four modes: choosing its runs (the first of each model, mode and
    withheld tool, which needs every ranked run's withheld tool) and the report, first and again. The copies get their
    source run's answers file first (a hard link), as a board of 10,000 submitted runs has a file for each."""
    for row in board.store.rows():
        own = board.store.submission_file(row["sha256"])
        if not own.exists():
            source = board.store.run((int(row["id"]) - DISTINCT - 1) % DISTINCT + 1)
            os.link(board.store.submission_file(source["sha256"]), own)
    ranked = sum(r["status"] != "flagged" for r in board.rows())
    for label in ("first", "again"):
        t = time.perf_counter()
        app["_report_runs"](board, [], list(MODES))
        chosen = time.perf_counter() - t
        t = time.perf_counter()
        app["report_view"](board, [], list(MODES))
        print(f"Report by mode ({len(MODES)} modes, {ranked} ranked runs), {label}: choosing the runs {chosen:.3f} s, "
              f"the report {time.perf_counter() - t:.3f} s   target < 1 s")


def queue_figures(app, board: Leaderboard) -> None:
    """The Queue tab and the board while requests arrive: 25 requests from 5 identities at once (each identity's
    fifth a duplicate, refused in one line), sent from 8 threads while this thread serves the board's table and
    the Queue tab over and over, as visitors would; then the Queue tab alone."""
    from concurrent.futures import ThreadPoolExecutor

    from scitaste_hf.net.guard import SubmissionError

    asks = [(f"visitor-{v}", f"org/queued-{v}-{k % 4}") for v in range(5) for k in range(5)]

    def ask(pair):
        try:
            return board.request(pair[1], ["pure_qa"], submitter=pair[0]).ids[0]
        except SubmissionError as exc:
            return str(exc)

    views = []
    with ThreadPoolExecutor(8) as pool:
        pending = [pool.submit(ask, pair) for pair in asks]
        while not all(f.done() for f in pending):
            views.append(_served(partial(app["table"], board)))
            views.append(_served(partial(app["queue_table"], board)))
        outcomes = [f.result() for f in pending]
    accepted = sum(isinstance(o, int) for o in outcomes)
    refused = [o for o in outcomes if isinstance(o, str)]
    assert accepted == 20 and len(refused) == 5 and all("\n" not in o for o in refused), outcomes
    alone = _served(partial(app["queue_table"], board))
    print(f"25 requests from 5 identities at once ({accepted} queued, {len(refused)} duplicates refused in one line): "
          f"{len(views)} views served meanwhile, the slowest {max(views, default=0.0):.3f} s; the Queue tab after "
          f"them {alone:.3f} s   target < 1 s")


def _submit(board: Leaderboard, gold, k: int) -> float:
    """Seconds for one new honest-looking 300-line submission."""
    data = _jsonl(_noisy(gold, 9.0, seed=10**6 + k)).encode()
    t = time.perf_counter()
    result = board.submit(data, f"bench-new-{k}", "pure_qa", submitter="bench")
    assert not result.duplicate and result.status == "self-reported", result
    return time.perf_counter() - t


def _jsonl(lines) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def _noisy(gold, sd: float, seed: int) -> list[dict]:
    """Honest-looking answers: the labels plus independent errors of SD ``sd`` (the labels shifted by a constant,
    as this bench sent before, are a disguised copy: flagged and not ranked)."""
    rng = np.random.default_rng(seed)

    def noisy(x):
        return float(np.clip(x + rng.normal(0, sd), 0, 100).round(1))

    return [{"bibcode": r["bibcode"], "innovation_score": noisy(r["innovation_score"]),
             "dimension_scores": {k: noisy(v) for k, v in r["dimension_scores"].items()}} for r in gold]


def _large(gold, limit: int) -> str:
    """Raw replies just under ``limit`` bytes in all: long prose full of keys that never finish (what the reply
    parser has to try and give up on), then the answer."""
    per_line = limit // len(gold) - 400
    prose = 'we weigh {"evidence" of the tools '
    escaped = len(json.dumps(prose)) - 2  # its length inside a JSON string
    return _jsonl({"bibcode": a["bibcode"], "response": prose * (per_line // escaped) + "\nFinal: " + json.dumps(
        {k: a[k] for k in ("innovation_score", "dimension_scores")})} for a in _noisy(gold, 6.0, seed=1))


def submission_beside_a_large_one(gold) -> None:
    """A small valid submission's latency through a running Space, alone and while a 5 MiB upload is processed."""
    import httpx
    from gradio_client import Client, handle_file
    from gradio_client.utils import Status

    from scitaste_hf.leaderboard.service import MAX_BYTES

    with socket.socket() as probe:  # a free port for the Space
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        files = {name: Path(tmp) / f"{name}.jsonl" for name in ("alone", "beside", "large")}
        files["alone"].write_text(_jsonl(_noisy(gold, 6.0, seed=2)))
        files["beside"].write_text(_jsonl(_noisy(gold, 6.0, seed=3)))
        files["large"].write_text(_large(gold, MAX_BYTES))
        size = files["large"].stat().st_size / 2**20
        env = {**os.environ, "SCITASTE_SUBMIT_LIMIT": "100", "GRADIO_ANALYTICS_ENABLED": "False"}
        server = subprocess.Popen([str(Path(sys.executable).with_name("scitaste")), "space", "--data",
                                   str(Path(tmp) / "data"), "--port", str(port)], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}/"
        try:
            for _ in range(600):
                try:
                    if httpx.get(url, timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)

            def submit(client, name):
                return client.submit(handle_file(str(files[name])), f"bench-{name}", "pure_qa", "", "",
                                     api_name="/submit")

            client = Client(url, verbose=False)
            t = time.perf_counter()
            alone = submit(client, "alone").result()
            t_alone = time.perf_counter() - t
            t = time.perf_counter()
            large = submit(Client(url, verbose=False), "large")
            while large.status().code != Status.PROCESSING and not large.done():
                time.sleep(0.05)
            t_started = time.perf_counter()
            beside = submit(client, "beside").result()
            t_beside = time.perf_counter() - t_started
            overlapped = not large.done()
            large_message = large.result()
            t_large = time.perf_counter() - t
        finally:
            server.terminate()
            server.wait()
    print(f"valid 300-line submission through the Space, alone: {t_alone:.2f} s ({alone.split(':')[0]})")
    print(f"the same while a {size:.2f} MiB upload is processed: {t_beside:.2f} s ({beside.split(':')[0]}; "
          f"{'answered while the large one was still processed' if overlapped else 'the large one had ended first'})")
    print(f"the {size:.2f} MiB upload, submitted to answered: {t_large:.2f} s ({large_message.split(':')[0]})")


if __name__ == "__main__":
    main()
