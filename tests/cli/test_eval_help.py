"""`scitaste eval --help` is scitaste's own usage, then a pointer to lm-eval's options."""

import subprocess
import sys
from pathlib import Path

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def test_eval_help_is_scitastes_own():
    run = subprocess.run([SCITASTE, "eval", "--help"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.index("usage: scitaste eval") < out.index("--model scitaste-agent") < out.index("lm_eval --help")
    for task in ("scitaste_pure_qa", "scitaste_native_search", "scitaste_dimagent", "scitaste_dimagent_native"):
        assert task in out
    for arg in ("base_url", "item_timeout", "max_retry_after", "evidence_dir"):  # from the models' own docstrings
        assert arg in out
    assert "usage: lm_eval" not in out and "usage: lm-eval" not in out
