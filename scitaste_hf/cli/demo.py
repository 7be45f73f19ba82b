"""The main job on its offline default, from world to leaderboard: start the mirror over the simulated world
(synthetic data), build the dataset through the real clients, freeze the tools' evidence, run every mode with
scitaste-baseline through lm-eval, score every run with the evaluate metrics, store the runs in the leaderboard,
and print it. A second run reuses what the first built.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste demo``."""
    parser.add_argument("--out", default="scitaste-demo", help="folder of everything the demo makes")
    parser.add_argument("--papers", type=int, default=6000,
                        help="papers the benchmark keeps from the simulated world (default 6000, the two splits' "
                             "size; e.g. 600 for a quick look)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the world and of the sampling")


def _scitaste(*args: str) -> list[str]:
    return [str(Path(sys.executable).with_name("scitaste")), *args]


def _step(console, text: str) -> None:
    console.rule(f"[bold]{text}")


class _Mirror:
    """`scitaste mirror serve` in a child process, started only when a step needs it."""

    def __init__(self, papers: int, seed: int) -> None:
        self.papers, self.seed, self.proc, self.url = papers, seed, None, ""

    def start(self, console) -> str:
        if self.proc is None:
            from scitaste_hf.errors import ScitasteError

            console.print(f"starting the mirror over a synthetic world sized for {self.papers} papers ...")
            self.proc = subprocess.Popen(_scitaste("mirror", "serve", "--papers", str(self.papers), "--seed",
                                                   str(self.seed), "--port", "0"), stdout=subprocess.PIPE, text=True)
            line = ""
            # The world is built before the mirror answers: show that it is under way, and what it says.
            with console.status("building the simulated world ...", spinner="dots"):
                while not line.startswith("READY"):
                    line = self.proc.stdout.readline()
                    if not line:
                        raise ScitasteError("the mirror did not start; run `scitaste mirror serve` to see why")
                    console.print(f"[dim]mirror: {line.rstrip()}[/dim]", highlight=False)
            self.url = line.split()[1]
        return self.url

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:  # a mirror busy under load: its answers are no longer wanted
                self.proc.kill()
                self.proc.wait()


