"""The report's own words written on the Python side: the overall verdict's reasons (report/findings), the
summary's findings, the troubleshooting notes, the HTML page's labels, a noise floor's row label and the
first screen's words. The
templates' words are in report/templates/<lang>/report.md.j2 (S) and in each section that keeps its own (W)."""

from __future__ import annotations

from llm_adapt.messages.accuracy import PARTS

REASONS: dict[str, dict[str, str]] = {
    # the overall verdict's reasons (report/findings.overall_verdict)
    "engine_not_started": {"en": "the engine did not start: {cause}", "zh": "引擎未能启动：{cause}"},
    "core_broken": {"en": "core features not working: {names}", "zh": "核心功能不可用：{names}"},
    "probes_misbehaving": {"en": "probes that found the server misbehaving: {names}",
                           "zh": "发现服务端行为异常的探测项：{names}"},
    "in_process_verdict": {"en": "in-process {label}: {status}", "zh": "进程内 {label}：{status}"},
    "served_verdict": {"en": "served model vs gold: {status}", "zh": "服务端模型对比金标准：{status}"},
    "false_ready": {"en": "false-ready: the server starts and answers 200, but its output is wrong (served model vs "
                          "gold: FAIL)",
                    "zh": "false-ready：服务能启动并返回 200，但输出错误（服务端模型对比金标准：FAIL）"},
    "task_verdict": {"en": "task accuracy vs gold: {status}{detail}", "zh": "任务精度对比金标准：{status}{detail}"},
    "task_detail_1": {"en": " ({first})", "zh": "（{first}）"},
    "task_detail_2": {"en": " ({first}; {second})", "zh": "（{first}；{second}）"},
}


REPORT_TEXT = {
    "en": {
        "support": "{arch} is {support} in {registry}: {strategy}.",
        "started": "{engine} started in {seconds:.0f} s and logged {logged:,} KV-cache tokens, {same}.",
        "same": "exactly as predicted", "predicted": "predicted {predicted:,}",
        "served": "The served model against the fp32 gold: top-k KL {kl:.2e}{floor}, same top-1 {top1:.1%}{div}.",
        "floor": " (in-process {label} floor: {kl:.2e})",
        "div": "; greedy output identical on {exact}/{n} prompts, {ties} near-tie and {genuine} genuine divergences",
        "inproc": "In-process {label}: final hidden-state error {rel:.2%} (rel. L2), KL {kl:.2e}{loc}.",
        "loc": "; the first layer out of line is {name}", "noloc": "; no layer's own error exceeds {basis}",
        "floor_basis": "its noise floor",
        "stops": "Answers end early in {early} and late in {late} of {n} prompts ({where}): the EOS list or stop handling differs from the reference's.",
        "skipped": "{n} prompt(s) did not fit the served or model context and were skipped: {ids}.",
        "quant": "Weight-only {quant}: KL {kl:.2e}{ratio}{where} ({status}; informational, not part of the verdict).",
        "ratio": ", {ratio:.1f}x its {floor} floor", "where": ", first out of line at {name}",
        "in_part": "{name} (its {part})", "parts": {},
        "tput": "Throughput with {n} requests at once: {tps:.1f} output tok/s, TTFT p50 {ttft:.0f} ms, TPOT p50 {tpot:.1f} ms.",
    },
    "zh": {
        "support": "{arch} 在 {registry} 中为 {support}：{strategy}。",
        "started": "{engine} 启动耗时 {seconds:.0f} s，日志记录 KV Cache {logged:,} tokens，{same}。",
        "same": "与预测完全一致", "predicted": "预测值为 {predicted:,}",
        "served": "服务端模型对比 fp32 Gold Reference：top-k KL {kl:.2e}{floor}，top-1 一致率 {top1:.1%}{div}。",
        "floor": "（本地 {label} 噪声基线：{kl:.2e}）",
        "div": "；贪心输出 {exact}/{n} 条完全一致，{ties} 处平局分叉、{genuine} 处真实分叉",
        "inproc": "本地 {label}：末层 hidden state 相对 L2 误差 {rel:.2%}，KL {kl:.2e}{loc}。",
        "loc": "；首个本层误差超标的是 {name}", "noloc": "；没有任何一层的本层误差超过{basis}",
        "floor_basis": "噪声基线",
        "stops": "{n} 条提示词中有 {early} 条提前结束、{late} 条延后结束（{where}）：EOS 列表或停止处理与参考不同。",
        "skipped": "{n} 条提示词超出服务或模型的上下文长度而被跳过：{ids}。",
        "quant": "int8 权重量化 {quant}：KL {kl:.2e}{ratio}{where}（{status}；仅供参考，不计入结论）。",
        "ratio": "，为 {floor} 基线的 {ratio:.1f} 倍", "where": "，首个超标层为 {name}",
        "in_part": "{name}（其{part}）",
        "parts": PARTS["zh"],  # a layer's parts, as the accuracy room names them
        "tput": "{n} 个请求同时发送时吞吐 {tps:.1f} 输出 tok/s，TTFT p50 {ttft:.0f} ms，TPOT p50 {tpot:.1f} ms。",
    },
}


