"""Report section 4 from a saved inspect.json: inventory, caveats, strategy and accounting, in en and zh."""

import pytest

from llm_adapt.models.synthetic import write_tiny_family


@pytest.fixture(scope="module")
def gemma_run(tmp_path_factory):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model

    model = write_tiny_family("gemma2", tmp_path_factory.mktemp("g") / "gemma2")
    run = tmp_path_factory.mktemp("run")
    options = PlanOptions(model_path=str(model), served_model_name="g", device_memory_gib=64)
    run_inspect(resolve_model(str(model)), options, "npu").save(run / "inspect.json")
    return run


def section4(run, lang):
    from llm_adapt.report.render import render_report

    md = next(p for p in render_report(run, lang) if p.suffix == ".md")
    text = md.read_text()
    return text[text.index("## 4."):text.index("## 5.")]


def test_english_section_shows_inventory_caveats_strategy_and_accounting(gemma_run):
    text = section4(gemma_run, "en")
    assert "**direct registration**" in text and "registered natively" in text
    assert "the model's own code" in text and "GELU (tanh approximation)" in text and "(1 + w)" in text
    assert "sliding window 16 in 1 of 2 layers" in text and "final logits 30 * tanh(x / 30)" in text
    assert "### 4.2 Caveats on" in text and "logits_soft_cap" in text and "what to check in the accuracy section" in text
    assert "Every checkpoint tensor is explained" in text and "`tanh` ×1" in text


def test_chinese_section_has_the_same_evidence(gemma_run):
    text = section4(gemma_run, "zh")
    assert "直接注册" in text and "算子清单" in text and "模型自身代码" in text and "参数核对" in text
    assert "logits_soft_cap" in text  # sources stay verbatim
    # the inventory's words, the caveats, the walk's notes and the strategy's evidence from their message keys
    assert "| 注意力窗口 | 2 层中有 1 层使用滑动窗口 16" in text and "已在 meta 设备上实例化" in text
    assert "在 meta 张量上运行 Gemma2DecoderLayer 一次" in text and "已原生注册" in text and "每组 2 个查询头" in text
    assert "RMSNorm 按 (1 + w) 缩放" in text and "不影响精度；请核对部署计划中的 KV cache 数字" in text
    for english in ("instantiated on the meta device", "run once on meta tensors", "probed on CPU", "registered natively",
                    "tied to the embedding", "in every decoder layer", "none for accuracy", "sliding window 16 in"):
        assert english not in text, english