def run(args: argparse.Namespace) -> int:
    """Run every step whose output is missing; print the leaderboard and where everything is."""
    from scitaste_hf.cli.tables import console as make_console
    from scitaste_hf.cli.tables import fitted
    from scitaste_hf.errors import InvalidInput, ScitasteError

    if args.papers < 300:
        raise InvalidInput("--papers must be at least 300 (enough for every sub-discipline of the taxonomy)")
    console = make_console(150)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from scitaste_hf.agent.evidence import EVIDENCE_DIR

    dataset, results = out / "dataset", out / "lm_eval"
    evidence = dataset / EVIDENCE_DIR
    from scitaste_hf.schema import DISCIPLINES

    per_discipline = args.papers // len(DISCIPLINES)  # the demo builds the default release
    selected = min(50, max(8, per_discipline // 20))
    mirror = _Mirror(args.papers, args.seed)
    try:
        _step(console, "1/5 dataset")
        if (dataset / "README.md").is_file():
            console.print(f"reusing {dataset}")
        else:
            url = mirror.start(console)
            _check(subprocess.run(_scitaste("build", "--source", "mirror", "--mirror-url", url, "--out", str(dataset),
                                            "--work-dir", str(out / "build.work"), "--seed", str(args.seed),
                                            "--per-discipline", str(per_discipline), "--selected-per-discipline",
                                            str(selected), "--resume")), "scitaste build")
        _step(console, "2/5 frozen tool evidence")
        if evidence.is_dir():
            console.print(f"reusing {evidence}")
        else:
            from scitaste_hf.cli import main

            url = mirror.start(console)
            if main(["evidence", "freeze", "--dataset", str(dataset), "--out", str(evidence), "--mirror-url", url]):
                raise ScitasteError("freezing the tool evidence failed (see above); run the demo again to resume")
    finally:
        mirror.stop()
    from scitaste_hf.adapters.lmeval.tasks import TASKS

    _step(console, f"3/5 the {len(TASKS)} modes with scitaste-baseline through lm-eval")
    missing = [task for task in TASKS.values() if not _samples(results, task)]
    if not missing:
        console.print(f"reusing {results}")
    else:  # a demo folder from an earlier version may lack a mode added since: run only what is missing
        _check(subprocess.run(_scitaste("eval", "--model", "scitaste-baseline", "--model_args",
                                        f"data_dir={dataset},trace_path={out / 'traces.jsonl'}", "--tasks",
                                        ",".join(missing), "--metadata", json.dumps({"data_dir": str(dataset)}),
                                        "--output_path", str(results), "--log_samples")), "scitaste eval")
    _step(console, "4/5 scores (evaluate metrics) and the leaderboard store")
    board = _store(console, out, dataset, results)
    _step(console, "5/5 leaderboard")
    table = board_table(board)
    console.print(fitted(console, table, *BOARD_STACK))
    from scitaste_hf.resources import install_hint

    console.print(f"dataset: {dataset}\nfrozen evidence: {evidence}\nlm-eval outputs: {results}\n"
                  f"predictions: {out / 'predictions'}\nleaderboard store: {out / 'leaderboard.sqlite'}\n"
                  f"open the leaderboard: scitaste space --data {out}  ({install_hint('space')})",
                  markup=False)
    return 0


#: The board's columns when the terminal is narrower than it (:func:`~scitaste_hf.cli.tables.fitted`): Scheme 1,
#: Scheme 2, then coverage and status, each led by the two rank intervals, run and mode.
BOARD_STACK = ([0, 1, 2, 3], [[4, 5], [6, 7, 8], [9, 10]])


def board_table(board):
    """The demo's leaderboard as a rich table: every run, then the floors."""
    from rich.table import Table

    ceiling = board.noise_ceiling()["scheme1_skill"]
    top_low, top_high = ceiling["interval"] or (ceiling["value"], ceiling["value"])
    table = Table(title="scitaste-baseline on the synthetic demo dataset (not the benchmark); ordered by Scheme-1 "
                        "skill over the constant floor; noise ceiling of S1 skill (a predictor of the expected gold "
                        f"against the redrawn gold): {ceiling['value']:+.2f} [{top_low:+.2f}, {top_high:+.2f}]",
                  title_justify="left")
    for column in ("rank", "rank (gold redrawn)", "run", "mode", "Scheme-1", "S1 skill [95%]", "Scheme-2", "grade",
                   "WAPE %", "coverage", "status"):
        table.add_column(column)
    for row in [*board.rows(), *board.floors()]:
        low, high = row.get("s1_skill_ci") or (None, None)
        skill = "" if row.get("s1_skill") is None else f"{row['s1_skill']:+.2f}" + (
            "" if low is None else f" [{low:+.2f}, {high:+.2f}]")
        ranks = (row.get("rank"), row.get("rank_gold"))
        table.add_row(*("" if r is None else (f"{r[0]}" if r[0] == r[1] else f"{r[0]}-{r[1]}") for r in ranks),
                      "floor" if row.get("run") is None else str(row["run"]), row.get("mode") or row.get("model", ""),
                      f"{row['scheme1']:.1f}", skill, f"{row['scheme2']:.1f}", row["scheme2_grade"],
                      f"{100 * row['wape']:.1f}", f"{row['n_scored']}/{row['n_total']}", row["status"])
    return table


def _samples(results: Path, task: str) -> list[Path]:
    """lm-eval's samples files of ``task``, oldest first: ``samples_<task>_<timestamp>.jsonl``, and not those of a
    task whose name extends it (``scitaste_dimagent_live`` beside ``scitaste_dimagent``)."""
    return sorted(p for p in results.rglob(f"samples_{task}_*.jsonl") if p.name[len(f"samples_{task}_")].isdigit())


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    if proc.returncode:
        from scitaste_hf.errors import ScitasteError

        raise ScitasteError(f"{what} failed (exit {proc.returncode}, see above); run the demo again to resume")


def _store(console, out: Path, dataset: Path, results: Path):
    """Read each mode's lm-eval samples log, write its answers as a predictions file, score them with the evaluate
    metrics, and store them in the leaderboard (with the samples log as evidence, so the run is
    evidence-consistent)."""
    from scitaste_hf import load_metric
    from scitaste_hf.adapters.lmeval.tasks import TASKS
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.leaderboard.setup import gold_draws
    from scitaste_hf.modes import MODES
    from scitaste_hf.predictions import prediction_lines, read_predictions
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import Answer

    gold = load_records(dataset, "selected")
    # the gold redrawn as the Space over this folder redraws it (scitaste space --data OUT), so it rescores nothing
    board = Leaderboard(out, gold, backup=load_records(dataset, "backup"), gold_draws=gold_draws(out, gold))
    (out / "predictions").mkdir(exist_ok=True)
    wape, scheme1 = load_metric("scitaste_wape"), load_metric("scitaste_scheme1")
    by_bibcode = {r["bibcode"]: r for r in gold}
    for mode in MODES:
        found = _samples(results, TASKS[mode])
        if not found:
            raise ScitasteError(f"lm-eval wrote no samples for {TASKS[mode]} in {results}; delete it and rerun")
        # the samples log is read as `scitaste score` and the Space read one; the compact predictions file
        # beside it holds the same answers
        parsed = read_predictions(found[-1])
        predictions = prediction_lines(parsed)
        (out / "predictions" / f"{mode}.jsonl").write_text(predictions, "utf-8")
        answers = [parsed[b].model_dump(include={"innovation_score", "dimension_scores"})
                   if isinstance(parsed[b], Answer) else None for b in by_bibcode]
        golds = [{"innovation_score": r["innovation_score"], "dimension_scores": r["dimension_scores"]}
                 for r in by_bibcode.values()]
        s2 = wape.compute(predictions=[a["innovation_score"] if a else None for a in answers],
                          references=[g["innovation_score"] for g in golds], n_resamples=0)
        s1 = scheme1.compute(predictions=answers, references=golds, n_resamples=0)
        result = board.submit(predictions.encode(), "scitaste-baseline", mode, "scitaste-hf (offline baseline)",
                              kind="baseline", samples=found[-1].read_bytes())
        console.print(f"{mode}: Scheme-1 {s1['scheme1']:.1f} ({s1['grade']}), Scheme-2 {s2['score']:.1f} "
                      f"({s2['grade']}), coverage {s2['n_scored']}/{s2['n_total']} -> {result.message}")
    return board
