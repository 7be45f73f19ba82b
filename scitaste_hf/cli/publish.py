"""Push the packaged evaluate metric modules to the Hugging Face Hub as metric Spaces, so that
``evaluate.load("ORG/scitaste_wape")`` works for anyone. The token comes from the environment (HF_TOKEN)
or a prior ``hf auth login``; --dry-run lists what would be pushed and needs no token.
"""

from __future__ import annotations

import argparse
from pathlib import Path

_SKIP = ("__pycache__", ".pyc")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste publish``."""
    parser.add_argument("target", choices=("metrics",), help="what to publish")
    parser.add_argument("--org", required=True, help="Hub user or organisation that will own the Spaces")
    parser.add_argument("--dry-run", action="store_true", help="list the Spaces and files without pushing")
    parser.add_argument("--private", action="store_true", help="create the Spaces as private")


def metric_files(folder: Path) -> list[Path]:
    """The files of a metric folder that belong in its Space (no caches)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not any(s in str(p) for s in _SKIP))


def run(args: argparse.Namespace) -> int:
    """Create or update one Space per metric and upload its folder."""
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.resources import metric_names, metric_path

    plan = [(f"{args.org}/{name}", metric_path(name)) for name in metric_names()]
    for repo_id, folder in plan:
        print(f"{'would push' if args.dry_run else 'pushing'} {folder} -> spaces/{repo_id}")
        for path in metric_files(folder):
            print(f"  {path.relative_to(folder)}")
    if args.dry_run:
        return 0

    from huggingface_hub import HfApi, get_token
    from huggingface_hub.errors import HfHubHTTPError

    token = get_token()
    if not token:
        raise ScitasteError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (or use --dry-run)")
    api = HfApi(token=token)
    for repo_id, folder in plan:
        try:
            api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=args.private, exist_ok=True)
            info = api.upload_folder(repo_id=repo_id, repo_type="space", folder_path=folder,
                                     ignore_patterns=["__pycache__/*", "*.pyc"],
                                     commit_message="Update metric module from scitaste-hf")
        except HfHubHTTPError as exc:
            raise ScitasteError(f"pushing {repo_id} failed: {str(exc).splitlines()[0]}") from None
        print(f"published {repo_id}: {info.commit_url if hasattr(info, 'commit_url') else info}")
    print(f'load with: evaluate.load("{args.org}/<metric>") after `pip install scitaste-hf`')
    return 0
