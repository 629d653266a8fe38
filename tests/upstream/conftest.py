"""Run directories for the export tests: one on this CPU host, as `llm-adapt run --tasks gsm8k,builtin-mc`
leaves it."""

import shutil

import pytest

from llm_adapt import rundir
from llm_adapt.rundir import DUMMY_DIR
from llm_adapt.upstream.adaptation import build

from .test_adaptation import write_run
from .test_export import BUILTIN, GSM8K, save_eval


@pytest.fixture()
def model(tiny_llama, tmp_path):
    return shutil.copytree(tiny_llama, tmp_path / "model")


@pytest.fixture()
def run_dir(model, tmp_path):
    """A run on this CPU host, as `llm-adapt run --tasks gsm8k,builtin-mc` leaves it (with a dummy stage)."""
    out = tmp_path / "run"
    source = write_run(out, model, verdict="FAIL")
    (out / DUMMY_DIR).mkdir()
    write_run(out / DUMMY_DIR, model, dummy=True)
    save_eval(out, GSM8K + BUILTIN)
    build(out, source.path).save(out / rundir.ADAPTATION)
    return out
