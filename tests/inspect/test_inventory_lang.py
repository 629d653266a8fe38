"""The operator inventory, the caveats, the support level and the capacity baseline in the report's two
languages: English as before (the JSON keeps it as the message's text), Chinese from the message's key.
Plain data."""

import json
from dataclasses import replace

from llm_adapt.inspect.caveats import platform_caveats
from llm_adapt.inspect.inventory import ModelFacts, facts_from_spec
from llm_adapt.inspect.operators import operator_inventory
from llm_adapt.inspect.strategy import BackendTrial, decide
from llm_adapt.inspect.support import Registry, classify
from llm_adapt.messages import loaded, message, messages, operator_name, reason, stored
from llm_adapt.models.spec import spec_from_config
from llm_adapt.inspect.capacity import capacity_baseline
from tests.conftest import config_fixture


def plain(value):
    return loaded(json.loads(json.dumps(stored(value))))  # as inspect.json keeps it and the report reads it


def rows(facts, platform="cpu"):
    return {op["name"]: op for op in (plain(o.to_dict()) for o in operator_inventory(facts, platform, {"avx2"}))}


def test_walk_notes_render_in_chinese_and_in_the_old_english():
    note = reason("inv_walked", cls="LlamaForCausalLM", layers=30)
    assert note == "LlamaForCausalLM instantiated on the meta device; 30 decoder layers walked"
    note = plain(note)
    assert message(note, "en") == str(note)
    assert message(note, "zh") == "LlamaForCausalLM 已在 meta 设备上实例化，遍历了 30 个解码层"
    trace = reason("inv_traced", cls="LlamaDecoderLayer")
    assert trace == "LlamaDecoderLayer run once on meta tensors (batch 1, 4 tokens, eager attention)"
    assert message(plain(trace), "zh").startswith("在 meta 张量上运行")


def test_inventory_rows_keep_their_english_and_carry_keys_for_chinese():
    facts = facts_from_spec(spec_from_config(config_fixture("gemma-2-9b")), "test")
    ops = rows(facts, "npu")
    window = ops["attention window"]
    assert window["value"] == "sliding window 4096 in 21 of 42 layers (pattern SFSFSFSFSFSF...; S sliding, F full)"
    assert message(window["value"], "en") == window["value"]
    assert message(window["value"], "zh") == ("42 层中有 21 层使用滑动窗口 4096（模式 SFSFSFSFSFSF...；"
                                                                  "S 为滑动窗口，F 为全注意力）")
    attention = ops["attention"]
    assert attention["value"] == "GQA (16 query heads, 8 KV heads, group size 2)"
    assert message(attention["value"], "zh") == "GQA（16 个查询头，8 个 KV 头，每组 2 个查询头）"
    cap = ops["soft-capping"]
    assert cap["value"] == "attention logits 50 * tanh(x / 50); final logits 30 * tanh(x / 30)"
    assert message(cap["value"], "zh") == "注意力 logits：50 * tanh(x / 50)；最终 logits：30 * tanh(x / 30)"
    assert message(ops["MoE"]["value"], "zh") == "稠密（无 MoE）"
    assert message(ops["biases"]["value"], "zh") == "无"
    assert ops["norm"]["evidence"] == "config.json (gemma2 family rules); not read from the model's code"
    assert message(ops["norm"]["evidence"], "zh") == "config.json（gemma2 系列的规则）；未从模型代码中读取"
    soft = ops["soft-capping"]
    zh = messages(soft["caveats"], "zh")
    assert soft["caveats"][0].startswith("attention soft-capping (50): vLLM-Ascend's") and zh[0].startswith("注意力 soft-capping（50）")
    assert messages(soft["caveats"], "en") == soft["caveats"]


def test_row_names_render_from_the_table_and_others_stay():
    assert operator_name("output head", "zh") == "输出头" and operator_name("output head", "en") == "output head"
    assert operator_name("MoE", "zh").startswith("MoE") and operator_name("CPU ISA", "zh") == "CPU 指令集"
    assert operator_name("head_dim", "zh") == "head_dim" and operator_name("something new", "zh") == "something new"


def test_caveats_keep_english_text_check_and_source_with_their_keys():
    facts = facts_from_spec(spec_from_config(config_fixture("gemma-2-9b")), "test")
    by_id = {c.id: plain(c.to_dict()) for c in platform_caveats(facts, "cpu", {"avx2"})}
    norm, isa = by_id["norm-one-plus-w"], by_id["cpu-avx2"]
    assert norm["check"] == "per-layer cosine of layer 0 (shadow mode): a w-vs-(1+w) mix-up shows there, not only at the logits"
    assert message(norm["check"], "zh").startswith("第 0 层的逐层余弦相似度（shadow 模式）")
    assert isa["text"] == "vLLM-CPU runs its limited AVX2 kernels on this CPU"
    assert message(isa["text"], "zh") == "vLLM-CPU 在此 CPU 上运行其功能受限的 AVX2 内核"
    assert message(isa["source"], "zh") == "本机 /proc/cpuinfo 中的 flags"


