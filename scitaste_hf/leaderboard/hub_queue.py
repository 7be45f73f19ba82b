"""The board's request queue kept on the Hub, for ``scitaste worker --queue REPO`` on a machine that does not share the
Space's data folder.

The Space copies its store to a dataset repo (``SCITASTE_RESULTS_REPO``, :class:`~scitaste_hf.net.hub_copy.HubMirror`):
its ``leaderboard.sqlite`` carries the requests (their submitters erased; a request's row goes up whenever its state
changes, :data:`~scitaste_hf.leaderboard.store.REQUEST_KEY`). A worker elsewhere reads the requests there; what the
queue adds lives beside them in one file, :data:`STATE_FILE`: per request, the lease of the worker that runs it
(owner, expiry, attempts, when it started) and, once it ended, its outcome (``finished``, the run's files under
:data:`RESULTS`, or ``failed`` with a reason). Each change of that file is one commit made on top of the head just
read (``parent_commit``), so of two workers that claim at once the Hub refuses the second, which reads again and
finds the lease taken: two workers never run one request, and a lease that expired (a worker lost) is claimed again
as another attempt, up to :data:`~scitaste_hf.leaderboard.requests.MAX_ATTEMPTS`.

The Space takes the outcomes into its own store, the source of truth (:meth:`HubQueue.collect`, every
:data:`COLLECT_EVERY` seconds): a running lease shows the request as running, a finished run's files are checked
against their seal (HMAC with the worker's secret, which the Space holds too) and scored like a local worker's run
(:meth:`~scitaste_hf.leaderboard.service.Leaderboard.store_server_run`), and a failure is stored with its reason. A
request cancelled in the Space goes up as cancelled in the copy, and the worker that runs it stops at its next lease
renewal.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.leaderboard.database import timestamp
from scitaste_hf.leaderboard.integrity import seal, seal_holds
from scitaste_hf.leaderboard.requests import CANCELLED, FAILED, FINISHED, LEASE_S, MAX_ATTEMPTS, PENDING, RUNNING
from scitaste_hf.net.guard import SubmissionError

logger = logging.getLogger(__name__)

#: The queue's state in the repo: request id -> lease and outcome (JSON).
STATE_FILE = "queue/state.json"
#: Where a worker puts a finished request's files: ``RESULTS/request-ID/{samples.jsonl, trace.jsonl, result.json}``.
RESULTS = "queue/results"
#: Seconds between two looks of the Space at the queue's state on the Hub.
COLLECT_EVERY = 30.0
#: Commits refused because another landed first, after which a change is given up (each refusal reads again).
_RETRIES = 8


#: A state entry's key: the request's number. Its fields, with the types that claim, renew and collect read (the
#: first named in a refusal); the optional ones may be left out.
_REQUEST_KEY = re.compile(r"[0-9]{1,18}")
_ENTRY_FIELDS: dict[str, tuple[type, ...]] = {"state": (str,), "owner": (str,), "until": (int, float),
                                              "attempts": (int,), "started_at": (str,), "reason": (str,),
                                              "collected": (bool,)}
_OPTIONAL_FIELDS = ("reason", "collected")


def _wrong_field(entry: dict[str, Any]) -> str | None:
    """The first of :data:`_ENTRY_FIELDS` that a state entry lacks or holds as another type (a boolean is no number),
    None when each is as written."""
    for field, kinds in _ENTRY_FIELDS.items():
        if field in _OPTIONAL_FIELDS and field not in entry:
            continue
        value = entry.get(field)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            return field
    return None


def _claimable(entry: dict[str, Any] | None, row: dict[str, Any], now: float) -> bool:
    """Whether a worker may claim the request of the Space's ``row`` (pending or running there) whose queue entry is
    ``entry``: never claimed; its lease expired (a worker lost); or its outcome was collected and the Space queued
    it again."""
    if entry is None:
        return True
    if entry["state"] == RUNNING:
        return entry["until"] < now
    return bool(entry.get("collected")) and row["state"] == PENDING


def _seal_fields(request: dict[str, Any], started_at: str, provenance: dict[str, Any], samples: bytes,
                 trace: bytes | None) -> dict[str, Any]:
    """What the seal over a worker's result for ``request`` covers (:func:`~scitaste_hf.leaderboard.integrity.seal`'s
    fields): its samples log and provenance, with the trace's digest added to the provenance."""
    import hashlib

    return {"sha256": f"request-{request['id']}", "model": request["model"], "mode": request["mode"],
            "submitted_at": started_at, "answers": samples,
            "provenance": {**provenance, "trace_sha256": hashlib.sha256(trace).hexdigest() if trace else ""}}


