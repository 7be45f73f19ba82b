"""A copy of the leaderboard store on a Hugging Face dataset repo. The local store stays the source of
truth: a run whose copy fails stays listed as pending in the store and goes up with a later copy (the next
run, or the next start), never lost and never fatal."""

from __future__ import annotations

import logging
import threading

from scitaste_hf.leaderboard.store import Store

logger = logging.getLogger(__name__)


class HubMirror:
    """Upload the runs pending in a store (predictions, metadata, evidence) and the database to ``repo_id``.

    Parameters
    ----------
    repo_id : str
        A dataset repo, created if missing (private by default).
    token : str
        A Hugging Face token with write access; it is never logged.
    """

    def __init__(self, repo_id: str, token: str) -> None:
        from huggingface_hub import HfApi

        self.repo_id = repo_id
        self.api = HfApi(token=token)
        self._lock = threading.Lock()

    def __call__(self, store: Store) -> bool:
        """Copy every pending run, one commit at a time until none is left; True when none is left.

        One copy runs at a time: a call that finds one under way returns False at once rather than wait behind
        a slow Hub; its run goes up with that copy (which looks for new pending runs before it ends) or a later
        one. The first failed commit ends the call, so a call makes at most one attempt against an unreachable
        Hub.
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
                    logger.warning("copy of %d run(s) to %s failed, will retry with the next run or start: %s",
                                   len(pending), self.repo_id, (str(exc).splitlines() or [type(exc).__name__])[0])
                    return False
                store.copy_done(pending)
            return True
        finally:
            self._lock.release()

    def _commit(self, store: Store, pending: list[str]) -> None:
        from huggingface_hub import CommitOperationAdd

        ops = [CommitOperationAdd(f"submissions/{p.name}", str(p))
               for key in pending for p in sorted(store.files.glob(f"{key}.*")) if p.is_file()]
        ops.append(CommitOperationAdd("leaderboard.sqlite", store.snapshot()))
        self.api.create_repo(self.repo_id, repo_type="dataset", private=True, exist_ok=True)
        self.api.create_commit(self.repo_id, repo_type="dataset", operations=ops,
                               commit_message=f"Add {len(pending)} run(s)")
