"""Evaluate the board's queued requests: the leaderboard's own evaluation worker.

    scitaste worker --data DIR [--concurrency N] [--once]
    scitaste worker --data DIR --backend vllm --backend-args tensor_parallel_size=1,data_parallel_size=4
    scitaste worker --data DIR --requeue ID

Each pending request (a Hub model in one mode, or one of the operator's endpoints, SCITASTE_ENDPOINTS) is taken under
a lease that expires, run with lm-eval on the board's gold set and frozen evidence (lm-eval's per-paper cache in
DATA/worker/request-ID, so a killed worker's next attempt resumes), scored like a submission and stored as
`server-run`, sealed with SCITASTE_WORKER_SECRET. A request that fails to load, passes its time limit or answers
nothing parseable ends `failed` with its reason, and the queue goes on. It runs beside the Space on the same data
folder, or on another machine that shares it. --requeue queues a finished or failed request again (after the gold
set or the task version changed).
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
    parser.add_argument("--requeue", type=int, metavar="ID", help="queue request ID again and exit")


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
    if not resolve_secret(None, constants.SCITASTE_WORKER_SECRET):
        raise ScitasteError(f"scitaste worker needs the board's worker secret: set {constants.SCITASTE_WORKER_SECRET} "
                            "(the same value on the Space), in the environment or the credentials file")
    board, _ = open_leaderboard(args.data, args.gold)
    work_root = Path(args.data) / "worker"
    if args.requeue is not None:
        print(board.requeue_request(args.requeue))
        shutil.rmtree(work_root / f"request-{args.requeue}", ignore_errors=True)  # a re-run asks the model afresh
        board.close()
        return 0
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
                return True
            renewed[0] = time.monotonic()
            return board.requests.renew(request["id"], owner, lease_s=lease)

        try:
            done = evaluate(request, gold, work_root / f"request-{request['id']}", endpoints=endpoints,
                            time_limit=args.time_limit, backend=args.backend, backend_args=args.backend_args,
                            keep_going=keep_going)
            stored = board.store_server_run(request, done.samples, done.provenance, trace=done.trace)
        except Stopped:
            say(f"{name}: no longer held by this worker (cancelled or taken over); stopped, nothing stored")
            return
        except Exception as exc:  # one request's failure, whatever it is, must not stop the queue
            reason = first_line(exc) if isinstance(exc, (RunFailed, ScitasteError)) else \
                f"the worker failed: {type(exc).__name__}: {first_line(exc)}"
            if board.requests.fail(request["id"], owner, reason):
                say(f"{name}: failed: {reason}")
            board.copy_to_hub()
            return
        if board.requests.finish(request["id"], owner, stored.run_id):
            say(f"{name}: finished as run #{stored.run_id} ({stored.status})")
        board.copy_to_hub()

    def loop(k: int) -> None:
        owner = f"{socket.gethostname()}:{os.getpid()}:{k}"
        while True:
            request = board.requests.claim(owner, lease_s=lease, max_attempts=attempts)
            if request is None:
                if args.once:
                    return
                time.sleep(args.poll)
                continue
            board.copy_to_hub()
            one(request, owner)

    threads = [threading.Thread(target=loop, args=(k,), name=f"scitaste-worker-{k}", daemon=True)
               for k in range(args.concurrency)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    finally:
        board.close()
    return 0
