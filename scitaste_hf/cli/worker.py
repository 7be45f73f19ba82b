"""Evaluate the board's queued requests: the leaderboard's own evaluation worker.

    scitaste worker --data DIR [--concurrency N] [--once]
    scitaste worker --data DIR --backend vllm --backend-args tensor_parallel_size=1,data_parallel_size=4
    scitaste worker --data DIR --requeue ID | --cancel ID
    scitaste worker --queue REPO --gold GOLD [--data WORKDIR]

Each pending request (a Hub model in one mode, or one of the operator's endpoints, SCITASTE_ENDPOINTS) is taken under
a lease that expires, run with lm-eval on the board's gold set and frozen evidence (lm-eval's per-paper cache in
DATA/worker/request-ID, so a killed worker's next attempt resumes), scored like a submission and stored as
`server-run`, sealed with SCITASTE_WORKER_SECRET. A request that fails to load, passes its time limit or answers
nothing parseable ends `failed` with its reason, and the queue goes on. It runs beside the Space on the same data
folder, or on another machine that shares it; with --queue REPO, anywhere that reaches the Hub: it takes the requests
from the dataset repo the Space copies its store to (SCITASTE_RESULTS_REPO, written with HF_TOKEN), under leases
kept there, and hands each run back there for the Space to check and store. --requeue queues a finished or failed
request again (after the gold set or the task version changed); --cancel cancels a pending or running one.
"""

from __future__ import annotations

import argparse

from scitaste_hf.cli import whole_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste worker``."""
    from scitaste_hf import constants
    from scitaste_hf.adapters.lmeval.server_run import TIME_LIMIT

    parser.add_argument("--data", default=constants.board_data(),
                        help="the board's data folder, the Space's (default $SCITASTE_DATA, else ./data)")
    parser.add_argument("--gold", help="gold labels of the selected split, as the Space has them (as `scitaste space`)")
    parser.add_argument("--concurrency", type=whole_number(1), default=1, help="requests run at once (default 1)")
    parser.add_argument("--once", action="store_true", help="stop when no request is left to take, instead of waiting")
    parser.add_argument("--backend", choices=("hf", "vllm"), default="hf",
                        help="lm-eval model of a Hub model: hf (Transformers) or vllm (default hf)")
    parser.add_argument("--backend-args", default="",
                        help="extra --model_args of the backend, e.g. dtype=bfloat16,data_parallel_size=4")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT,
                        help="seconds one attempt of a request may take (default %(default)g)")
    parser.add_argument("--attempts", type=whole_number(1), default=None,
                        help="attempts of a request whose worker was lost before it is failed (default: the queue's "
                             "MAX_ATTEMPTS)")
    parser.add_argument("--lease", type=float, default=None,
                        help="seconds a lease holds without renewal, renewed while running (default: the queue's "
                             "LEASE_S)")
    parser.add_argument("--poll", type=float, default=5.0, help="seconds between looks at an empty queue (default 5)")
    parser.add_argument("--queue", metavar="REPO",
                        help="take requests from the Space's results repo on the Hub instead of its data folder "
                             "(needs HF_TOKEN with write access; DATA then holds only this worker's files)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--requeue", type=int, metavar="ID", help="queue request ID again and exit")
    action.add_argument("--cancel", type=int, metavar="ID",
                        help="cancel request ID, pending or running (its worker stops within a poll), and exit")


class _Local:
    """The queue of the board's own data folder: leases in its store, runs scored and stored there."""

    def __init__(self, board) -> None:
        self.board, self.requests = board, board.requests

    def holds(self, request_id: int, owner: str) -> bool:
        return self.requests.holds(request_id, owner)

    def folder(self, request: dict) -> str:
        return f"request-{request['id']}"  # --requeue clears it: a request queued again is asked afresh

    def deliver(self, request: dict, owner: str, done) -> str | None:
        stored = self.board.store_server_run(request, done.samples, done.provenance, trace=done.trace)
        if not self.requests.finish(request["id"], owner, stored.run_id):
            return None
        return f"finished as run #{stored.run_id} ({stored.status})"

    def copied(self) -> None:
        self.board.copy_to_hub()

    def close(self) -> None:
        self.board.close()


class _Hub:
    """The queue on the Hub (:class:`~scitaste_hf.leaderboard.hub_queue.HubQueue`): the Space scores and stores
    what is handed back."""

    def __init__(self, queue, secret: str) -> None:
        self.requests, self.secret = queue, secret

    def holds(self, request_id: int, owner: str) -> bool:
        return True  # asked at each renewal instead: a look at the Hub every poll would be a request a second

    def folder(self, request: dict) -> str:
        # One folder per round of the request: --requeue on the Space's machine cannot clear this one's cache
        return f"request-{request['id']}-{''.join(c for c in request['started_at'] if c.isdigit())}"

    def deliver(self, request: dict, owner: str, done) -> str | None:
        if not self.requests.deliver(request, owner, done.samples, done.provenance, done.trace, self.secret):
            return None
        return f"finished; handed to the Space on {self.requests.repo_id}, which scores and stores it"

    def copied(self) -> None:
        pass

    def close(self) -> None:
        pass