class HubQueue:
    """The queue of the board whose store is copied to the dataset repo ``repo_id``.

    Parameters
    ----------
    repo_id : str
        The Space's results repo (its ``SCITASTE_RESULTS_REPO``).
    token : str
        A token that can write to it.
    cache : path
        Where downloaded files are kept (huggingface_hub's cache layout).
    endpoint : str, optional
        The Hub's URL (default: ``HF_ENDPOINT``, else huggingface.co).
    """

    def __init__(self, repo_id: str, token: str, cache: str | Path, *, endpoint: str | None = None) -> None:
        from huggingface_hub import HfApi

        from scitaste_hf import constants
        from scitaste_hf.net.hub import bound_hub_calls

        bound_hub_calls()
        self.repo_id, self.token, self.cache = repo_id, token, Path(cache)
        self.api = HfApi(endpoint=endpoint or constants.hf_endpoint(), token=token)

    # -- reading and writing the repo -----------------------------------------------------------------

    def _download(self, path: str, head: str) -> bytes | None:
        """The file ``path`` at commit ``head``, None when the repo has none."""
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError

        try:
            local = hf_hub_download(self.repo_id, path, repo_type="dataset", revision=head, token=self.token,
                                    cache_dir=self.cache, endpoint=self.api.endpoint)
        except EntryNotFoundError:
            return None
        return Path(local).read_bytes()

    def read(self) -> tuple[str, dict[int, dict[str, Any]], dict[str, dict[str, Any]]]:
        """The repo's head, the requests of its copy of the store (id -> row) and the queue's state at that head.

        Raises
        ------
        ScitasteError
            When the repo cannot be read (one line: the Hub's reason).
        """
        from scitaste_hf.net.hub import hub_errors

        try:
            head = self.api.repo_info(self.repo_id, repo_type="dataset").sha
            store, state = self._download("leaderboard.sqlite", head), self._download(STATE_FILE, head)
        except hub_errors() as exc:
            raise ScitasteError(f"the queue on {self.repo_id}: {first_line(exc)}") from None
        requests: dict[int, dict[str, Any]] = {}
        if store is not None:
            db = sqlite3.connect(":memory:")
            try:
                db.deserialize(store)
                db.row_factory = sqlite3.Row
                requests = {int(r["id"]): dict(r) for r in db.execute("SELECT * FROM requests")}
            except sqlite3.DatabaseError as exc:
                raise ScitasteError(f"the queue on {self.repo_id}: leaderboard.sqlite is not a store ({exc})") from None
            finally:
                db.close()
        return head, requests, self._state(state)

    def _state(self, data: bytes | None) -> dict[str, dict[str, Any]]:
        """The queue's state file as read, refused in one line when it is not an object of objects (a hand edit or a
        broken upload must not stop every worker with a traceback)."""
        from scitaste_hf.bounded_load import parse_json

        if not data:
            return {}
        source = f"the queue on {self.repo_id}: {STATE_FILE}"
        try:
            state = parse_json(data.decode("utf-8"), source)
        except UnicodeDecodeError:
            raise ScitasteError(f"{source} is not UTF-8 text") from None
        if not isinstance(state, dict) or not all(isinstance(v, dict) for v in state.values()):
            raise ScitasteError(f"{source} is not an object of one object per request")
        for key, entry in state.items():
            # what claim, renew and collect read of an entry: one edited away or retyped would be a KeyError or a
            # TypeError in every worker and in the Space
            if not _REQUEST_KEY.fullmatch(key):
                why = "its key is not a request number"
            elif wrong := _wrong_field(entry):
                why = f"its {wrong!r} is missing or not {_ENTRY_FIELDS[wrong][0].__name__}"
            elif entry["state"] not in (RUNNING, FAILED, FINISHED):
                why = f"its state is not one of {RUNNING}, {FAILED}, {FINISHED}"
            else:
                continue
            raise ScitasteError(f"{source}: the entry {key[:40]!r} is not a request's ({why})")
        return state

    def _commit(self, head: str, state: dict[str, dict[str, Any]], message: str,
                files: tuple[tuple[str, bytes], ...] = ()) -> bool:
        """Commit ``state`` (and ``files``) on top of ``head``; False when another commit landed first."""
        from huggingface_hub import CommitOperationAdd
        from huggingface_hub.errors import HfHubHTTPError

        from scitaste_hf.net.hub import hub_errors

        operations = [CommitOperationAdd(path, data) for path, data in files]
        operations.append(CommitOperationAdd(STATE_FILE, json.dumps(state, sort_keys=True).encode()))
        try:
            self.api.create_commit(self.repo_id, repo_type="dataset", operations=operations, commit_message=message,
                                   parent_commit=head)
        except HfHubHTTPError as exc:
            if exc.response is not None and exc.response.status_code in (409, 412):
                return False
            raise ScitasteError(f"the queue on {self.repo_id}: {first_line(exc)}") from None
        except hub_errors() as exc:
            raise ScitasteError(f"the queue on {self.repo_id}: {first_line(exc)}") from None
        return True

    # -- the worker's side ----------------------------------------------------------------------------

    def claim(self, owner: str, *, lease_s: float = LEASE_S, max_attempts: int = MAX_ATTEMPTS
              ) -> dict[str, Any] | None:
        """Take the oldest request that the Space's copy shows pending or running and that no live lease holds,
        under a lease of ``lease_s`` seconds held by ``owner``; None when there is none. The request comes back as
        the local queue gives one (its row, with ``attempts`` and ``started_at`` of this claim). One claimed
        ``max_attempts`` times already is failed instead."""
        for _ in range(_RETRIES):
            head, requests, state = self.read()
            now = time.time()
            free = [i for i, r in sorted(requests.items()) if r["state"] in (PENDING, RUNNING)
                    and _claimable(state.get(str(i)), r, now)]
            if not free:
                return None
            request_id = free[0]
            entry = state.get(str(request_id))
            if entry is None or entry["state"] != RUNNING:  # never claimed, or queued again after its outcome
                entry = {"attempts": 0, "started_at": timestamp()}
            if entry["attempts"] >= max_attempts:
                state[str(request_id)] = {**entry, "state": FAILED, "owner": "", "until": 0,
                                          "reason": f"no end after {entry['attempts']} attempts (the worker was lost "
                                                    "each time: killed, out of memory or its machine gone)"}
                self._commit(head, state, f"Fail request {request_id}: no end after {entry['attempts']} attempts")
                continue
            entry = {**entry, "state": RUNNING, "owner": owner, "until": now + lease_s,
                     "attempts": entry["attempts"] + 1}
            state[str(request_id)] = entry
            if self._commit(head, state, f"Claim request {request_id} (attempt {entry['attempts']})"):
                return {**requests[request_id], "state": RUNNING, "attempts": entry["attempts"],
                        "started_at": entry["started_at"]}
        return None

    def _update(self, request_id: int, owner: str, change, message: str, files=()) -> bool:
        """Apply ``change(entry)`` to ``owner``'s lease of ``request_id`` and commit it; False when ``owner`` no
        longer holds it (taken over, ended, or the request cancelled in the Space)."""
        for _ in range(_RETRIES):
            head, requests, state = self.read()
            entry = state.get(str(request_id))
            row = requests.get(request_id)
            if (entry is None or entry["state"] != RUNNING or entry["owner"] != owner or row is None
                    or row["state"] == CANCELLED):
                return False
            state[str(request_id)] = change(dict(entry))
            if self._commit(head, state, message, files):
                return True
        raise ScitasteError(f"the queue on {self.repo_id}: {_RETRIES} commits in a row were refused (another "
                            "writer landed first each time)")

    def renew(self, request_id: int, owner: str, *, lease_s: float = LEASE_S) -> bool:
        """Extend ``owner``'s lease; False when it no longer holds the request: the worker then stops, storing
        nothing."""
        return self._update(request_id, owner, lambda e: {**e, "until": time.time() + lease_s},
                            f"Renew the lease of request {request_id}")

    def fail(self, request_id: int, owner: str, reason: str) -> bool:
        """End ``owner``'s request as failed with a one-line ``reason``; False when it no longer holds it."""
        reason = " ".join(reason.split())[:300]
        return self._update(request_id, owner, lambda e: {**e, "state": FAILED, "reason": reason, "until": 0},
                            f"Request {request_id} failed")

    def deliver(self, request: dict[str, Any], owner: str, samples: bytes, provenance: dict[str, Any],
                trace: bytes | None, secret: str) -> bool:
        """Hand the Space what ``owner`` ran for ``request``: its samples log, trace and provenance under
        :data:`RESULTS`, sealed with the worker's ``secret``, and the request marked finished, in one commit;
        False when ``owner`` no longer holds it (nothing is left behind then)."""
        folder = f"{RESULTS}/request-{request['id']}"
        sealed = seal(secret, **_seal_fields(request, request["started_at"], provenance, samples, trace))
        result = {"provenance": provenance, "seal": sealed}
        files = [(f"{folder}/samples.jsonl", samples), (f"{folder}/result.json", json.dumps(result).encode())]
        if trace:
            files.append((f"{folder}/trace.jsonl", trace))
        return self._update(request["id"], owner, lambda e: {**e, "state": FINISHED, "until": 0},
                            f"Request {request['id']} finished", tuple(files))

    # -- the Space's side -----------------------------------------------------------------------------

    def collect(self, board) -> int:
        """Take the queue's state into ``board``'s store (the Space's): leases as running, finished runs scored and
        stored as ``server-run`` when their seal holds, failures with their reason; each outcome taken is then marked
        ``collected`` in the repo, so that a request the Space queues again (``--requeue``) is claimed afresh.
        Returns how many requests changed; what fails to collect now is collected on a later call."""
        head, _, state = self.read()
        changed, taken = 0, []
        for key, entry in sorted(state.items(), key=lambda item: int(item[0])):
            request_id = int(key)
            row = board.requests.get(request_id)
            if row is None or entry.get("collected"):
                continue
            if row["state"] in (FINISHED, FAILED, CANCELLED):
                taken += [key] if entry["state"] in (FINISHED, FAILED) else []
                continue
            if entry["state"] == RUNNING:
                changed += board.requests.held_elsewhere(request_id, f"hub:{entry['owner']}", entry["until"],
                                                         entry["attempts"], entry["started_at"])
            elif entry["state"] == FAILED:
                changed += board.requests.settle(request_id, FAILED, entry.get("reason") or "failed", None,
                                                 attempts=entry["attempts"], started_at=entry["started_at"])
                taken.append(key)
            elif entry["state"] == FINISHED and self._take_run(board, {**row, "started_at": entry["started_at"]},
                                                                entry, head):
                changed += 1
                taken.append(key)
        if changed:
            board.copy_to_hub()
        if taken:
            self._mark_collected(taken)
        return changed

    def _mark_collected(self, keys: list[str]) -> None:
        """Mark the outcomes of ``keys`` as taken by the Space (a refused commit is tried again on the next collect,
        which finds them ended in the Space's store)."""
        for _ in range(_RETRIES):
            head, _, state = self.read()
            for key in keys:
                if key in state:
                    state[key]["collected"] = True
            if self._commit(head, state, f"Collected {len(keys)} request outcome(s)"):
                return

    def _take_run(self, board, request: dict[str, Any], entry: dict[str, Any], head: str) -> bool:
        """Score and store a finished request's run when its seal holds, else fail the request; False when its files
        could not be read (collected on a later call)."""
        folder = f"{RESULTS}/request-{request['id']}"
        ended = {"attempts": entry["attempts"], "started_at": entry["started_at"]}
        try:
            samples = self._download(f"{folder}/samples.jsonl", head)
            result = json.loads(self._download(f"{folder}/result.json", head) or b"{}")
            trace = self._download(f"{folder}/trace.jsonl", head)
        except Exception as exc:  # the Hub's and the HTTP library's errors differ between versions: collect later
            logger.warning("request %s's result on %s not read, will try again: %s", request["id"], self.repo_id,
                           first_line(exc))
            return False
        provenance = result.get("provenance") or {}
        if samples is None or not seal_holds(board.worker_secret, result.get("seal", ""),
                                             **_seal_fields(request, entry["started_at"], provenance, samples, trace)):
            return board.requests.settle(request["id"], FAILED, "the worker's result on the Hub does not carry a "
                                         "seal that holds (not the board's worker, or edited)", None, **ended)
        try:
            stored = board.store_server_run(request, samples, provenance, trace=trace)
        except (SubmissionError, ScitasteError) as exc:
            return board.requests.settle(request["id"], FAILED, first_line(exc), None, **ended)
        return board.requests.settle(request["id"], FINISHED, "", stored.run_id, **ended)



