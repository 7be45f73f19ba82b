"""A copy of a store of the Space on a Hugging Face dataset repo: the runs
(:class:`~scitaste_hf.leaderboard.store.Store`) or the expert ratings (:class:`~scitaste_hf.ratings.store.RatingStore`).
The local store stays the source of truth: what fails to be copied stays listed as pending in the store and goes
up with a later copy (the next run or rating, or the next start), never lost and never fatal."""

from __future__ import annotations

import logging
import threading
from typing import Protocol

from scitaste_hf.errors import first_line

logger = logging.getLogger(__name__)


def copy_in_background(mirror, store: Copied, wait: float) -> bool:
    """Run ``mirror(store)`` and wait up to ``wait`` seconds for it; True when nothing is left pending (or
    ``mirror`` is None: no copy configured).

    huggingface_hub's uploads have no timeout of their own, so a Hub that takes a connection and never answers would
    hold the caller (a submission, a rating, the start) indefinitely: past ``wait`` the copy goes on in the
    background, and this returns False (still pending).
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
    need (path in the repo, local file or bytes) with a commit message, and records those copied."""

    def copy_pending(self) -> list: ...

    def copy_done(self, keys: list) -> None: ...

    def hub_files(self, keys: list) -> tuple[list[tuple[str, str | bytes]], str]: ...


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
    """

    def __init__(self, repo_id: str, token: str, *, private_only: bool = False) -> None:
        from huggingface_hub import HfApi

        self.repo_id = repo_id
        self.api = HfApi(token=token)
        self.private_only = private_only
        self._lock = threading.Lock()

    def __call__(self, store: Copied) -> bool:
        """Copy every pending entry, one commit at a time until none is left; True when none is left.

        One copy runs at a time: a call that finds one under way returns False at once rather than wait behind
        a slow Hub; its entry goes up with that copy (which looks for new pending entries before it ends) or a
        later one. Each store gets a mirror of its own, so that runs and ratings never wait for each other. The
        first failed commit ends the call, so a call makes at most one attempt against an unreachable Hub.
        """
        if not self._lock.acquire(blocking=False):
            return False
        try:
            while pending := store.copy_pending():
                try:
                    self._commit(store, pending)
                except Exception as exc:
                    # Any failure of the copy (the network, the Hub, its HTTP library, whose exception types differ
                    # between huggingface_hub versions) leaves the runs pending: the local store already holds them.
                    logger.warning("copy of %d entries to %s failed, will retry with the next one or start: %s",
                                   len(pending), self.repo_id, first_line(exc))
                    return False
                store.copy_done(pending)
            return True
        finally:
            self._lock.release()

    def _commit(self, store: Copied, pending: list) -> None:
        from huggingface_hub import CommitOperationAdd

        files, message = store.hub_files(pending)
        self.api.create_repo(self.repo_id, repo_type="dataset", private=True, exist_ok=True)
        if self.private_only and not self.api.repo_info(self.repo_id, repo_type="dataset").private:
            raise RuntimeError(f"{self.repo_id} is public; these entries are copied only to a private repo")
        self.api.create_commit(self.repo_id, repo_type="dataset", commit_message=message,
                               operations=[CommitOperationAdd(path, data) for path, data in files])