def run(args: argparse.Namespace) -> int:
    """Take requests until the queue is empty (``--once``) or for ever."""
    import os
    import shutil
    import socket
    import sys
    import threading
    import time
    from pathlib import Path

    from scitaste_hf import constants
    from scitaste_hf.adapters.lmeval.server_run import RunFailed, Stopped, evaluate
    from scitaste_hf.errors import ScitasteError, first_line
    from scitaste_hf.leaderboard.requests import LEASE_S, MAX_ATTEMPTS, operator_endpoints
    from scitaste_hf.leaderboard.setup import gold_source, open_leaderboard
    from scitaste_hf.sources.credentials import resolve_secret

    # Asked before the board opens: a board without the secret trusts no seal and would judge its server runs again.
    secret = resolve_secret(None, constants.SCITASTE_WORKER_SECRET)
    if not secret:
        raise ScitasteError(f"scitaste worker needs the board's worker secret: set {constants.SCITASTE_WORKER_SECRET} "
                            "(the same value on the Space), in the environment or the credentials file")
    work_root = Path(args.data) / "worker"
    if args.queue:
        if args.requeue is not None or args.cancel is not None:
            raise ScitasteError("--requeue and --cancel change the Space's own store: run them with --data on the "
                                "Space's data folder (or cancel in the Space's Queue tab), not with --queue")
        if not (args.gold or constants.read(constants.SCITASTE_GOLD)):
            raise ScitasteError("scitaste worker --queue needs the board's gold labels: --gold (or SCITASTE_GOLD) as "
                                "the Space has them")
        from scitaste_hf.leaderboard.hub_queue import HubQueue
        from scitaste_hf.net.hub import require_hub

        token = resolve_secret(None, constants.HF_TOKEN)
        if not token:
            raise ScitasteError(f"scitaste worker --queue needs {constants.HF_TOKEN} with write access to "
                                f"{args.queue}, in the environment or the credentials file")
        require_hub(f"the queue on {args.queue}", "run the worker where the Hub is reachable, or with --data")
        queue = _Hub(HubQueue(args.queue, token, work_root / "hub-cache"), secret)
    else:
        board, _ = open_leaderboard(args.data, args.gold)
        if args.requeue is not None or args.cancel is not None:
            try:
                if args.requeue is not None:
                    print(board.requeue_request(args.requeue))
                    shutil.rmtree(work_root / f"request-{args.requeue}", ignore_errors=True)  # asked afresh
                else:
                    print(board.cancel_request(args.cancel, None))
            finally:
                board.close()
            return 0
        queue = _Local(board)
    gold = gold_source(args.data, args.gold)[0]
    endpoints = operator_endpoints()
    lease = args.lease or LEASE_S
    attempts = args.attempts or MAX_ATTEMPTS
    say_lock = threading.Lock()

    def say(line: str) -> None:
        with say_lock:
            print(line, file=sys.stderr, flush=True)

    def one(request: dict, owner: str) -> None:
        name = f"request #{request['id']} ({request['model']}, {request['mode']})"
        say(f"{name}: running, attempt {request['attempts']}")
        renewed = [time.monotonic()]

        def keep_going() -> bool:
            if time.monotonic() - renewed[0] < lease / 3:
                return queue.holds(request["id"], owner)
            renewed[0] = time.monotonic()
            return queue.requests.renew(request["id"], owner, lease_s=lease)

        try:
            done = evaluate(request, gold, work_root / queue.folder(request), endpoints=endpoints,
                            time_limit=args.time_limit, backend=args.backend, backend_args=args.backend_args,
                            keep_going=keep_going)
            outcome = queue.deliver(request, owner, done)
        except Stopped:
            say(f"{name}: no longer held by this worker (cancelled or taken over); stopped, nothing stored")
            return
        except Exception as exc:  # one request's failure, whatever it is, must not stop the queue
            reason = first_line(exc) if isinstance(exc, (RunFailed, ScitasteError)) else \
                f"the worker failed: {type(exc).__name__}: {first_line(exc)}"
            if queue.requests.fail(request["id"], owner, reason):
                say(f"{name}: failed: {reason}")
            queue.copied()
            return
        if outcome is not None:
            say(f"{name}: {outcome}")
        queue.copied()

    def loop(k: int) -> None:
        owner = f"{socket.gethostname()}:{os.getpid()}:{k}"
        while True:
            request = queue.requests.claim(owner, lease_s=lease, max_attempts=attempts)
            if request is None:
                if args.once:
                    return
                time.sleep(args.poll)
                continue
            queue.copied()
            one(request, owner)

    threads = [threading.Thread(target=loop, args=(k,), name=f"scitaste-worker-{k}", daemon=True)
               for k in range(args.concurrency)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    finally:
        queue.close()
    return 0