def test_facts_read_back_from_the_cache_keep_their_words_in_both_languages():
    facts = facts_from_spec(spec_from_config(config_fixture("llama-3.1-8b")), reason("inv_no_trust"))
    again = ModelFacts.from_dict(plain(facts.to_dict()))  # the facts cache stores and reads like a result
    assert again == facts and again.source_note.key == "inv_no_trust"
    assert message(again.source_note, "zh") == "模型自带代码（auto_map），而未传入 --trust-remote-code"
    assert message(rows(again)["norm"]["evidence"], "zh") == "config.json（llama 系列的规则）；未从模型代码中读取"
    assert replace(again, tied=False).source_note.key == "inv_no_trust"
    unkeyed = ModelFacts.from_dict(json.loads(json.dumps(facts.to_dict())))  # words without keys: shown as written
    assert message(unkeyed.source_note, "zh") == str(facts.source_note)


def test_support_and_strategy_evidence_in_both_languages():
    spec = spec_from_config(config_fixture("llama-3.1-8b"))
    support = plain(classify(spec, Registry(frozenset({spec.architecture}), "0.32.0", "installed vLLM")).to_dict())
    assert support["strategy"] == "Direct registration: no code change" and support["registry"] == "vLLM 0.32.0 (installed vLLM)"
    assert message(support["strategy"], "zh") == "直接注册：无需修改代码"
    assert message(support["registry"], "zh") == "vLLM 0.32.0（本机安装的 vLLM）"
    st = plain(decide(spec.architecture, support, None).to_dict())
    assert st["evidence"] == ["vLLM 0.32.0 (installed vLLM): LlamaForCausalLM registered natively"]
    assert messages(st["evidence"], "zh") == ["vLLM 0.32.0（本机安装的 vLLM）：LlamaForCausalLM 已原生注册"]
    untried = plain(decide(spec.architecture, {**support, "vllm": "unsupported"}, None).to_dict())
    assert untried["headline"].key == support["detail"].key  # the not-tried headline is the support's detail
    trial = BackendTrial(True, False, 2.4, None, ["vllm"])
    tried = plain(decide(spec.architecture, {**support, "vllm": "unsupported"}, trial).to_dict())
    assert tried["evidence"][1] == "vLLM with --model-impl transformers and dummy weights: started, did not answer a completion (2 s)"
    assert messages(tried["evidence"], "zh")[1:] == [
        "以 --model-impl transformers 和虚拟（dummy）权重启动 vLLM：已启动，但没有返回补全结果（2 s）", "引擎日志未给出原因"]


def test_capacity_reasons_in_both_languages():
    plan = {"block_size": 128, "kv_cache_blocks": 1456, "kv_bytes_per_token": 23040, "kv_pool_bytes": 4 * 2**30}
    c = plain(capacity_baseline(plan, 8192))  # not applicable: the model's own limit
    assert c["reasons"] == ["the model's own limit (max_position_embeddings) is 8,192 positions, under the baseline's 131,072"]
    assert messages(c["reasons"], "zh") == ["模型自身的上限（max_position_embeddings）为 8,192 个位置，低于基线的 131,072"]
    c = plain(capacity_baseline(plan, 131072))
    assert c["reasons"] == ["16 x 131,072 tokens need 16,384 KV blocks of 128 (2,097,152 tokens, 45.0 GiB); the planned "
                            "pool holds 1,455 (186,240 tokens, 4.0 GiB)"]
    assert messages(c["reasons"], "en") == c["reasons"]
    assert messages(c["reasons"], "zh") == [
        "16 × 131,072 个 token 需要 16,384 个 KV 块（每块 128 个 token，共 2,097,152 个 token，45.0 GiB）；规划的缓存池只有 "
        "1,455 块（186,240 个 token，4.0 GiB）"]
    assert messages([str(r) for r in c["reasons"]], "zh") == c["reasons"]  # words without their keys: as written


def test_accounting_warnings_name_each_group_in_both_languages():
    from llm_adapt.inspect.accounting import Group, Reconciliation

    groups = [Group("layers.{L}.self_attn.q_proj.bias", "attention", 1234, 3), Group("extra.weight", "other", 5)]
    d = plain(Reconciliation(100, 1339, {}, groups, [], []).to_dict())
    assert d["warnings"] == ["the weights hold tensors the config formula did not expect: layers.{L}.self_attn.q_proj.bias "
                             "(3 tensors, 1,234 parameters); extra.weight (1 tensor, 5 parameters)"]
    assert messages(d["warnings"], "zh") == [
        "权重中有配置公式未预期的张量：layers.{L}.self_attn.q_proj.bias（3 个张量，1,234 个参数）；extra.weight（1 个张量，5 个参数）"]