REPORT_NOTES = {
    "en": {
        "engine_failed": "Stage serve failed{blocked}: the engine did not start (its cause and log are in the summary).",
        "blocked": "; {names} not run",
        "stage": "Stage {name} {status}: {reason}.", "interrupted": "interrupted by the user",
        "plan": "Plan: {warning}.",
        "feature": "Feature '{name}' is {status}: {evidence}",
        "section": "Endpoint accuracy '{name}' {status}: {reason}.",
        "tokens": "Prompt {id}: the server tokenizes it into {server} tokens, we into {ours}.",
        "open": "The server listened on all interfaces (0.0.0.0): reachable from other machines.",
        "remote_code": "--trust-remote-code was set: the model's own Python code ran.",
        "fixed_length": "Bench {name}/{label}: {n} requests ignored the fixed output length.",
        "bench_failed": "Bench {name}/{label}: {n} requests failed: {errors}.",
        "disagree": "Bench {name}/{label}: the client and vLLM's /metrics disagree on mean {metric} (client {client:.2f} ms, server {server:.2f} ms, beyond the measured round trip).",
        "unreadable": "{name}: unreadable ({why}).",
    },
    "zh": {
        "engine_failed": "serve 阶段失败{blocked}：引擎未能启动（原因与日志见摘要）。",
        "blocked": "；{names} 未运行",
        "stage": "{name} 阶段{status}：{reason}。", "interrupted": "被用户中断",
        "statuses": {"failed": "失败", "not run": "未运行", "interrupted": "已中断", "skipped": "已跳过",
                     "not applicable": "不适用", "done": "完成", "pending": "待运行", "running": "运行中"},
        "plan": "部署计划：{warning}。",
        "feature": "特性“{name}”为 {status}：{evidence}",
        "section": "服务端精度“{name}”{status}：{reason}。",
        "sections": {"tokenization": "分词", "teacher_forced": "teacher-forced", "perplexity": "困惑度", "greedy": "贪心解码"},
        "tokens": "提示词 {id}：服务端分词为 {server} 个 token，本地为 {ours} 个。",
        "open": "服务监听在所有网卡 (0.0.0.0)：其他机器可以访问。",
        "remote_code": "设置了 --trust-remote-code：模型自带的 Python 代码被执行。",
        "fixed_length": "压测 {name}/{label}：{n} 个请求未遵守固定输出长度。",
        "bench_failed": "压测 {name}/{label}：{n} 个请求失败：{errors}。",
        "disagree": "压测 {name}/{label}：客户端与 vLLM /metrics 的平均 {metric} 不一致（客户端 {client:.2f} ms，服务端 {server:.2f} ms，超出实测往返时间）。",
        "unreadable": "{name}：无法读取（{why}）。",
    },
}


PAGE_LABELS = {
    "en": {"accuracy": "Accuracy vs noise floor", "throughput": "Output throughput", "latency": "TTFT / TPOT p50",
           "memory": "Peak server memory", "features": "Features supported", "issues": "Failed and warned checks",
           "index": "Sections", "rows": "rows", "in_process": "in-process", "served": "served model",
           "probe": "probe"},
    "zh": {"accuracy": "精度（相对噪声基线）", "throughput": "输出吞吐", "latency": "TTFT / TPOT p50",
           "memory": "服务端内存峰值", "features": "支持的特性", "issues": "未通过与告警的检查",
           "index": "目录", "rows": "行", "in_process": "进程内", "served": "服务端模型", "probe": "探测"},
}


FLOOR_LABEL = {"en": "{label} (noise floor)", "zh": "{label}（噪声基线）"}


# The first screen (report/first_screen.py): title, verdict, what was verified and what only planned,
# the key figures and the checks that decided the verdict; the deployment modes it names.
FIRST_SCREEN_MODES = {"en": {"eager": "eager", "graph": "graph-mode", "multi_node": "multi-node"},
                      "zh": {"eager": "eager", "graph": "图模式", "multi_node": "多节点"}}
