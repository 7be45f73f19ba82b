"""Publish to the Hugging Face Hub: the evaluate metric modules as metric Spaces (so that
``evaluate.load("ORG/scitaste_wape")`` works for anyone), the leaderboard as a Space, or a built dataset folder as
a dataset repo (so that ``load_dataset("ORG/NAME")`` reads its two splits and ``load_dataset("ORG/NAME",
"tool_evidence")`` its frozen tool evidence). The token comes from the environment (HF_TOKEN) or a prior
``hf auth login``; --dry-run lists exactly what would be uploaded, builds nothing and needs no token.

    scitaste publish metrics --org ORG
    scitaste publish space --repo-id ORG/NAME
    scitaste publish dataset --path DIR --repo-id ORG/NAME
    scitaste publish details RUN --data DIR --repo-id ORG/NAME

``details`` writes one stored run's per-paper details (prediction, parsed answer or failure reason, reasoning, tool
trace; :mod:`scitaste_hf.leaderboard.details`) as a dataset repo of one row a paper, private when --private or the
run's submitter chose so, else public.

No package index carries scitaste-hf, so a Space installs it from a wheel pushed with it. The pushed
requirements.txt names that wheel by its URL in the Space's own repo, because a Space's build runs pip on
requirements.txt alone, before the repo's files are copied in (a relative path would name nothing yet), and lists
the dependencies with the lower bounds of pyproject.toml; the pushed card gains the python_version the package
needs, since Spaces default to an older Python. A private Space cannot fetch its wheel that way (no token at build).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import NamedTuple

_SKIP = ("__pycache__", ".pyc")
#: The extra a Space installs (gradio and matplotlib for the apps).
SPACE_EXTRA = "space"
REQUIREMENTS = "requirements.txt"
_WHEEL_FILE = "Wheel-Version: 1.0\nGenerator: scitaste publish\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
#: A Space is a Linux container: the markers of the extra's requirements are evaluated for it, not for this machine.
_SPACE_PLATFORM = {"extra": SPACE_EXTRA, "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste publish``."""
    parser.add_argument("target", choices=("metrics", "space", "dataset", "details"), help="what to publish")
    parser.add_argument("run", nargs="?", help="details: the number of a run in the leaderboard store --data")
    parser.add_argument("--org", help="metrics: the Hub user or organisation that will own the Spaces")
    parser.add_argument("--path", help="dataset: the folder written by `scitaste build`")
    parser.add_argument("--repo-id", help="space, dataset, details: the repo, ORG/NAME")
    parser.add_argument("--data", default="scitaste-space-data", help="details: the leaderboard's data folder")
    parser.add_argument("--gold", help="details: the gold labels, as `scitaste space --gold` takes them (default: "
                                       "DATA/dataset, else the bundled example)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be pushed, push nothing")
    parser.add_argument("--private", action="store_true", help="create the repos as private")


