"""A copy of the leaderboard store on a Hugging Face dataset repo. The local store stays the source of
truth: a failed upload is logged and retried with the next run, never lost and never fatal."""

from __future__ import annotations

import logging

from scitaste_hf.leaderboard.store import Store

logger = logging.getLogger(__name__)


class HubMirror:
    """Upload each new run's files (predictions, metadata, evidence) and the database to ``repo_id``.

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
        self._pending: set[str] = set()

    def __call__(self, store: Store, sha256: str) -> bool:
        """Upload the run ``sha256`` and any earlier run whose upload failed; True when all went up."""
        from huggingface_hub import CommitOperationAdd
        from huggingface_hub.errors import HfHubHTTPError

        self._pending.add(sha256)
        ops = [CommitOperationAdd(f"submissions/{p.name}", str(p))
               for sha in sorted(self._pending) for p in sorted(store.files.glob(f"{sha}.*")) if p.is_file()
               and not p.name.endswith(".tmp")]
        try:
            self.api.create_repo(self.repo_id, repo_type="dataset", private=True, exist_ok=True)
            self.api.create_commit(self.repo_id, repo_type="dataset", operations=ops,
                                   commit_message=f"Add run {sha256[:12]}")
            self.api.upload_file(path_or_fileobj=store.snapshot(), path_in_repo="leaderboard.sqlite",
                                 repo_id=self.repo_id, repo_type="dataset", commit_message="Update results")
        except (HfHubHTTPError, OSError) as exc:
            logger.warning("copy to %s failed, will retry with the next run: %s", self.repo_id,
                           str(exc).splitlines()[0])
            return False
        self._pending.clear()
        return True