def collect_in_background(board, queue: HubQueue, every: float = COLLECT_EVERY,
                          stop: threading.Event | None = None) -> threading.Thread:
    """Call ``queue.collect(board)`` every ``every`` seconds in a daemon thread, until ``stop`` is set; a call that
    fails (the Hub unreachable) is logged and the next one tries again."""
    stop = stop or threading.Event()

    def loop() -> None:
        while not stop.wait(every):
            try:
                queue.collect(board)
            except Exception as exc:  # never fatal to the Space: the next look tries again
                logger.warning("queue on %s not collected: %s", queue.repo_id, first_line(exc))

    thread = threading.Thread(target=loop, daemon=True, name="scitaste-queue-collect")
    thread.start()
    return thread


def collect_from_env(board) -> threading.Thread | None:
    """For the Space: collect the Hub queue of its results repo (:func:`collect_in_background`) when a copy is
    configured (``SCITASTE_RESULTS_REPO`` and ``HF_TOKEN``) and the board holds the worker's secret (without it no
    result could be checked, and none is taken); None otherwise."""
    from scitaste_hf import constants

    repo, token = constants.read(constants.SCITASTE_RESULTS_REPO), constants.read(constants.HF_TOKEN)
    if not (repo and token and board.worker_secret):
        return None
    return collect_in_background(board, HubQueue(repo, token, board.store.root / "hub-queue-cache"))