def folder_files(folder: Path) -> list[Path]:
    """The files of a folder that belong on the Hub (no caches, no hidden files)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not any(s in str(p) for s in _SKIP)
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


class Push(NamedTuple):
    """One repo to push: its type, id, source folder and the files it receives (paths as pushed)."""

    repo_type: str
    repo_id: str
    folder: Path
    files: tuple[str, ...]


class Package(NamedTuple):
    """What a wheel of the running scitaste-hf holds (see :func:`package`)."""

    name: str
    version: str
    requires_python: str
    requires: tuple[str, ...]
    metadata: str
    entry_points: str
    files: tuple[tuple[str, Path], ...]
    origin: str


def package() -> Package:
    """The running scitaste-hf as a wheel would hold it, read from where it runs, so that both work alike:

    - a source checkout (pyproject.toml of scitaste-hf beside the package, an editable install included): the
      packages and force-included folders that pyproject.toml gives hatchling, and metadata written from its
      ``[project]`` table;
    - an installed wheel: the files its RECORD lists (the bundled metrics, tasks and Space included) and its own
      METADATA and entry points.

    The wheel is then assembled by :func:`write_wheel`, not by a build backend: publishing needs no network and no
    build tools, and a checkout and an install give the same wheel.
    """
    import tomllib

    import scitaste_hf

    root = Path(scitaste_hf.__file__).resolve().parent.parent
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        config = tomllib.loads(pyproject.read_text("utf-8"))
        if config.get("project", {}).get("name") == "scitaste-hf":
            return _checkout_package(root, config)
    return _installed_package()


def _checkout_package(root: Path, config: dict) -> Package:
    from packaging.requirements import Requirement

    project = config["project"]
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    files = [(f"{name}/{p.relative_to(root / name).as_posix()}", p) for name in wheel["packages"]
             for p in folder_files(root / name)]
    files += [(f"{target}/{p.relative_to(root / source).as_posix()}", p)
              for source, target in wheel.get("force-include", {}).items() for p in folder_files(root / source)]
    requires = list(project.get("dependencies", []))
    extras = []
    for extra, texts in project.get("optional-dependencies", {}).items():
        extras.append(extra)
        for text in texts:
            req = Requirement(text)
            marker, req.marker = req.marker, None
            requires.append(f'{req}; ({marker}) and extra == "{extra}"' if marker else f'{req}; extra == "{extra}"')
    lines = ["Metadata-Version: 2.4", f"Name: {project['name']}", f"Version: {project['version']}",
             f"Summary: {project.get('description', '')}", f"Requires-Python: {project['requires-python']}"]
    if isinstance(project.get("license"), str):
        lines.append(f"License-Expression: {project['license']}")
    lines += [f"Provides-Extra: {extra}" for extra in extras] + [f"Requires-Dist: {r}" for r in requires]
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    entry_points = "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in points.items()) + "\n"
                           for group, points in groups.items() if points)
    return Package(project["name"], project["version"], project["requires-python"], tuple(requires),
                   "\n".join(lines) + "\n", entry_points, tuple(files), f"the checkout at {root}")


def _installed_package() -> Package:
    from importlib.metadata import PackageNotFoundError, distribution

    from scitaste_hf.errors import ScitasteError

    try:
        dist = distribution("scitaste-hf")
    except PackageNotFoundError:
        raise ScitasteError("scitaste-hf runs neither from its checkout nor from an installation; install it") from None
    # The console scripts sit outside site-packages (``../../../bin``) and are written again from entry_points.txt.
    files = tuple((f.as_posix(), Path(dist.locate_file(f))) for f in dist.files or ()
                  if ".." not in f.parts and not f.parts[0].endswith(".dist-info")
                  and not any(s in str(f) for s in _SKIP))
    meta = dist.metadata
    return Package(meta["Name"], meta["Version"], meta["Requires-Python"] or "",
                   tuple(meta.get_all("Requires-Dist") or ()), dist.read_text("METADATA") or "",
                   dist.read_text("entry_points.txt") or "", files,
                   f"the installed scitaste-hf at {dist.locate_file('')}")


def wheel_filename(pkg: Package) -> str:
    """The wheel's file name (pure Python, any platform)."""
    return f"{pkg.name.replace('-', '_')}-{pkg.version}-py3-none-any.whl"


def write_wheel(pkg: Package, out_dir: Path) -> Path:
    """Write the wheel of ``pkg`` to ``out_dir``; the same files give a byte-identical wheel (fixed timestamps).

    Parameters
    ----------
    pkg : Package
        From :func:`package`.
    out_dir : Path
        An existing folder.
    """
    import base64
    import hashlib
    import zipfile

    dist_info = f"{pkg.name.replace('-', '_')}-{pkg.version}.dist-info"
    entries = [(arc, source.read_bytes()) for arc, source in sorted(pkg.files)]
    entries += [(f"{dist_info}/METADATA", pkg.metadata.encode()), (f"{dist_info}/WHEEL", _WHEEL_FILE.encode())]
    if pkg.entry_points:
        entries.append((f"{dist_info}/entry_points.txt", pkg.entry_points.encode()))
    record = "".join(f"{arc},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
                     f"{len(data)}\n" for arc, data in entries) + f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode()))
    path = out_dir / wheel_filename(pkg)
    with zipfile.ZipFile(path, "w") as archive:
        for arc, data in entries:
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr, info.compress_type = 0o644 << 16, zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return path


def wheel_url(repo_id: str, filename: str) -> str:
    """Where the Space ``repo_id`` serves a file of its repo (on the Hub that ``$HF_ENDPOINT`` names)."""
    from scitaste_hf.constants import hf_endpoint

    return f"{hf_endpoint()}/spaces/{repo_id}/resolve/main/{filename}"


