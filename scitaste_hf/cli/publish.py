"""Publish to the Hugging Face Hub: the evaluate metric modules as metric Spaces (so that
``evaluate.load("ORG/scitaste_wape")`` works for anyone), or a built dataset folder as a dataset repo (so that
``load_dataset("ORG/NAME")`` reads it). The token comes from the environment (HF_TOKEN) or a prior
``hf auth login``; --dry-run lists exactly what would be uploaded and needs no token.
"""

from __future__ import annotations

import argparse
from pathlib import Path

_SKIP = ("__pycache__", ".pyc")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste publish``."""
    parser.add_argument("target", choices=("metrics", "dataset"), help="what to publish")
    parser.add_argument("--org", help="metrics: the Hub user or organisation that will own the Spaces")
    parser.add_argument("--path", help="dataset: the folder written by `scitaste build`")
    parser.add_argument("--repo-id", help="dataset: the dataset repo, ORG/NAME")
    parser.add_argument("--dry-run", action="store_true", help="list what would be pushed, push nothing")
    parser.add_argument("--private", action="store_true", help="create the repos as private")


def folder_files(folder: Path) -> list[Path]:
    """The files of a folder that belong on the Hub (no caches, no hidden files)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not any(s in str(p) for s in _SKIP)
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def _plan(args: argparse.Namespace) -> list[tuple[str, str, Path]]:
    """(repo type, repo id, folder) of everything to push."""
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.resources import metric_names, metric_path

    if args.target == "metrics":
        if not args.org:
            raise ScitasteError("publish metrics needs --org ORG")
        plan = [("space", f"{args.org}/{name}", metric_path(name)) for name in metric_names()]
    else:
        if not args.path or not args.repo_id:
            raise ScitasteError("publish dataset needs --path DIR and --repo-id ORG/NAME")
        if args.repo_id.count("/") != 1:
            raise ScitasteError(f"--repo-id must be ORG/NAME, got {args.repo_id!r}")
        folder = Path(args.path)
        if not (folder / "README.md").is_file() or not list(folder.glob("data/*.parquet")):
            raise ScitasteError(f"{folder} is not a built dataset (README.md and data/*.parquet); run `scitaste build`")
        _check_splits(folder)
        plan = [("dataset", args.repo_id, folder)]
    # The Hub's own rule, checked here so that --dry-run approves only what a real push accepts.
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    for _, repo_id, _ in plan:
        try:
            validate_repo_id(repo_id)
        except HFValidationError as exc:
            raise ScitasteError(f"not a Hub repo id: {str(exc).splitlines()[0]}") from None
    return plan


def _check_splits(folder: Path) -> None:
    """Every split file is a whole Parquet file with the benchmark's columns (a copy cut short is not pushed)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.schema import record_features

    wanted = set(record_features())
    for path in sorted(folder.glob("data/*.parquet")):
        try:
            names = set(pq.read_schema(path).names)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ScitasteError(f"{path} is not a readable Parquet file ({exc}); rebuild the dataset") from None
        if missing := sorted(wanted - names):
            raise ScitasteError(f"{path} lacks the column(s) {', '.join(missing)}; rebuild the dataset")


def run(args: argparse.Namespace) -> int:
    """Create or update each repo and upload its folder."""
    from scitaste_hf.errors import ScitasteError

    plan = _plan(args)
    for repo_type, repo_id, folder in plan:
        print(f"{'would push' if args.dry_run else 'pushing'} {folder} -> {repo_type}s/{repo_id}")
        for path in folder_files(folder):
            print(f"  {path.relative_to(folder)}")
    if args.dry_run:
        return 0

    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    token = get_token()
    if not token:
        raise ScitasteError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (or use --dry-run)")
    api = HfApi(token=token)
    for repo_type, repo_id, folder in plan:
        try:
            api.create_repo(repo_id, repo_type=repo_type, private=args.private, exist_ok=True,
                            **({"space_sdk": "gradio"} if repo_type == "space" else {}))
            info = api.upload_folder(repo_id=repo_id, repo_type=repo_type, folder_path=folder,
                                     allow_patterns=[str(p.relative_to(folder)) for p in folder_files(folder)],
                                     commit_message="Update from scitaste-hf")
        except HfHubHTTPError as exc:
            raise ScitasteError(f"pushing {repo_id} failed: {str(exc).splitlines()[0]}") from None
        print(f"published {repo_id}: {getattr(info, 'commit_url', info)}")
    if args.target == "metrics":
        print(f'load with: evaluate.load("{args.org}/<metric>") after `pip install scitaste-hf`')
    else:
        print(f'load with: datasets.load_dataset("{plan[0][1]}")')
    return 0
