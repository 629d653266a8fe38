"""What a differential run checked of tensor parallel, expert parallel and graph mode, as the exported feature rows
say it (upstream/setting_checks.py), on plain settings.json rows."""

from llm_adapt.messages import message
from llm_adapt.upstream.export import remark
from llm_adapt.upstream.setting_checks import setting_checks, with_checks

ROWS = {"rows": [
    {"label": "eager", "features": [], "status": "PASS", "dir": "", "setting": {"name": "eager"}},
    {"label": "graph", "features": ["graph"], "status": "PASS", "dir": "settings/graph", "kl_ratio": 1.02,
     "allowed": 1.31, "same_top1": 0.987, "setting": {"name": "graph"}},
    {"label": "TP=2", "features": ["tp"], "status": "PASS", "dir": "settings/tp2", "kl_ratio": 0.98, "allowed": 1.31,
     "same_top1": 0.99, "setting": {"name": "tp2"}},
    {"label": "EP=2", "features": ["ep", "tp"], "status": None, "dir": "settings/ep2", "setting": {"name": "ep2"},
     "error": "a worker crashed (Segfault) in cpu_fused_moe.cpp line 242 (fused_moe_impl)"},
]}


def test_each_feature_is_checked_by_the_setting_that_turns_on_the_fewest_others():
    checks = setting_checks(ROWS["rows"], "cpu")
    assert {f: c["label"] for f, c in checks.items()} == {"graph": "graph", "tp": "TP=2", "ep": "EP=2"}
    tp = str(checks["tp"]["words"])
    assert tp.startswith("checked on CPU at TP=2 against the fp32 gold: PASS (KL/floor 0.98 (allowed 1.31), same top-1 99.0%")
    assert "settings/tp2" in tp
    assert "the engine refused it (a worker crashed (Segfault) in cpu_fused_moe.cpp" in str(checks["ep"]["words"])
    assert "已在 CPU 上以 TP=2 对照 fp32 金标准检查：PASS" in str(message(checks["tp"]["words"], "zh"))


def test_the_aclgraph_and_ep_rows_carry_their_check_and_keep_their_npu_status():
    rows = [{"feature": "ACLGraph", "status": "not verified", "evidence": "on unless --enforce-eager"},
            {"feature": "EP", "status": "not verified", "evidence": "MoE: 8 experts"},
            {"feature": "MTP", "status": "not-applicable", "evidence": "none"}]
    out = with_checks(rows, setting_checks(ROWS["rows"], "cpu"))
    assert [r["status"] for r in out] == ["not verified", "not verified", "not-applicable"]
    assert "setting_check" not in out[2]
    text = str(remark(out[0]))
    assert text.startswith("checked on CPU in graph mode against the fp32 gold: PASS") and "On the NPU:" in text
    assert with_checks(rows, setting_checks([], "cpu")) == rows  # no differential run: the rows as they were