def space_requirements(pkg: Package, url: str) -> str:
    """The requirements.txt of a pushed Space: scitaste-hf with the Space's extra from the wheel at ``url``, then
    its dependencies and the extra's with the lower bounds that pyproject.toml pins."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    lines = []
    for text in pkg.requires:
        req = Requirement(text)
        if req.marker is not None and "extra" in str(req.marker):
            if canonicalize_name(req.name) == canonicalize_name(pkg.name) or not req.marker.evaluate(_SPACE_PLATFORM):
                continue
            req.marker = None
        lines.append(str(req))
    # sorted: an installed copy's metadata lists its requirements in another order than pyproject.toml does
    return ("# Written by `scitaste publish`. No package index carries scitaste-hf: the Space installs it from the\n"
            "# wheel pushed with it, by URL, as its build installs this file before the repo's files are copied in.\n"
            + "\n".join([f"{pkg.name}[{SPACE_EXTRA}] @ {url}", *sorted(lines)]) + "\n")


def space_python(pkg: Package) -> str:
    """The oldest Python 3 minor version the package accepts: the Space card's ``python_version``."""
    from packaging.specifiers import SpecifierSet

    accepted = SpecifierSet(pkg.requires_python)
    return next(f"3.{minor}" for minor in range(8, 100) if accepted.contains(f"3.{minor}"))


def space_card(text: str, python: str) -> str:
    """The Space card as pushed: ``python_version`` added to its YAML unless the card names one."""
    import re

    match = re.match(r"\A---\n(.*?\n)---\n", text, re.DOTALL)
    if not match or re.search(r"^python_version:", match.group(1), re.MULTILINE):
        return text
    return f'---\n{match.group(1)}python_version: "{python}"\n---\n{text[match.end():]}'


def space_files(folder: Path, pkg: Package) -> tuple[str, ...]:
    """The paths a Space built from ``folder`` receives: its files, the generated requirements.txt and the wheel."""
    files = {p.relative_to(folder).as_posix() for p in folder_files(folder)}
    return tuple(sorted(files | {REQUIREMENTS, wheel_filename(pkg)}))


def stage_space(push: Push, pkg: Package, wheel: Path, dest: Path) -> Path:
    """Write the folder that is pushed to the Space ``push`` to ``dest``: the app's files, its card with the
    Python it needs, the generated requirements.txt and the wheel. Returns ``dest``.

    Parameters
    ----------
    push : Push
        A Space of the plan.
    pkg : Package
        From :func:`package`.
    wheel : Path
        Written by :func:`write_wheel`.
    dest : Path
        A folder that does not exist yet.
    """
    import shutil

    dest.mkdir(parents=True)
    for path in folder_files(push.folder):
        rel = path.relative_to(push.folder).as_posix()
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel == "README.md":
            target.write_text(space_card(path.read_text("utf-8"), space_python(pkg)), "utf-8")
        elif rel != REQUIREMENTS:
            shutil.copyfile(path, target)
    (dest / REQUIREMENTS).write_text(space_requirements(pkg, wheel_url(push.repo_id, wheel.name)), "utf-8")
    shutil.copyfile(wheel, dest / wheel.name)
    return dest


def _repo_id(args: argparse.Namespace) -> str:
    from scitaste_hf.errors import InvalidInput

    if args.repo_id.count("/") != 1:
        raise InvalidInput(f"--repo-id must be ORG/NAME, got {args.repo_id!r}")
    return args.repo_id


