"""The accuracy engine on tiny random Llamas built in the test."""

import json
import shutil
from dataclasses import replace

import pytest
import torch
from safetensors.torch import load_file, save_file

from llm_adapt.accuracy.compare import check_same_family, compare
from llm_adapt.accuracy.runner import floor_for
from llm_adapt.accuracy.options import CompareOptions, served_floor
from llm_adapt.accuracy.runner import BF16_ENV, RunnerSpec, default_target, parse_runner
from llm_adapt.errors import UsageError
from llm_adapt.models.source import resolve_model
from llm_adapt.models.synthetic import write_tiny_llama
from tests.conftest import write_two_prompts

FP32 = RunnerSpec("cpu", "fp32")


@pytest.fixture(scope="module")
def prompts_file(tmp_path_factory):
    return write_two_prompts(tmp_path_factory.mktemp("prompts"))


@pytest.fixture(scope="module")
def tiny4(tmp_path_factory, default_model):
    return write_tiny_llama(tmp_path_factory.mktemp("t4") / "m", num_hidden_layers=4, tokenizer_from=default_model.path)


def run(model_dir, prompts, *targets, **kw):
    opts = CompareOptions(reference=FP32, targets=tuple(targets), prompts=prompts, max_new_tokens=6, ppl_window=64, **kw)
    return compare(resolve_model(str(model_dir)), opts)


def perturbed_copy(src, dst, mutate):
    shutil.copytree(src, dst)
    weights = load_file(dst / "model.safetensors")
    mutate(weights)
    save_file(weights, dst / "model.safetensors", metadata={"format": "pt"})
    return dst


def test_reference_against_itself_is_exact(tiny4, prompts_file):
    result = run(tiny4, prompts_file, FP32)
    target = result.targets[0]
    assert all(row["rel_l2"] == 0 and row["local_rel_l2"] == 0 for row in target.layers)
    assert target.logits["kl_max"] == pytest.approx(0, abs=1e-12) and target.logits["same_top1"] == 1.0
    assert all(g["exact"] for g in target.greedy)
    assert target.first_local_excess is None and target.verdict["status"] == "PASS"
    assert target.perplexity["ln_ratio"] == pytest.approx(0, abs=1e-9)


def test_bf16_error_is_small_and_nonzero(tiny4, prompts_file):
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "bf16")).targets[0]
    final = target.layers[-1]["rel_l2"]
    assert 0 < final < 0.05
    assert 0 < target.logits["kl_mean"] < 0.01
    assert len(target.layers) == 4 + 2  # embeddings, 4 layers, final norm


def test_perturbed_layer_is_localized(tiny4, prompts_file, tmp_path):
    def hit_layer_2(w):
        key = "model.layers.2.mlp.down_proj.weight"
        w[key] = w[key] + 0.5 * w[key].std() * torch.randn_like(w[key])

    broken = perturbed_copy(tiny4, tmp_path / "broken", hit_layer_2)
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=broken)).targets[0]
    assert target.first_local_excess["name"] == "layer 2"
    assert target.layers[1]["local_rel_l2"] == 0 and target.layers[4]["local_rel_l2"] == 0  # layers 0 and 3
    assert target.layers[5]["rel_l2"] > 0  # the error is inherited downstream


def wrong_rope_copy(src, dst, theta: float = 500000.0):
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    for holder in (cfg, cfg.get("rope_parameters") or {}):
        if "rope_theta" in holder:
            holder["rope_theta"] = theta
    (dst / "config.json").write_text(json.dumps(cfg))
    return dst


def test_wrong_rope_theta_is_caught_at_the_first_layer(tiny4, prompts_file, tmp_path):
    wrong = wrong_rope_copy(tiny4, tmp_path / "rope")
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=wrong)).targets[0]
    assert target.first_local_excess["name"] == "layer 0"


def test_nan_in_target_is_a_finding_not_a_crash(tiny4, prompts_file, tmp_path):
    def poison(w):
        w["model.layers.1.self_attn.o_proj.weight"][0, 0] = float("nan")

    broken = perturbed_copy(tiny4, tmp_path / "nan", poison)
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "fp32", model_path=broken)).targets[0]
    assert target.first_nonfinite == "layer 1"
    assert target.verdict["status"] == "FAIL"


