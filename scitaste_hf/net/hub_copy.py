"""A copy of a store of the Space on a Hugging Face dataset repo: the runs
(:class:`~scitaste_hf.leaderboard.store.Store`) or the expert ratings (:class:`~scitaste_hf.ratings.store.RatingStore`).
The local store stays the source of truth: what fails to be copied stays listed as pending in the store and goes
up with a later copy (a retry scheduled after the failure, the next run or rating, or the next start), never lost
and never fatal. Every Hub request has a timeout (:func:`scitaste_hf.net.hub.bound_hub_calls`), and a copy still
under way after :data:`COPY_DEADLINE` seconds (a Hub that trickles its answer a byte at a time) is abandoned: the
next attempt starts afresh instead of waiting behind it. Each commit is made on top of the head it read, so one that
the Hub carries out after its client gave up on it never replaces the newer files of a later one."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from scitaste_hf.errors import first_line
from scitaste_hf.net.hub import HUB_TIMEOUT, bound_hub_calls

logger = logging.getLogger(__name__)

#: Seconds a submission (or the start) waits for its Hub copy before telling the user that it is pending.
HUB_COPY_WAIT = 10.0

#: Seconds a copy may take before a later one abandons it and starts again.
COPY_DEADLINE = 300.0
#: Seconds before the first retry of a failed copy, and the longest wait between retries (the wait
#: doubles after each failure).
RETRY_AFTER = (15.0, 120.0)


def copy_in_background(mirror, store: Copied, wait: float) -> bool:
    """Run ``mirror(store)`` and wait up to ``wait`` seconds for it; True when nothing is left pending (or
    ``mirror`` is None: no copy configured).

    A copy against a slow Hub may take up to :data:`COPY_DEADLINE` seconds, which a submission, a rating or the
    start should not wait for: past ``wait`` the copy goes on in the background, and this returns False (still
    pending).
    """
    if mirror is None:
        return True
    outcome: list[bool] = []
    copy = threading.Thread(target=lambda: outcome.append(mirror(store)), daemon=True, name="scitaste-hub-copy")
    copy.start()
    copy.join(wait)
    return bool(outcome and outcome[0])


class Copied(Protocol):
    """A store whose new entries are copied to the Hub: it lists the keys still pending, says which files they
    need (path in the repo, local file or bytes) with a commit message, and records those copied. A store whose
    entries go to repos of their own (a run's details dataset) also says which: ``hub_target(keys)`` gives the repo
    and whether it is to be private; a private one is written to only while it is private. A store may also name the
    files that go only to a private repo (``hub_private(keys)``: paths), which a public repo's copy leaves out."""

    def copy_pending(self) -> list: ...

    def copy_done(self, keys: list) -> None: ...

    def hub_files(self, keys: list) -> tuple[list[tuple[str, str | bytes]], str]: ...


@dataclass(eq=False)
class _Attempt:
    """One copy under way: when it started, and whether a later call gave up on it."""

    started: float
    abandoned: bool = False


class _Abandoned(Exception):
    """An abandoned copy stops before it commits: the attempt that replaced it copies the same entries."""


class HubMirror:
    """Upload what is pending in a store (:class:`Copied`: the runs' files and database, or the ratings' export)
    to ``repo_id``.

    Parameters
    ----------
    repo_id : str
        A dataset repo, created if missing (private by default).
    token : str
        A Hugging Face token with write access; it is never logged.
    private_only : bool
        Copy only while the repo is private. Expert ratings need it: in a public repo each rater could read the
        others' scores of the papers still being rated. A public repo leaves the entries pending, with a warning.
    endpoint : str, optional
        The Hub's URL (default: huggingface_hub's, ``$HF_ENDPOINT``).
    timeout : float
        Seconds per network operation of each Hub request (:func:`scitaste_hf.net.hub.bound_hub_calls`, for the whole
        process: huggingface_hub shares one client).
    deadline : float
        Seconds after which a copy still under way is abandoned by the next call (:data:`COPY_DEADLINE`).
    retry_after : (float, float)
        First and longest wait before a failed copy is tried again (:data:`RETRY_AFTER`).
    """

    def __init__(self, repo_id: str, token: str, *, private_only: bool = False, endpoint: str | None = None,
                 timeout: float = HUB_TIMEOUT, deadline: float = COPY_DEADLINE,
                 retry_after: tuple[float, float] = RETRY_AFTER) -> None:
        from huggingface_hub import HfApi

        bound_hub_calls(timeout)
        self.repo_id = repo_id
        self.api = HfApi(endpoint=endpoint, token=token)
        self.private_only = private_only
        self.deadline = deadline
        self.retry_after = retry_after
        self._state = threading.Lock()  # guards the fields below; never held during a Hub call
        self._attempt: _Attempt | None = None
        self._wait = retry_after[0]
        self._timer: threading.Timer | None = None
        self._closed = False

    def __call__(self, store: Copied) -> bool:
        """Copy every pending entry, one commit at a time until none is left; True when none is left.

        One copy runs at a time: a call that finds one under way returns False at once rather than wait behind
        a slow Hub; its entry goes up with that copy (which looks for new pending entries before it ends) or a
        later one. A copy under way for longer than ``deadline`` is abandoned, with a warning, and this call starts
        a fresh one. Each store gets a mirror of its own, so that runs and ratings never wait for each other. The
        first failed commit ends the call (a call makes at most one attempt against an unreachable Hub) and
        schedules a retry; so does the deadline of the copy it starts, so a copy stuck with no later call is
        still abandoned and tried again.
        """
        with self._state:
            if self._closed:
                return False
            if (running := self._attempt) is not None:
                if (left := running.started + self.deadline - time.monotonic()) > 0:
                    self._schedule(store, left)  # the running copy's deadline stays watched
                    return False
                running.abandoned = True
                logger.warning("copy to %s abandoned: still under way after %.0f s; starting a fresh one",
                               self.repo_id, self.deadline)
            attempt = self._attempt = _Attempt(time.monotonic())
            self._schedule(store, self.deadline)
        done = False
        try:
            done = self._copy(store, attempt)
            return done
        finally:
            with self._state:
                if self._attempt is attempt:
                    self._attempt = None
                    if not done:
                        self._schedule(store, self._wait)
                        self._wait = min(self._wait * 2, self.retry_after[1])
                    else:
                        self._wait = self.retry_after[0]
                        self._cancel()

    def close(self) -> None:
        """Cancel the scheduled retry; later calls copy nothing (what is pending stays pending in the store)."""
        with self._state:
            self._closed = True
            self._cancel()

    def _copy(self, store: Copied, attempt: _Attempt) -> bool:
        while True:
            pending: list = []
            try:
                # listing what is pending may fail too (a store's table that cannot be opened): as a commit does
                if not (pending := store.copy_pending()):
                    return True
                self._commit(store, pending, attempt)
            except _Abandoned:
                return False
            except Exception as exc:
                if attempt.abandoned:  # already reported as abandoned; the attempt that replaced it goes on
                    return False
                # Any failure of the copy (the network, the Hub, its HTTP library, whose exception types differ
                # between huggingface_hub versions) leaves the entries pending: the local store already holds them.
                with self._state:
                    wait = self._wait
                logger.warning("copy of %d entries to %s failed, will retry in %.3g s or with the next one: %s: %s",
                               len(pending), self.repo_id, wait, type(exc).__name__, first_line(exc))
                return False
            if attempt.abandoned:  # its entries stay pending for the attempt that replaced it
                return False
            store.copy_done(pending)

    def _commit(self, store: Copied, pending: list, attempt: _Attempt) -> None:
        from huggingface_hub import CommitOperationAdd

        files, message = store.hub_files(pending)
        target = getattr(store, "hub_target", None)
        repo_id, private = target(pending) if target is not None else (self.repo_id, True)
        self.api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        head = self.api.repo_info(repo_id, repo_type="dataset")
        if (self.private_only or (target is not None and private)) and not head.private:
            raise RuntimeError(f"{repo_id} is public; these entries are copied only to a private repo")
        if not head.private and (private_paths := getattr(store, "hub_private", lambda keys: set())(pending)):
            logger.warning("%s is public: %d file(s) of runs with private details are left out of its copy", repo_id,
                           len(private_paths))
            files = [(path, data) for path, data in files if path not in private_paths]
        if attempt.abandoned:
            raise _Abandoned
        # On top of the head just read, or refused: a commit that the Hub carries out after its client gave up on it
        # (a timeout, an abandoned copy) must not replace the newer files of a later one. A refused commit fails
        # this attempt, and the retry starts from the new head.
        self.api.create_commit(repo_id, repo_type="dataset", commit_message=message, parent_commit=head.sha,
                               operations=[CommitOperationAdd(path, data) for path, data in files])

    def _schedule(self, store: Copied, delay: float) -> None:
        """Call this mirror on ``store`` again in ``delay`` seconds (replacing any call already scheduled);
        called with ``_state`` held."""
        self._cancel()
        if self._closed:
            return
        self._timer = threading.Timer(delay, self._retry, args=(store,))
        self._timer.daemon = True
        self._timer.start()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _retry(self, store: Copied) -> None:
        try:
            self(store)
        except Exception as exc:  # a store closed under it: the next run, rating or start copies what is pending
            logger.warning("scheduled copy to %s did not run: %s", self.repo_id, first_line(exc))
