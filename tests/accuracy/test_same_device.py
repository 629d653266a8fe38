"""The gold and a clean target on the same device, so no noise floor is measured: the CPU analogues of the
H200's two false alarms (issue 46). A deep, narrow random body has near-flat logits, where a clean bf16
target flips many near-ties; an fp32 target on a second kernel path rounds a little differently in every
layer. Both must PASS, and each test shows the judgement before this rule would not have."""

from llm_adapt.accuracy.compare import compare
from llm_adapt.accuracy.options import CompareOptions
from llm_adapt.accuracy.runner import VARIANT_KERNEL, RunnerSpec, default_target
from llm_adapt.accuracy.verdict import ABSOLUTE_TOP1, UNIT_ROUNDOFF, find_first_local_excess, judge
from llm_adapt.models.source import resolve_model
from llm_adapt.models.synthetic import write_tiny_llama
from llm_adapt.report.render import render_report

FP32 = RunnerSpec("cpu", "fp32")
DECISIVE = ("decisive_positions", "same_top1_decisive", "same_top1_decisive_err", "tie_margin")


def deep_body(root, default_model, layers: int):
    """Random Llama layers of width 64 (2 heads of 32, 1 KV head) with SmolLM2's tokenizer: its logits over
    49,152 words are near-flat, the top two of most positions under the 0.3-nat tie margin apart."""
    return write_tiny_llama(root / f"deep{layers}", num_hidden_layers=layers, hidden_size=64, intermediate_size=128,
                            num_attention_heads=2, num_key_value_heads=1, tokenizer_from=default_model.path)


def compared(model_dir, target: RunnerSpec, keep_in=None):
    """The target's report; `keep_in`: a run directory the whole result is saved to."""
    opts = CompareOptions(reference=FP32, targets=(target,), prompts="quick", max_new_tokens=8, ppl_window=64,
                          corpus_tokens=128)
    result = compare(resolve_model(str(model_dir)), opts)
    if keep_in is not None:
        result.save(keep_in / "accuracy.json")
    return result.targets[0]


def inspected(model_dir, run) -> None:
    """inspect.json in `run`: the report renders a run directory."""
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect

    source = resolve_model(str(model_dir))
    options = PlanOptions(model_path=str(source.path), served_model_name="m", kv_cache_space_gib=1, max_model_len=512)
    run_inspect(source, options, "cpu").save(run / "inspect.json")


def test_a_clean_bf16_target_on_the_golds_device_passes_on_a_near_flat_deep_body(default_model, tmp_path):
    target = compared(deep_body(tmp_path, default_model, 32), default_target("cpu"))
    lg = target.logits
    assert target.floor is None and lg["decisive_positions"] > 30
    assert target.verdict["status"] == "PASS", target.verdict["reasons"]
    assert lg["same_top1"] < ABSOLUTE_TOP1[0]  # over all positions: 0.93 here, under the absolute budget ...
    assert lg["same_top1_decisive"] >= ABSOLUTE_TOP1[0]  # ... every flip a near-tie
    before = target.model_dump() | {"logits": {k: v for k, v in lg.items() if k not in DECISIVE}}
    # judged on every position against the absolute budget, as before: the false alarm
    assert judge(before, None, exact_expected=True)["status"] != "PASS"


def test_an_fp32_target_on_a_second_kernel_path_passes_on_the_rounding_basis(default_model, tmp_path):
    model, run = deep_body(tmp_path, default_model, 4), tmp_path / "run"
    run.mkdir()
    inspected(model, run)
    target = compared(model, RunnerSpec("cpu", "fp32", kernel=VARIANT_KERNEL), run)
    assert target.floor is None and target.verdict["status"] == "PASS", target.verdict["reasons"]
    basis = target.roundoff_basis
    assert basis["dtype"] == "fp32" and basis["contraction"] >= 128 and basis["factor"] > 4
    assert basis["basis"].endswith(f"(longest sum: {basis['contraction']:,} terms)")
    worst = max(row["local_rel_l2"] for row in target.layers)
    assert worst > 4 * UNIT_ROUNDOFF["fp32"]  # eager attention rounds otherwise than SDPA: past the fixed 4 units,
    assert find_first_local_excess(target.layers, 2.0, False, "fp32") is not None  # a FAIL on the fixed basis
    assert worst < basis["allowed"]
    # the report says the basis it judged by, from the JSON alone
    en, zh = (render_report(run, lang)[0].read_text() for lang in ("en", "zh"))
    assert f"{basis['basis']})." in en, en
    assert f"（最长求和：{basis['contraction']:,} 项）" in zh