def test_int8_targets_are_judged_against_the_unquantized_floor(tiny4, prompts_file):
    result = run(tiny4, prompts_file, RunnerSpec("cpu", "bf16"), RunnerSpec("cpu", "bf16", "int8-tensor"))
    plain, quant = result.targets
    assert quant.floor == "cpu:bf16" and [f.label for f in result.floors] == ["cpu:bf16"]
    assert quant.quantized_linears == 4 * 7 + 1  # 7 Linear per layer + lm_head
    assert quant.layers[-1]["rel_l2"] > plain.layers[-1]["rel_l2"]
    assert quant.layers[-1]["ratio"] > 1


def test_floor_choice(monkeypatch):
    monkeypatch.setenv(BF16_ENV, "native")
    ref = FP32
    assert floor_for(RunnerSpec("npu", "bf16"), ref, None) == RunnerSpec("cpu", "bf16")
    assert floor_for(RunnerSpec("npu", "bf16", "int8-tensor"), ref, None) == RunnerSpec("cpu", "bf16", "int8-tensor")
    assert floor_for(RunnerSpec("cpu", "bf16", "int8-channel"), ref, None) == RunnerSpec("cpu", "bf16")
    assert floor_for(RunnerSpec("cpu", "bf16"), ref, None) is None
    assert floor_for(RunnerSpec("cuda", "fp32"), ref, None) is None  # its floor would be the reference itself
    # the gold on the target's accelerator: the floor is still measured, at the target's dtype on the host
    on_gpu = RunnerSpec("cuda", "fp32")
    assert floor_for(RunnerSpec("cuda", "bf16"), on_gpu, None) == RunnerSpec("cpu", "bf16")
    assert floor_for(RunnerSpec("npu:1", "fp16"), RunnerSpec("npu:1", "fp32"), None) == RunnerSpec("cpu", "fp16")
    assert floor_for(RunnerSpec("auto", "bf16"), RunnerSpec("auto", "fp32"), None) is None  # placed: no host floor


def test_bf16_floor_is_emulated_where_the_cpu_has_no_bf16(monkeypatch):
    emulated = RunnerSpec("cpu", "bf16", emulated=True)
    monkeypatch.setattr("llm_adapt.platforms.cpu_has_native_bf16", lambda: False)
    monkeypatch.delenv(BF16_ENV, raising=False)
    assert floor_for(RunnerSpec("npu", "bf16"), FP32, None) == emulated
    assert floor_for(RunnerSpec("npu", "bf16", "int8-tensor"), FP32, None) == replace(emulated, quant="int8-tensor")
    assert served_floor(FP32, "bf16") == emulated and served_floor(FP32, "fp16") == RunnerSpec("cpu", "fp16")
    # a target the user named is measured as named, and a floor that is one of the targets too
    assert floor_for(RunnerSpec("cpu", "bf16", "int8-channel"), FP32, None, (RunnerSpec("cpu", "bf16"),)) == RunnerSpec("cpu", "bf16")
    assert floor_for(RunnerSpec("npu", "bf16"), FP32, RunnerSpec("cpu", "bf16")) == RunnerSpec("cpu", "bf16")
    assert default_target("cpu") == emulated and "bf16 emulated in fp32" in emulated.label
    monkeypatch.setattr("llm_adapt.platforms.cpu_has_native_bf16", lambda: True)
    assert served_floor(FP32, "bf16") == RunnerSpec("cpu", "bf16") == default_target("cpu")
    monkeypatch.setenv(BF16_ENV, "emulated")  # forced, e.g. to check the emulation on a CPU with bf16
    assert served_floor(FP32, "bf16") == emulated
    monkeypatch.setenv(BF16_ENV, "fast")
    with pytest.raises(UsageError, match=BF16_ENV):
        served_floor(FP32, "bf16")


def test_runner_parsing_and_missing_devices():
    assert parse_runner("cuda:1:bf16") == RunnerSpec("cuda:1", "bf16")
    with pytest.raises(UsageError, match="DEVICE:DTYPE"):
        parse_runner("tpu:bf16")
    with pytest.raises(UsageError, match="DEVICE:DTYPE"):
        parse_runner("cpu:fp8")
    from llm_adapt.accuracy.runner import check_device

    with pytest.raises(UsageError, match="torch_npu"):
        check_device("npu")
    if not torch.cuda.is_available():
        with pytest.raises(UsageError, match="not available"):
            check_device("cuda")


def test_target_model_of_another_family_is_refused(tiny4, tmp_path, default_model):
    other = write_tiny_llama(tmp_path / "other", num_hidden_layers=3, tokenizer_from=default_model.path)
    with pytest.raises(UsageError, match="num_layers"):
        check_same_family(tiny4, other)
    no_tok = write_tiny_llama(tmp_path / "notok", num_hidden_layers=4)
    with pytest.raises(UsageError, match="tokenizer"):
        check_same_family(tiny4, no_tok)


