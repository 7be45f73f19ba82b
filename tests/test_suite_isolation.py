"""The suite's own isolation (tests/conftest.py): a developer's tokens, keys and credential files, the object stores'
clients' included, reach neither a test nor a process a test starts. Checked by running a small test under that
conftest in a fresh pytest process whose environment holds every credential, and, as the control, the same test
without the conftest."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from scitaste_hf.constants import ADS_API_TOKEN, CREDENTIAL_VARIABLES, SCITASTE_CREDENTIALS

INNER = '''
import json
import os
import subprocess
import sys

from scitaste_hf.constants import CREDENTIAL_VARIABLES, SCITASTE_CREDENTIALS, credentials_file


def test_no_credential_is_seen():
    from huggingface_hub import constants, get_token

    seen = [name for name in CREDENTIAL_VARIABLES if name != SCITASTE_CREDENTIALS and name in os.environ]
    seen += [f"store {name}" for name, value in os.environ.items()
             if "leaked" in value and name not in CREDENTIAL_VARIABLES]
    if os.path.exists(credentials_file()):
        seen.append("the credentials file")
    if os.path.exists(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", os.path.expanduser("~/.aws/credentials"))):
        seen.append("the AWS credentials file")
    if os.path.exists(constants.HF_TOKEN_PATH) or get_token():
        seen.append("the Hugging Face token")
    child = subprocess.run([sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
                           capture_output=True, text=True, check=True)
    seen += [f"child {name}" for name, value in json.loads(child.stdout).items() if "leaked" in value]
    with open("seen.json", "w") as out:  # in the test's folder, for the outer test
        json.dump(seen, out)
    assert not seen, seen
'''


def _run_inner(folder: Path, env: dict) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run :data:`INNER` in ``folder`` (whose conftest.py, if any, applies); returns the run and what it saw."""
    (folder / "test_inner.py").write_text(INNER)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "--rootdir", str(folder), str(folder / "test_inner.py")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert (folder / "seen.json").exists(), run.stdout[-3000:] + run.stderr[-3000:]
    return run, json.loads((folder / "seen.json").read_text())


def test_a_developers_credentials_reach_no_test(tmp_path):
    home = tmp_path / "hf-home"
    home.mkdir()
    (home / "token").write_text("hf_leaked_from_the_token_file")
    credentials = tmp_path / "credentials.toml"
    credentials.write_text(f'{ADS_API_TOKEN} = "leaked-from-the-credentials-file"\n')
    aws = tmp_path / "aws-credentials"
    aws.write_text("[default]\naws_access_key_id = leaked-from-the-aws-file\n")
    #: the object stores' clients' own (an example of each kind: a key, a profile, fsspec's settings, Google's file)
    store = {"AWS_ACCESS_KEY_ID": "leaked-key", "AWS_PROFILE": "leaked-profile", "FSSPEC_S3_SECRET": "leaked-secret",
             "GOOGLE_APPLICATION_CREDENTIALS": "/leaked/gcp.json"}
    env = {**os.environ, **{name: f"leaked-{name}" for name in CREDENTIAL_VARIABLES}, **store,
           SCITASTE_CREDENTIALS: str(credentials), "HF_HOME": str(home), "HF_TOKEN_PATH": str(home / "token"),
           "AWS_SHARED_CREDENTIALS_FILE": str(aws)}
    env.pop("PYTEST_XDIST_WORKER", None)
    bare, guarded = tmp_path / "bare", tmp_path / "guarded"
    bare.mkdir()
    guarded.mkdir()
    # the control: without the conftest every one of them is seen, so the test below can fail
    control, seen = _run_inner(bare, env)
    secrets = [name for name in CREDENTIAL_VARIABLES if name != SCITASTE_CREDENTIALS]
    assert control.returncode == 1 and sorted(seen) == sorted(
        [*secrets, *[f"store {name}" for name in store], "the credentials file", "the AWS credentials file",
         "the Hugging Face token", *[f"child {name}" for name in [*secrets, *store]]]), seen
    shutil.copy(Path(__file__).with_name("conftest.py"), guarded / "conftest.py")
    site = Path("fixtures") / "suite_site"  # what the conftest loads
    shutil.copytree(Path(__file__).parent / site, guarded / site)
    run, seen = _run_inner(guarded, env)
    assert run.returncode == 0 and seen == [], run.stdout[-3000:] + run.stderr[-3000:]