def _plan(args: argparse.Namespace) -> tuple[list[Push], Package | None]:
    """Everything to push, and the package that the Spaces among it install (None without a Space)."""
    from scitaste_hf.errors import InvalidInput, ScitasteError, first_line
    from scitaste_hf.resources import bundled_dir, metric_names, metric_path

    pkg = None
    if args.target == "metrics":
        if not args.org:
            raise InvalidInput("publish metrics needs --org ORG")
        pkg = package()
        plan = [Push("space", f"{args.org}/{name}", metric_path(name), space_files(metric_path(name), pkg))
                for name in metric_names()]
    elif args.target == "space":
        if not args.repo_id:
            raise InvalidInput("publish space needs --repo-id ORG/NAME")
        pkg, folder = package(), bundled_dir("space")
        plan = [Push("space", _repo_id(args), folder, space_files(folder, pkg))]
    else:
        if not args.path or not args.repo_id:
            raise InvalidInput("publish dataset needs --path DIR and --repo-id ORG/NAME")
        repo_id, folder = _repo_id(args), Path(args.path)
        if not (folder / "README.md").is_file() or not list(folder.glob("data/*.parquet")):
            raise ScitasteError(f"{folder} is not a built dataset (README.md and data/*.parquet); run `scitaste build`")
        _check_dataset(folder)
        plan = [Push("dataset", repo_id, folder,
                     tuple(p.relative_to(folder).as_posix() for p in folder_files(folder)))]
    # The Hub's own rule, checked here so that --dry-run approves only what a real push accepts.
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    for push in plan:
        try:
            validate_repo_id(push.repo_id)
        except HFValidationError as exc:
            raise InvalidInput(f"not a Hub repo id: {first_line(exc)}") from None
    return plan, pkg


