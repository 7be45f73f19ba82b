"""The suite's shortcuts (tests/fixtures/suite_site/sitecustomize.py): an index built from the cache of lm-eval's
task index is the index lm-eval builds from its files, and a cached build parses none of them; a process with the
site on its path writes no Gradio type stub, and its components work as without it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SITE = Path(__file__).parent / "fixtures" / "suite_site" / "sitecustomize.py"


def _site():
    """The site module, loaded as a module of its own for its names (its install() adds nothing already there)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_names", SITE)
    site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(site)
    return site


CHECK = r'''
import importlib.util, json, os, sys
from pathlib import Path

import lm_eval.tasks._index as index

spec = importlib.util.spec_from_file_location("site_under_test", sys.argv[1])
site = importlib.util.module_from_spec(spec)
spec.loader.exec_module(site)  # without the variable: patches nothing
os.environ[site.ENV] = sys.argv[2]
roots = [Path(index.__file__).parent / name for name in ("arc", "hellaswag", "mmlu")]  # mmlu's YAMLs include others


def entries(built):
    return {name: [e.kind.name, str(e.yaml_path), sorted(e.tags), e.cfg] for name, e in built.items()}


plain = entries(index.TaskIndex.build(roots))
parsed, real = [], index.load_yaml


def counting(path, **kwargs):
    parsed.append(path)
    return real(path, **kwargs)


index.load_yaml = counting
site._patch(index)
first = entries(index.TaskIndex.build(roots))  # parses lm-eval's files, then writes the cache
after_first = len(parsed)
second = entries(index.TaskIndex.build(roots))  # from the cache
print(json.dumps({"plain": plain, "first": first, "second": second, "parsed": [after_first, len(parsed)]},
                 default=str))
'''


def test_an_index_from_the_cache_is_lm_evals_own(tmp_path):
    pytest.importorskip("lm_eval")
    script = tmp_path / "check.py"
    script.write_text(CHECK)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.pop("SCITASTE_TEST_LM_EVAL_INDEX", None)
    run = subprocess.run([sys.executable, str(script), str(SITE), str(tmp_path / "index.pickle")],
                         capture_output=True, text=True, env=env, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout)
    assert len(out["plain"]) > 60 and out["first"] == out["plain"] and out["second"] == out["plain"]
    files, _ = out["parsed"]
    assert files > 60 and out["parsed"] == [files, files]  # the second build parsed nothing
    assert (tmp_path / "index.pickle").stat().st_size > 0


STUBS = r'''
import sys
sys.path.insert(0, sys.argv[1])
import gradio as gr
import mycomponent

with gr.Blocks() as demo:
    box = mycomponent.Shout(value="hello")
print(box.value, box.EVENTS[0])
'''


@pytest.mark.parametrize("with_site", [False, True])
def test_gradio_writes_no_stub_with_the_site_and_works_alike(tmp_path, with_site):
    pytest.importorskip("gradio")
    (tmp_path / "mycomponent.py").write_text(
        "import gradio as gr\n\n\nclass Shout(gr.Textbox):\n    EVENTS = ['change']\n")
    (tmp_path / "check.py").write_text(STUBS)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if with_site:
        env["PYTHONPATH"] = str(SITE.parent)
    run = subprocess.run([sys.executable, str(tmp_path / "check.py"), str(tmp_path)], capture_output=True, text=True,
                         env=env, timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["hello", "change"]
    # the control writes the stub, so that the site's run can fail
    assert (tmp_path / "mycomponent.pyi").exists() is not with_site


def test_a_world_generated_once_in_a_run_is_read_back_for_the_same_arguments_only(tmp_path, monkeypatch):
    import dataclasses
    import pickle

    import scitaste_hf.simworld.world as module

    site = _site()
    assert getattr(module.generate, "__wrapped__", None) is not None  # the suite's processes have the wrapper
    monkeypatch.setenv(site.WORLDS_ENV, str(tmp_path / "worlds"))
    first = module.generate(60, seed=1)
    assert len(list((tmp_path / "worlds").glob("world-*.pickle"))) == 1

    def no_generation(*args, **kwargs):
        raise AssertionError("generated again")

    monkeypatch.setattr(module, "_graph", no_generation)  # a stage every generation runs
    again = module.generate(papers=60, seed=1)  # the same arguments, spelled otherwise
    for field in dataclasses.fields(first):
        assert pickle.dumps(getattr(first, field.name)) == pickle.dumps(getattr(again, field.name)), field.name
    assert again is not first  # a copy of its own: a caller that changes it changes no other's
    with pytest.raises(AssertionError, match="generated again"):
        module.generate(60, seed=2)  # other arguments: generated
    monkeypatch.delenv(site.WORLDS_ENV)
    with pytest.raises(AssertionError, match="generated again"):
        module.generate(60, seed=1)  # no folder, no cache
