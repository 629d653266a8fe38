"""The zoo's cheap part (benchmarks/zoo.py runs all of it into docs/models.md): every family the planner names
is written by transformers' own classes and planned as vLLM serves it; four families the verdicts were not
tuned on are judged in process, clean and with a planted fault; and a random-weight MoE base model is served
and judged end to end, as a new user's untrained checkpoint would be."""

import json

import pytest

from llm_adapt.models.synthetic import MOE, SHARP_SCALE, TIED_IN_VLLM, ZOO, write_zoo_model
from tests.conftest import scratch


@pytest.fixture(scope="module")
def zoo(default_model, tmp_path_factory):
    with scratch(tmp_path_factory, "zoo") as root:
        yield {family: write_zoo_model(family, root / family, tokenizer_from=default_model.path, sharp=True)
               for family in ZOO}


def test_every_family_is_planned_as_vllm_serves_it(zoo):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    for family, path in zoo.items():
        config = json.loads((path / "config.json").read_text())
        # sharpened through an lm_head of its own, except where vLLM's class has none (its final norm instead)
        assert config["pad_token_id"] == config["eos_token_id"], family
        assert config["tie_word_embeddings"] == (family in TIED_IN_VLLM), family
        result = run_inspect(resolve_model(str(path)), PlanOptions(model_path=str(path), served_model_name=family), "cpu")
        assert result.support["vllm"] == "native", (family, result.support)
        assert bool(result.inventory.get("experts")) == (family in MOE), (family, result.inventory.get("experts"))


def test_a_sharp_model_is_decisive_and_a_flat_one_is_not(default_model, tmp_path):
    import torch

    from llm_adapt.accuracy.flatness import is_flat
    from llm_adapt.accuracy.metrics import logit_sharpness
    from llm_adapt.models.tokenizer import load_tokenizer
    from transformers import AutoModelForCausalLM

    ids = load_tokenizer(default_model.path)("The capital of France is Paris, and the capital of Spain is")["input_ids"]
    for family in ("qwen3", "gemma2"):  # sharpened by its lm_head; by its final norm (TIED_IN_VLLM)
        for sharp in (False, True):
            path = write_zoo_model(family, tmp_path / f"{family}-{sharp}", tokenizer_from=default_model.path, sharp=sharp)
            with torch.no_grad():
                logits = AutoModelForCausalLM.from_pretrained(path)(torch.tensor([ids])).logits[0]
            assert is_flat(logit_sharpness([logits], tie_margin=0.3)) is not sharp, (family, sharp, SHARP_SCALE)


HELD_OUT = ("gemma3", "phi3", "mixtral", "deepseek_v2")  # soft-capping and sliding windows; fused projections; MoE; MLA


@pytest.mark.slow
@pytest.mark.parametrize("family", HELD_OUT)
def test_a_held_out_family_is_clean_at_bf16_and_its_planted_fault_fails_at_its_layer(zoo, family, tmp_path):
    from llm_adapt.accuracy.compare import compare
    from llm_adapt.accuracy.options import CompareOptions
    from llm_adapt.accuracy.runner import RunnerSpec, default_target
    from llm_adapt.models.source import resolve_model
    from tests.accuracy import faults

    plant = faults.router_rows_swapped if family in MOE else faults.norm_shifted
    faulty = RunnerSpec("cpu", "fp32", model_path=plant(zoo[family], tmp_path / "fault", layer=1))
    clean = default_target("cpu")
    opts = CompareOptions(reference=RunnerSpec("cpu", "fp32"), targets=(clean, faulty), prompts="quick",
                          max_new_tokens=12, corpus_tokens=128)
    judged = {t.label: t for t in compare(resolve_model(str(zoo[family])), opts).targets}
    assert judged[clean.label].verdict["status"] == "PASS", judged[clean.label].verdict["reasons"]
    fault = judged[faulty.label]
    assert fault.verdict["status"] == "FAIL" and fault.first_local_excess["name"] == "layer 1", fault.verdict["reasons"]
    if family in MOE:
        assert any("expert routing" in r for r in fault.verdict["reasons"]), fault.verdict["reasons"]


@pytest.mark.slow
def test_a_random_moe_base_model_is_served_judged_and_named_flat(default_model, tmp_path):
    """The new user's case, served: random weights (flat logits), no chat template (a base model), experts."""
    from llm_adapt.cli import main

    model = write_zoo_model("qwen3_moe", tmp_path / "random-moe-base", tokenizer_from=default_model.path,
                            num_experts=8)
    (model / "chat_template.jinja").unlink(missing_ok=True)
    config = json.loads((model / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    out = tmp_path / "run"
    # the plan's memory given, not read: beside the other worker's engines a 24 GiB box had 3.9 GiB free
    code = main(["run", str(model), "--quick", "--out", str(out), "--skip", "bench", "--device-memory", "12",
                 "--kv-cache-space", "1", "--max-model-len", "1024"])
    status = json.loads((out / "status.json").read_text())
    assert code == 0 and status["verdict"]["status"] in ("PASS", "WARN"), status
    report = (out / "report.md").read_text()
    assert "the gold's logits are flat (untrained or random weights?)" in report.split("## 2.")[0]
    rows = {r["name"]: r for r in json.loads((out / "probes.json").read_text())["rows"]}
    assert rows["chat completion"]["status"] == "not applicable"
    assert rows["legacy completions"]["status"] == "supported" and rows["streamed completions"]["status"] == "supported"
    endpoint = json.loads((out / "endpoint_accuracy.json").read_text())
    assert endpoint["sections"]["teacher_forced"]["status"] == "done" and endpoint["verdict"]["status"] != "FAIL"
