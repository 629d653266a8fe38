"""Why a stage of `llm-adapt run` did not run or was left out (run/pipeline.py, run/table.py, run/stages.py)."""

from __future__ import annotations

REASONS: dict[str, dict[str, str]] = {
    "skip_flag": {"en": "--skip {stage}", "zh": "已按 --skip {stage} 跳过"},
    "settings_opt_in": {"en": "not asked (--settings eager,graph,tp2 serves the model in each setting in turn)",
                        "zh": "未要求（--settings eager,graph,tp2 会依次以每种部署设置服务该模型）"},
    "eval_opt_in": {"en": "not asked (--tasks TASK,...); upstream's gate, gsm8k, runs by default once its dataset is in "
                          "the local Hugging Face datasets cache (python -c \"import datasets; "
                          "datasets.load_dataset('openai/gsm8k', 'main')\") or given with --gsm8k-data DIR",
                    "zh": "未开启（--tasks TASK,...）；上游门禁 gsm8k 的数据集进入本地 Hugging Face 数据集缓存"
                          "（python -c \"import datasets; datasets.load_dataset('openai/gsm8k', 'main')\"）"
                          "或以 --gsm8k-data DIR 给出后默认运行"},
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
    "eager_not_graph": {"en": "the deployment serves eager: no graph mode to tell apart",
                        "zh": "部署以 eager 模式服务：没有需要区分的图模式"},
    "eager_layers_skipped": {"en": "--skip layers: this check is the first step of the layers escalation",
                             "zh": "已按 --skip layers 跳过：此检查是逐层升级的第一步"},
    "eager_no_escalate": {"en": "turned off with the layers escalation: --no-escalate",
                          "zh": "已随逐层升级关闭：--no-escalate"},
    "eager_no_verdict": {"en": "no endpoint accuracy verdict for the graph-mode deployment",
                         "zh": "图模式部署没有端点精度结论"},
    "eager_in_line": {"en": "endpoint accuracy {verdict}: the graph-mode deployment is not out of line",
                      "zh": "端点精度为 {verdict}：图模式部署没有偏离"},
}