def test_streaming_reference_equals_in_memory(tiny4, prompts_file, tmp_path):
    # Sharded on purpose: the reader must follow the index across files.
    sharded = write_tiny_llama(tmp_path / "sharded", num_hidden_layers=4, shard_size="2MB",
                               tokenizer_from=tiny4, tie_word_embeddings=False)
    assert len(list(sharded.glob("*.safetensors"))) > 1
    base = dict(reference=FP32, targets=(RunnerSpec("cpu", "bf16"),), prompts=prompts_file, max_new_tokens=6, ppl_window=64)
    src = resolve_model(str(sharded))
    memory = compare(src, CompareOptions(**base, reference_streaming=False))
    stream = compare(src, CompareOptions(**base, reference_streaming=True))
    assert stream.reference.streaming and not memory.reference.streaming
    assert [g["ref_text"] for g in stream.reference.greedy] == [g["ref_text"] for g in memory.reference.greedy]
    assert stream.reference.perplexity == memory.reference.perplexity
    for a, b in zip(stream.targets[0].layers, memory.targets[0].layers):
        assert a["rel_l2"] == pytest.approx(b["rel_l2"], rel=1e-9, abs=1e-12)
    assert stream.targets[0].logits["kl_mean"] == pytest.approx(memory.targets[0].logits["kl_mean"], rel=1e-9)


def test_streaming_reads_each_layer_once_per_pass(tiny4):
    from llm_adapt.accuracy.streaming import StreamingReference

    ref = StreamingReference(tiny4)
    ref.capture_all([[1, 2, 3], [4, 5, 6, 7]])
    assert ref.layers_read == 4
    assert all(p.device.type == "meta" for layer in ref.model.model.layers for p in layer.parameters())


def test_prompts_longer_than_the_served_context_are_skipped_before_the_gold(tiny4, prompts_file):
    from transformers import AutoTokenizer

    from llm_adapt.accuracy.reference import measure_reference
    from llm_adapt.prompts import load_prompts, render

    tokenizer = AutoTokenizer.from_pretrained(tiny4)
    prompts = load_prompts(prompts_file)
    lengths = {p.id: len(render(tokenizer, p)) for p in prompts}
    served_len = min(lengths.values()) + 6  # only the shorter prompt fits with 6 new tokens
    opts = CompareOptions(reference=FP32, targets=(), prompts=prompts_file, max_new_tokens=6, ppl_window=64)
    gold = measure_reference(resolve_model(str(tiny4)), tokenizer, prompts, opts, lambda *a: None, served_len)
    longer = max(lengths, key=lengths.get)
    assert [p.prompt.id for p in gold.prompts] == [min(lengths, key=lengths.get)]
    assert [s["id"] for s in gold.skipped] == [longer] and "served max_model_len" in gold.skipped[0]["reason"]


def _scaled(key: str, factor: float):
    def mutate(w):
        w[key] = w[key] * factor
    return mutate


def test_an_fp16_target_past_fp16s_range_is_named_so(tiny4, prompts_file, tmp_path):
    """A model whose residual stream passes 65,504 after layer 1 (its fp32 gold is finite there): run in
    fp16 it overflows, and the verdict gives fp16's range as the likely cause, with the gold's figure."""
    big = perturbed_copy(tiny4, tmp_path / "big", _scaled("model.layers.1.mlp.down_proj.weight", 1e5))
    result = run(big, prompts_file, RunnerSpec("cpu", "fp16"))
    target = result.targets[0]
    assert target.verdict["status"] == "FAIL" and target.verdict["causes"][0]["tensor"] == "layer 1"
    assert target.verdict["causes"][0]["max_abs"] > 65504
    assert any(r.startswith("likely cause: fp16's range: the gold's layer 1 reaches") for r in target.verdict["reasons"])
    same_in_bf16 = run(big, prompts_file, RunnerSpec("cpu", "bf16")).targets[0]  # bf16 has fp32's range
    assert "causes" not in same_in_bf16.verdict


def test_an_fp16_target_within_fp16s_range_names_no_range(tiny4, prompts_file):
    target = run(tiny4, prompts_file, RunnerSpec("cpu", "fp16")).targets[0]
    assert "causes" not in target.verdict and not any("range" in r for r in target.verdict["reasons"])