FIRST_SCREEN = {
    "en": {
        "title": "{model} on {platform}: adaptation report",
        "facts": "{hardware} · {date} · llm-adapt {version}",
        "no_date": "date not recorded", "no_version": "(version not recorded)",
        "cores": "{cores} cores", "verdict": "Verdict", "why": "Why",
        "verified": "Verified in this run", "planned": "Planned, not run",
        "served_here": "served by {engine} in {mode} mode, started by this run on this host",
        "served_dummy": "served by {engine} in {mode} mode on this host, with random (dummy) weights",
        "served_external": "the server at {url}, started outside this run",
        "served_none": "no server was judged",
        "in_process": "in-process {label} against the {reference} gold",
        "planned_other": "the {platform} commands (this host has no {platform})",
        "planned_modes": "the plan's {modes} command (§{section})",
        "planned_modes_n": "the plan's {modes} commands (§{section})",
        "nothing_planned": "nothing: every planned command of this platform ran",
        "why_pass": "every judged check passed: {parts}",
        "core_ok": "chat completion and streaming work",
        "figures": "Key figures", "figure": "figure", "value": "value", "from": "measured by",
        "served_accuracy": "served accuracy", "in_process_accuracy": "in-process accuracy",
        "kl_ratio": "KL {ratio:.2f}x its noise floor",
        "kl_abs": "KL {kl:.2e} (no noise floor)",
        "from_served": "endpoint accuracy: {prompts} prompts against the {reference} gold, floor {floor} (§{section})",
        "from_in_process": "in-process compare: {prompts} prompts against the {reference} gold (§{section})",
        "single_stream": "single-stream TTFT / TPOT (p50)",
        "from_latency": "latency run: {n} requests one at a time, {inp} in / {out} out tokens (§{section})",
        "throughput": "output throughput at concurrency {c}",
        "from_throughput": "throughput run: {n} requests sent at once, {inp} in / {out} out tokens (§{section})",
        "client_bound": "; client-bound, so a lower bound",
        "memory": "peak server memory", "from_memory": "server RSS sampled during the benchmarks (§{section})",
        "deciding": "Checks that decided the verdict", "where": "where", "check": "check",
        "threshold": "threshold", "status": "status",
        "served": "served model", "probes": "probes", "in_process_at": "in-process {label}",
        "works": "works", "broken": "not working",
        "informational": "Informational: not part of the verdict",
        "informational_row": "{label}: {status}", "and": ", ", "sep": "; ",
    },
    "zh": {
        "title": "{model} 在 {platform} 上的适配报告",
        "facts": "{hardware} · {date} · llm-adapt {version}",
        "no_date": "日期未记录", "no_version": "（版本未记录）",
        "cores": "{cores} 核", "verdict": "结论", "why": "原因",
        "verified": "本次运行已验证", "planned": "仅规划、未运行",
        "served_here": "由本次运行在本机以 {mode} 模式启动的 {engine} 提供服务",
        "served_dummy": "由本机以 {mode} 模式运行的 {engine} 以随机（dummy）权重提供服务",
        "served_external": "位于 {url} 的服务（非本次运行启动）",
        "served_none": "未评判任何服务",
        "in_process": "进程内 {label} 对比 {reference} 金标准",
        "planned_other": "{platform} 的部署命令（本机没有 {platform}）",
        "planned_modes": "部署计划中的 {modes} 命令（§{section}）",
        "planned_modes_n": "部署计划中的 {modes} 命令（§{section}）",
        "nothing_planned": "无：本平台的全部部署命令均已运行",
        "why_pass": "所有参与评判的检查均通过：{parts}",
        "core_ok": "对话补全与流式输出可用",
        "figures": "关键指标", "figure": "指标", "value": "数值", "from": "测量来源",
        "served_accuracy": "服务端精度", "in_process_accuracy": "进程内精度",
        "kl_ratio": "KL 为噪声基线的 {ratio:.2f} 倍",
        "kl_abs": "KL {kl:.2e}（无噪声基线）",
        "from_served": "服务端精度：{prompts} 条提示词对比 {reference} 金标准，基线 {floor}（§{section}）",
        "from_in_process": "进程内对比：{prompts} 条提示词对比 {reference} 金标准（§{section}）",
        "single_stream": "单路 TTFT / TPOT（p50）",
        "from_latency": "时延测试：{n} 个请求逐个发送，输入 {inp} / 输出 {out} tokens（§{section}）",
        "throughput": "并发 {c} 时的输出吞吐",
        "from_throughput": "吞吐测试：{n} 个请求同时发送，输入 {inp} / 输出 {out} tokens（§{section}）",
        "client_bound": "；受压测客户端限制，为下限值",
        "memory": "服务端内存峰值", "from_memory": "压测期间采样的服务端 RSS（§{section}）",
        "deciding": "决定结论的检查", "where": "位置", "check": "检查",
        "threshold": "阈值", "status": "状态",
        "served": "服务端模型", "probes": "功能探测", "in_process_at": "进程内 {label}",
        "works": "可用", "broken": "不可用",
        "informational": "仅供参考：不计入结论",
        "informational_row": "{label}：{status}", "and": "、", "sep": "；",
    },
}
