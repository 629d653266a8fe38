"""Why a stage of a run did not run, as a message key with its arguments, in both report languages.

A `Reason` is the English sentence (what the log prints and what status.json's "reason" keeps, so older
readers and the tests read it as before) carrying its key and arguments; status.json stores those beside
it ("reason_key", "reason_args") and the report renders the key in its own language from the table
here. A reason without a key (an engine's own error message, say) is shown as it was written.
"""

from __future__ import annotations

from typing import Any

REASONS: dict[str, dict[str, str]] = {
    "skip_flag": {"en": "--skip {stage}", "zh": "已按 --skip {stage} 跳过"},
    "eval_opt_in": {"en": "opt-in: --tasks TASK,...", "zh": "需主动开启：--tasks TASK,..."},
    "dummy_weights": {"en": "dummy-weight verification: the weights are random",
                      "zh": "虚拟权重验证：权重为随机值，精度无意义"},
    "external_endpoint": {"en": "external endpoint {url}", "zh": "使用外部端点 {url}"},
    "no_endpoint": {"en": "no endpoint: the engine {serve} (its cause is in the serve row and the summary)",
                    "zh": "无可用端点：引擎状态为 {serve}（原因见 serve 行与摘要）"},
    "sigterm": {"en": "the run was stopped (SIGTERM) before this stage", "zh": "运行在此阶段之前被终止（SIGTERM）"},
    "ctrl_c": {"en": "the run was interrupted (Ctrl-C) before this stage", "zh": "运行在此阶段之前被中断（Ctrl-C）"},
    "stopped": {"en": "the run stopped before this stage ({error})", "zh": "运行在此阶段之前停止（{error}）"},
    "layers_graph": {"en": "the run deploys graph mode and capture needs eager; use `llm-adapt layers --graph "
                           "--accept-eager`",
                     "zh": "本次运行部署图模式，而逐层捕获需要 eager 模式；请使用 `llm-adapt layers --graph --accept-eager`"},
    "layers_engine": {"en": "needs the vLLM engine this run starts (the capture runs inside it); not an external "
                            "endpoint",
                      "zh": "需要本次运行自行启动的 vLLM 引擎（捕获在引擎内部进行），外部端点不行"},
    "no_escalate": {"en": "turned off: --no-escalate (--layers captures anyway)",
                    "zh": "已关闭：--no-escalate（--layers 仍会捕获）"},
    "no_verdict": {"en": "no endpoint accuracy verdict to escalate from (--layers captures anyway)",
                   "zh": "没有可据以升级的端点精度结论（--layers 仍会捕获）"},
    "nothing_to_localize": {"en": "endpoint accuracy {verdict}: nothing to localize (--layers captures anyway)",
                            "zh": "端点精度为 {verdict}：无需定位（--layers 仍会捕获）"},
    "no_escalation": {"en": "no escalation: the layers stage {blocked}", "zh": "未升级：逐层阶段{blocked}"},
}


class Reason(str):
    """The English sentence of a keyed reason, with `key` and `args` (arguments may be Reasons)."""

    key: str
    args: dict[str, Any]


def reason(key: str, **args: Any) -> Reason:
    text = Reason(REASONS[key]["en"].format(**args))
    text.key, text.args = key, args
    return text


def stored(value: Any) -> dict[str, Any]:
    """The fields a stage's entry in status.json keeps for `value` (a Reason, or any other text)."""
    if isinstance(value, Reason):
        return {"reason": str(value), "reason_key": value.key,
                "reason_args": {k: stored(v) if isinstance(v, Reason) else v for k, v in value.args.items()}}
    return {"reason": value}


def rendered(entry: dict[str, Any], lang: str) -> str:
    """A stage entry's reason in `lang`: its key's sentence where the key is known, else its words. Pure."""
    key = entry.get("reason_key")
    if key not in REASONS:
        return entry.get("reason") or ""
    args = {k: rendered(v, lang) if isinstance(v, dict) and "reason" in v else v
            for k, v in (entry.get("reason_args") or {}).items()}
    try:
        return REASONS[key].get(lang, REASONS[key]["en"]).format(**args)
    except (KeyError, IndexError):  # arguments of another version's sentence: its own words
        return entry.get("reason") or ""
