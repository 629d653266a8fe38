"""The range signature's candidate as the report renders it, in both languages, from the JSON alone."""

import json

from llm_adapt.report.render import render_report


def test_an_fp16_range_cause_is_rendered_with_its_figures(tiny_llama, tmp_path):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    source = resolve_model(str(tiny_llama))
    run_inspect(source, PlanOptions(model_path=str(source.path), served_model_name="m", kv_cache_space_gib=1, max_model_len=512), "cpu").save(
        tmp_path / "inspect.json")
    candidate = {"signature": "range", "tensor": "layer 12", "max_abs": 70100.0, "limit": 65504.0, "share": 1.07,
                 "dtype": "fp16", "peaks": [], "cause": "x", "next": "llm-adapt serve MODEL --dtype bfloat16"}
    ep = {"kind": "endpoint_accuracy", "schema_version": 1, "endpoint": {"base_url": "http://127.0.0.1:1/v1"},
          "model": "m", "reference": "cpu:fp32", "floor": "cpu:fp16", "settings": {},
          "sections": {s: {"status": "not run", "reason": "r"} for s in ("tokenization", "teacher_forced", "perplexity", "greedy")},
          "verdict": {"status": "FAIL", "reasons": ["NaN"], "checks": []},
          "diagnosis": {"candidates": [candidate], "unknown": False, "rules": "accuracy/diagnosis.py"}}
    (tmp_path / "endpoint_accuracy.json").write_text(json.dumps(ep))
    en = render_report(tmp_path, "en")[0].read_text()
    assert "Values past the served dtype's range" in en
    assert "fp16, layer 12: max \\|x\\| 70100, 107% of the dtype's largest finite value (65504)" in en, en
    zh = render_report(tmp_path, "zh")[0].read_text()
    assert "数值超出服务精度的表示范围" in zh and "llm-adapt serve MODEL --dtype bfloat16" in zh
