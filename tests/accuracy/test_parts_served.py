"""The located layer's parts inside a served engine: the capture's part records, the reference's same
part on the engine's input, and the part named by the in-process rule (accuracy/parts_served.py)."""

import pytest
import torch

from llm_adapt.accuracy.parts_served import errors_between, judge_parts, served_part_record, served_parts
from llm_adapt.accuracy.runner import Runner, RunnerSpec, floor_numerics
from llm_adapt.accuracy.sublayer import PartRecord, record_reference
from llm_adapt.engines import capture_plugin as plugin

LAYER = 1


def _record(attention_out, mlp_out, t=4, d=3):
    ones = torch.ones(1, t, d)
    return PartRecord(inputs={"attention": ones, "MLP": ones}, outputs={"attention": attention_out, "MLP": mlp_out})


def test_errors_between_sees_the_part_that_differs_and_only_it():
    base = torch.arange(12, dtype=torch.float32).reshape(1, 4, 3) + 1
    want = [_record(base, base)]
    got = [_record(base.clone(), base * 1.1)]
    errors = errors_between(want, got)
    assert errors["attention"]["rel_l2"] == 0 and errors["MLP"]["rel_l2"] == pytest.approx(0.1, rel=1e-6)
    assert len(errors["MLP"]["diff_sq_by_prompt"]) == 1 and errors["MLP"]["channels"]["of"] == 3


def test_the_engine_part_far_above_its_floor_is_named_and_a_clean_one_is_not():
    served = {"attention": {"rel_l2": 4e-3, "cos_min": 1.0, "max_abs": 0.01, "diff_sq_by_prompt": [1.0, 1.1, 0.9]},
              "MLP": {"rel_l2": 0.1, "cos_min": 0.99, "max_abs": 0.5, "diff_sq_by_prompt": [600.0, 650.0, 640.0]}}
    floor = {"attention": {"rel_l2": 4e-3, "cos_min": 1.0, "max_abs": 0.01, "diff_sq_by_prompt": [1.0, 1.0, 1.0]},
             "MLP": {"rel_l2": 4e-3, "cos_min": 1.0, "max_abs": 0.01, "diff_sq_by_prompt": [1.0, 1.0, 1.0]}}
    located = judge_parts(served, floor, 2.0, "bf16")
    assert located["part"] == "MLP" and [p["excess"] for p in located["parts"]] == [False, True]
    clean = judge_parts({**served, "MLP": floor["MLP"]}, floor, 2.0, "bf16")
    assert clean["part"] is None and not any(p["excess"] for p in clean["parts"])


def test_a_capture_record_gives_the_parts_of_its_layer_only():
    t = {plugin.part_key(LAYER, "attention", "in"): torch.zeros(5, 3), plugin.part_key(LAYER, "attention", "out"): torch.ones(5, 3),
         plugin.part_key(LAYER, "MLP", "in"): torch.zeros(5, 3), "layer 1": torch.ones(5, 3)}  # the MLP's output missing
    record = served_part_record(t, LAYER)
    assert set(record.inputs) == {"attention"} and record.outputs["attention"].shape == (1, 5, 3)
    assert served_part_record(t, 0) is None


def test_armed_parts_are_read_from_the_armed_file():
    assert plugin.armed_parts('{"parts": [5, 7]}') == {5, 7}
    assert plugin.armed_parts("1") == set() and plugin.armed_parts("not json") == set() and plugin.armed_parts("[]") == set()


@pytest.fixture(scope="module")
def engine_like(tiny_llama):
    """The tiny Llama's own parts of one layer on two prompts, as the capture records them (one record per
    prompt), with the reference and a bf16 floor runner."""
    reference = Runner(RunnerSpec("cpu", "fp32"), tiny_llama)
    floor = Runner(floor_numerics(RunnerSpec("cpu", "bf16")), tiny_llama)
    sequences = [[1, 5, 9, 13, 17, 21, 25, 29], [2, 4, 6, 8, 10, 12]]
    truth = record_reference(reference, LAYER, sequences)
    yield reference, floor, sequences, truth
    reference.close()
    floor.close()


def _captured(sequences, truth, scale=None):
    records = []
    for seq, part in zip(sequences, truth):
        tensors = {}
        for name in ("attention", "MLP"):
            out = part.outputs[name][0] * (scale[1] if scale and scale[0] == name else 1.0)
            tensors[plugin.part_key(LAYER, name, "in")] = part.inputs[name][0]
            tensors[plugin.part_key(LAYER, name, "out")] = out
        records.append({"input_ids": torch.tensor(seq), "positions": torch.arange(len(seq)), "tensors": tensors})
    return records


@pytest.mark.parametrize("part", ["attention", "MLP"])
def test_a_part_the_engine_gets_wrong_is_named(engine_like, part):
    reference, floor, sequences, truth = engine_like
    located = served_parts(_captured(sequences, truth, (part, 1.1)), sequences, LAYER, reference, floor, 2.0, "bf16")
    assert located["part"] == part, located
    assert [p["name"] for p in located["parts"] if p["excess"]] == [part]


def test_an_engine_whose_parts_match_the_reference_names_none(engine_like):
    reference, floor, sequences, truth = engine_like
    located = served_parts(_captured(sequences, truth), sequences, LAYER, reference, floor, 2.0, "bf16")
    assert located["part"] is None and {p["name"] for p in located["parts"]} == {"attention", "MLP"}


def test_no_part_recorded_is_said_so(engine_like):
    reference, floor, sequences, _ = engine_like
    located = served_parts([], sequences, LAYER, reference, floor, 2.0, "bf16")
    assert located["part"] is None and "recorded no part of layer 1" in located["parts_skipped"]


def test_a_server_gone_during_the_parts_pass_keeps_the_layer_and_says_why(tmp_path):
    import types

    from llm_adapt.accuracy.layers_served import with_served_parts
    from llm_adapt.engines.client import ServerGone

    class Gone:
        def post(self, path, payload):
            raise ServerGone("the server stopped answering (ConnectError)")

    where = {"name": "layer 3", "local_rel_l2": 0.2, "ratio": 9.0, "basis": "noise floor"}
    gold = types.SimpleNamespace(prompts=[types.SimpleNamespace(sequence=[1, 2, 3])])
    opts = types.SimpleNamespace(reference=RunnerSpec("cpu", "fp32"), local_factor=2.0)
    out = with_served_parts(where, Gone(), tmp_path, gold, tmp_path, opts, RunnerSpec("cpu", "fp32"), "fp32",
                            lambda *a: None)
    assert out["name"] == "layer 3" and out["ratio"] == 9.0 and out["part"] is None
    assert "stopped answering" in out["parts_skipped"] and not (tmp_path / plugin.ARMED).exists()
    assert with_served_parts(None, Gone(), tmp_path, gold, tmp_path, opts, None, "fp32", lambda *a: None) is None