def _check_dataset(folder: Path) -> None:
    """Every split file and every frozen evidence file is a whole Parquet file with its columns (a copy cut short is
    not pushed), and frozen evidence is declared by the card as its config (else nobody could load it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from huggingface_hub import metadata_load

    from scitaste_hf.agent.evidence import CONFIG, CONFIG_PATH
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.schema import record_features

    checks = [(path, set(record_features())) for path in sorted(folder.glob("data/*.parquet"))]
    checks += [(path, {"bibcode", "tool", "payload"}) for path in sorted(folder.glob(CONFIG_PATH))]
    for path, wanted in checks:
        try:
            names = set(pq.read_schema(path).names)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ScitasteError(f"{path} is not a readable Parquet file ({exc}); rebuild the dataset") from None
        if missing := sorted(wanted - names):
            raise ScitasteError(f"{path} lacks the column(s) {', '.join(missing)}; rebuild the dataset")
    if list(folder.glob(CONFIG_PATH)):
        try:
            meta = metadata_load(folder / "README.md") or {}
        except ValueError:  # a metadata block that is not a mapping declares nothing
            meta = {}
        configs = meta.get("configs") or []
        if not any(isinstance(c, dict) and c.get("config_name") == CONFIG for c in configs):
            raise ScitasteError(f"{folder / 'README.md'} declares no {CONFIG} config for {CONFIG_PATH} (a card from "
                                "before it existed); rebuild the dataset with `scitaste build`")


def _hub_api(repos: str):
    """An ``HfApi`` with the user's token, once the Hub answers, for pushing ``repos`` (named in the errors).

    Raises
    ------
    ScitasteError
        Without a token, or when the Hub does not answer.
    """
    from huggingface_hub import HfApi, get_token

    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.net.hub import bound_hub_calls, require_hub

    bound_hub_calls()  # a Hub that takes the connection and never answers would otherwise hold the push for good
    token = get_token()
    if not token:
        raise ScitasteError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (or use --dry-run)")
    require_hub(f"pushing {repos}", "try again when it answers (--dry-run checks everything else offline)")
    return HfApi(token=token)


def run(args: argparse.Namespace) -> int:
    """Create or update each repo and upload its files (for a Space: the app with the wheel it installs)."""
    import sys
    import tempfile

    from scitaste_hf.agent.evidence import CONFIG, CONFIG_PATH
    from scitaste_hf.errors import ScitasteError, first_line

    if args.target == "details":
        return _publish_details(args)
    plan, pkg = _plan(args)
    for push in plan:
        print(f"{'would push' if args.dry_run else 'pushing'} {push.folder} -> {push.repo_type}s/{push.repo_id}")
        for name in push.files:
            print(f"  {name}")
    evidence = args.target == "dataset" and bool(list(plan[0].folder.glob(CONFIG_PATH)))
    if args.target == "dataset" and not evidence:
        print(f"no frozen tool evidence in {plan[0].folder}: its {CONFIG} config stays empty "
              f"(`scitaste evidence freeze --dataset {plan[0].folder}` writes it)")
    if pkg is not None:
        print(f"{REQUIREMENTS}: {pkg.name}[{SPACE_EXTRA}] from {wheel_filename(pkg)} (assembled at push time from "
              f"{pkg.origin}) and its dependencies; Python {space_python(pkg)}")
        if args.private:
            print("note: a private Space cannot download its wheel while it builds (no token there), so it will not "
                  "build until it is made public", file=sys.stderr)
    if args.dry_run:
        return 0

    from scitaste_hf.net.hub import hub_errors

    api = _hub_api(", ".join(push.repo_id for push in plan))
    with tempfile.TemporaryDirectory(prefix="scitaste-publish-") as tmp:
        wheel = write_wheel(pkg, Path(tmp)) if pkg is not None else None
        for push in plan:
            folder = (stage_space(push, pkg, wheel, Path(tmp) / "spaces" / push.repo_id) if push.repo_type == "space"
                      else push.folder)
            try:
                api.create_repo(push.repo_id, repo_type=push.repo_type, private=args.private, exist_ok=True,
                                **({"space_sdk": "gradio"} if push.repo_type == "space" else {}))
                info = api.upload_folder(repo_id=push.repo_id, repo_type=push.repo_type, folder_path=folder,
                                         allow_patterns=list(push.files), commit_message="Update from scitaste-hf")
            except hub_errors() as exc:
                raise ScitasteError(f"pushing {push.repo_id} failed: {first_line(exc)}") from None
            print(f"published {push.repo_id}: {getattr(info, 'commit_url', info)}")
    if args.target == "metrics":
        print(f'load with: evaluate.load("{args.org}/<metric>") with scitaste-hf installed')
    elif args.target == "dataset":
        print(f'load with: datasets.load_dataset("{plan[0].repo_id}")'
              + (f', and its evidence with datasets.load_dataset("{plan[0].repo_id}", "{CONFIG}")' if evidence else ""))
    return 0


def _publish_details(args: argparse.Namespace) -> int:
    """``publish details RUN``: the run's per-paper details written as a dataset folder and pushed as a dataset repo."""
    import re
    import tempfile

    from scitaste_hf.errors import InvalidInput, ScitasteError, first_line
    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.leaderboard.details import Details, dataset_rows, write_dataset
    from scitaste_hf.leaderboard.setup import backup_split, gold_source
    from scitaste_hf.records import load_records

    if not args.run or not re.fullmatch(r"[0-9]{1,18}", args.run) or not args.repo_id:
        raise InvalidInput("publish details needs RUN (a run number) and --repo-id ORG/NAME")
    repo_id = _repo_id(args)
    if not (Path(args.data) / "leaderboard.sqlite").is_file():
        raise ScitasteError(f"{args.data} holds no leaderboard store (--data: the folder `scitaste space` serves)")
    source, _ = gold_source(args.data, args.gold)
    # Read-only, with the Space's backup split: the board's key is the Space's, so the details it keeps stay valid.
    board = Leaderboard(args.data, load_records(source, "selected"), backup=backup_split(source), read_only=True)
    try:
        rows = dataset_rows(Details(board), int(args.run))
        private = args.private or bool(board.store.run(int(args.run))["private"])
    finally:
        board.close()
    with tempfile.TemporaryDirectory(prefix="scitaste-details-") as tmp:
        folder = write_dataset(rows, Path(tmp))
        files = [p.relative_to(folder).as_posix() for p in folder_files(folder)]
        print(f"{'would push' if args.dry_run else 'pushing'} run #{args.run} ({len(rows)} papers) -> datasets/"
              f"{repo_id} ({'private' if private else 'public'})")
        for name in files:
            print(f"  {name}")
        if args.dry_run:
            return 0
        from scitaste_hf.net.hub import hub_errors

        api = _hub_api(repo_id)
        try:
            api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
            # exist_ok keeps an existing repo's visibility: a private run's details never go into a public one
            if private and not api.repo_info(repo_id, repo_type="dataset").private:
                raise ScitasteError(f"{repo_id} exists and is public, and run #{args.run}'s details are private: "
                                    "make the repo private, or name another with --repo-id")
            info = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=folder, allow_patterns=files,
                                     commit_message=f"Details of run #{args.run}")
        except hub_errors() as exc:
            raise ScitasteError(f"pushing {repo_id} failed: {first_line(exc)}") from None
    print(f"published {repo_id}: {getattr(info, 'commit_url', info)}")
    print(f'load with: datasets.load_dataset("{repo_id}", split="train")')
    return 0
