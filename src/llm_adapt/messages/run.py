"""Why a stage of `llm-adapt run` did not run or was left out (run/pipeline.py, run/table.py, run/stages.py)."""

from __future__ import annotations

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
