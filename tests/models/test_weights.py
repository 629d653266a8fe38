"""A safetensors file is checked against its own header before anything loads it: a truncated download is one
line naming the tensor that runs past the end (inspect and compare alike), not a loader's traceback."""

import shutil

import pytest

from llm_adapt.errors import UsageError
from llm_adapt.models.source import resolve_model
from llm_adapt.models.weights import data_problem, read_header


def test_a_header_whose_tensors_fit_the_data_has_no_problem():
    header = {"a": {"data_offsets": [0, 8]}, "b": {"data_offsets": [8, 24]}}
    assert data_problem(header, 24) is None and data_problem({}, 0) is None
    assert data_problem(header, 30) is None  # trailing bytes: not a truncation


def test_a_short_file_names_the_last_tensor_and_both_sizes():
    problem = data_problem({"a": {"data_offsets": [0, 8]}, "lm_head": {"data_offsets": [8, 4096]}}, 1000)
    assert problem.startswith("truncated:") and "(lm_head) at data bytes 8-4,096" in problem and "1,000 data" in problem


@pytest.mark.parametrize("header", [{"a": {"dtype": "F32"}}, {"a": {"data_offsets": [8, 0]}}, {"a": {"data_offsets": "x"}}])
def test_a_header_without_sane_offsets_is_corrupt(header):
    assert data_problem(header, 100).startswith("corrupt safetensors header")


@pytest.fixture
def truncated(tiny_llama, tmp_path):
    model = shutil.copytree(tiny_llama, tmp_path / "m")
    shard = model / "model.safetensors"
    with open(shard, "r+b") as handle:
        handle.truncate(shard.stat().st_size - 1000)
    return model


def test_read_header_refuses_a_truncated_shard_in_one_line(truncated):
    with pytest.raises(UsageError, match="truncated: its header places the last tensor") as refused:
        read_header(truncated / "model.safetensors")
    assert "\n" not in str(refused.value) and "re-download it" in str(refused.value)


def test_a_run_of_the_model_is_refused_before_it_loads(truncated, tiny_llama):
    with pytest.raises(UsageError, match="truncated"):
        resolve_model(str(truncated)).require_weights("compare")
    resolve_model(str(tiny_llama)).require_weights("compare")  # the whole file passes
