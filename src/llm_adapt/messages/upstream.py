"""The upstream room's words: the FAQ entries the export writes (each a phenomenon, a cause and a solution,
from the model's caveats and the plan's warnings), the reasons behind the three tuning scenarios, and the
parameter table under each exported command (meaning, value range, unit). Written as vLLM-Ascend's own
documents write them: no word of this tool."""

from __future__ import annotations

REASONS: dict[str, dict[str, str]] = {
    # 10 FAQ: phenomenon / solution per caveat or plan warning (upstream/faq.py); the cause is the caveat's text
    "faq_softcap_seen": {"en": "The service starts and answers, but the answers drift from the model's reference "
                               "output (wrong or degraded text, higher perplexity).",
                         "zh": "服务能启动并回答，但回答偏离模型的参考输出（文本错误或质量下降，困惑度升高）。"},
    "faq_softcap_fix": {"en": "Compare the served log-probabilities with the reference implementation on a few prompts "
                              "before serving; if they drift, serve on a backend that applies soft-capping, or "
                              "wait for a vLLM-Ascend attention kernel that takes it.",
                        "zh": "上线前在少量提示词上对比服务端与参考实现的 log-prob；若有偏差，请换用支持 soft-capping "
                              "的后端，或等待 vLLM-Ascend 的注意力内核支持该参数。"},
    "faq_fp16_seen": {"en": "Outputs turn to NaN or repeated tokens in float16.",
                      "zh": "以 float16 运行时输出出现 NaN 或重复 token。"},
    "faq_fp16_fix": {"en": "Serve in bfloat16 (`--dtype bfloat16`), whose range holds the capped logits.",
                     "zh": "改用 bfloat16（`--dtype bfloat16`），其数值范围可容纳截断后的 logits。"},
    "faq_head_dim_seen": {"en": "The service fails at start-up or at the first request with an attention-kernel error "
                                "about the head size.",
                          "zh": "服务启动或第一个请求时报注意力内核的 head size 错误。"},
    "faq_head_dim_fix": {"en": "Check that the attention backend of your vLLM-Ascend version supports head_dim "
                               "{head_dim}; otherwise run eager with `--enforce-eager` to see the kernel's own error.",
                         "zh": "确认所用 vLLM-Ascend 版本的注意力后端支持 head_dim {head_dim}；否则用 `--enforce-eager` "
                               "以 eager 方式运行，查看内核本身的报错。"},
    "faq_tp_seen": {"en": "vLLM refuses to start at some `--tensor-parallel-size` values.",
                    "zh": "部分 `--tensor-parallel-size` 取值下 vLLM 拒绝启动。"},
    "faq_tp_cause": {"en": "The model has {heads} attention heads and {kv} KV heads: vLLM splits the attention heads "
                           "evenly over the ranks, and the KV heads divide by the size or it by them.",
                     "zh": "该模型有 {heads} 个注意力头、{kv} 个 KV 头：vLLM 将注意力头平均分到各 rank，且 KV 头数须能被并行规模"
                           "整除，或并行规模能被 KV 头数整除。"},
    "faq_tp_fix": {"en": "Use one of these `--tensor-parallel-size` values: {sizes}; for more than {largest} NPUs, "
                         "add data parallelism rather than tensor parallelism.",
                   "zh": "`--tensor-parallel-size` 只能取以下值之一：{sizes}；超过 {largest} 张 NPU 时，请增加数据并行而非张量并行。"},
    "faq_kv_repl_seen": {"en": "At a larger tensor-parallel size the KV cache holds fewer tokens per NPU than expected.",
                         "zh": "张量并行规模增大后，每张 NPU 上的 KV cache 可容纳的 token 数少于预期。"},
    "faq_kv_repl_fix": {"en": "Keep `--tensor-parallel-size` at or below the {kv_heads} KV heads, or budget the "
                              "replicated KV heads' memory.",
                        "zh": "将 `--tensor-parallel-size` 保持在 KV 头数 {kv_heads} 以内，或为复制的 KV 头预留内存。"},
    "faq_numeric_seen": {"en": "The service starts and answers, but the answers differ from the model's reference "
                               "output.",
                         "zh": "服务能启动并回答，但回答与模型的参考输出不一致。"},
    "faq_numeric_fix": {"en": "Compare the served output with the reference implementation (transformers, float32) "
                              "on a few prompts, eager (`--enforce-eager`) and in graph mode, before serving.",
                        "zh": "上线前在少量提示词上，分别以 eager（`--enforce-eager`）与图模式，将服务输出与参考实现"
                              "（transformers，float32）对比。"},
    "faq_quant_fix": {"en": "Serve an unquantized or a W8A8 (msModelSlim) checkpoint, and compare its answers with the "
                            "unquantized model's.",
                      "zh": "改用未量化或 W8A8（msModelSlim）检查点，并将其回答与未量化模型的回答对比。"},
    "faq_slow_seen": {"en": "Throughput or time per output token is worse than for models of the same size.",
                      "zh": "吞吐或每个输出 token 的时间比同规模模型差。"},
    "faq_slow_fix": {"en": "Measure it with `vllm bench serve` (section 8) before sizing a deployment.",
                     "zh": "在确定部署规模前，先用 `vllm bench serve`（第 8 节）实测。"},
    # the FAQ entries' titles
    "faq_t_softcap": {"en": "Attention soft-capping", "zh": "注意力 soft-capping"},
    "faq_t_fp16": {"en": "Soft-capping in float16", "zh": "float16 下的 soft-capping"},
    "faq_t_head_dim": {"en": "head_dim {head_dim}", "zh": "head_dim {head_dim}"},
    "faq_t_kv_repl": {"en": "KV heads at a larger tensor-parallel size", "zh": "较大张量并行规模下的 KV 头"},
    "faq_t_numeric": {"en": "{operator}", "zh": "{operator}"},
    "faq_t_quant": {"en": "Quantized checkpoint", "zh": "量化检查点"},
    "faq_t_memory": {"en": "NPU memory", "zh": "NPU 内存"},
    "faq_t_headroom": {"en": "Memory headroom", "zh": "内存余量"},
    "faq_t_context": {"en": "Requests longer than the deployment's context", "zh": "超出部署上下文长度的请求"},
    "faq_context_seen": {"en": "A request whose prompt and answer together pass {mml} tokens is refused with a "
                               "maximum-context-length error.",
                         "zh": "提示词与回答合计超过 {mml} 个 token 的请求会被拒绝，报最大上下文长度错误。"},
    "faq_context_cause": {"en": "`--max-model-len` is {mml}, below the model's {positions} positions; the KV cache of "
                                "this deployment holds one sequence of at most {longest} tokens.",
                          "zh": "`--max-model-len` 为 {mml}，低于模型的 {positions} 个位置；本部署的 KV cache 最多容纳一条 "
                                "{longest} token 的序列。"},
    "faq_context_fix": {"en": "Raise `--max-model-len` up to {longest} on this deployment; for the model's full "
                              "{positions}, add NPUs (a larger `--tensor-parallel-size` splits the KV cache).",
                        "zh": "在本部署上可将 `--max-model-len` 提高到 {longest}；如需模型完整的 {positions} 个位置，请增加 "
                              "NPU（更大的 `--tensor-parallel-size` 会切分 KV cache）。"},
    "faq_t_dtype": {"en": "Overflow in float16", "zh": "float16 溢出"},
    "faq_dtype_seen": {"en": "Some answers turn to repeated or empty tokens, or the logits hold inf or NaN.",
                       "zh": "部分回答变为重复或空 token，或 logits 中出现 inf 或 NaN。"},
    "faq_dtype_cause": {"en": "The checkpoint is stored in {stored} and served in float16, whose largest finite value "
                              "is {top}: activations the model reaches beyond it overflow.",
                        "zh": "检查点以 {stored} 存储、以 float16 部署，而 float16 的最大有限值为 {top}：模型超出该值的激活会溢出。"},
    "faq_dtype_fix": {"en": "Serve with `--dtype bfloat16`, which keeps float32's range.",
                      "zh": "改用 `--dtype bfloat16` 部署，它保有 float32 的数值范围。"},
    "faq_t_tp": {"en": "Which tensor-parallel sizes this model takes", "zh": "该模型可用的张量并行规模"},
    "lm_cap_native": {"en": "vLLM's {arch}, which vLLM-Ascend serves (native); served in this run",
                      "zh": "vLLM 的 {arch}，由 vLLM-Ascend 部署（原生支持）；本次运行已部署"},
    "lm_cap_native_planned": {"en": "vLLM's {arch}, which vLLM-Ascend serves (native); to verify on an NPU",
                              "zh": "vLLM 的 {arch}，由 vLLM-Ascend 部署（原生支持）；待在 NPU 上验证"},
    "lm_cap_backend": {"en": "the Transformers backend runs {arch}; served in this run",
                       "zh": "由 Transformers 后端运行 {arch}；本次运行已部署"},
    "lm_cap_backend_planned": {"en": "the Transformers backend runs {arch}; to verify on an NPU",
                               "zh": "由 Transformers 后端运行 {arch}；待在 NPU 上验证"},
    "lm_cap_none": {"en": "none: {arch} is in neither vLLM's registry nor the Transformers backend's reach",
                    "zh": "无：{arch} 既不在 vLLM 的模型注册表中，也无法经 Transformers 后端运行"},
    "lm_tied": {"en": "tied to the embedding", "zh": "与 embedding 共享权重"},
    "lm_untied": {"en": "a matrix of its own", "zh": "为独立的权重矩阵"},
    "lm_req_embedding": {"en": "token embedding{scale}; the output head is {tied}",
                         "zh": "token embedding{scale}；输出头{tied}"},
    "lm_req_router": {"en": "{router}, top-{k} of {experts} experts, in {layers} layers",
                      "zh": "{router}，{experts} 个专家中选 top-{k}，共 {layers} 层"},
    "lm_req_experts": {"en": "{experts} experts, each {act}", "zh": "{experts} 个专家，每个为 {act}"},
    "lm_req_head": {"en": "output head, {tied}{softcap}", "zh": "输出头，{tied}{softcap}"},
    "lm_na": {"en": "N/A (the model has none)", "zh": "不适用（模型无此组件）"},
    "lm_gap_none": {"en": "none found: measured against the fp32 reference in this run",
                    "zh": "未发现：本次运行已对照 fp32 参考测量"},
    "lm_gap_none_planned": {"en": "none known from the config and the model's code; to verify on an NPU",
                            "zh": "据配置与模型代码未见差距；待在 NPU 上验证"},
    "lm_gap_located": {"en": "out of line against the fp32 reference at {place}",
                       "zh": "在 {place} 处与 fp32 参考偏离"},
    "lm_gap_layer": {"en": "{place} is out of line against the fp32 reference, not narrowed to one of its parts",
                     "zh": "{place} 与 fp32 参考偏离，未能定位到其中某一部分"},
    "lm_gap_unlocated": {"en": "not located: the run's accuracy is {status} with every measured layer in line",
                         "zh": "未定位：本次运行精度为 {status}，而每个已测层均在允许范围内"},
    "lm_plan_located": {"en": "fix the kernel there and measure again against the fp32 reference",
                        "zh": "修复该处算子后，再次对照 fp32 参考测量"},
    "lm_plan_native": {"en": "no code change: direct registration", "zh": "无需改代码：直接注册"},
    "lm_plan_port": {"en": "port the component to vLLM-Ascend", "zh": "将该组件移植到 vLLM-Ascend"},
    "lm_src_served": {"en": "captured inside the served engine ({dtype}), against the fp32 reference",
                      "zh": "在部署引擎内部采集（{dtype}），对照 fp32 参考"},
    "lm_src_in_process": {"en": "in process ({label}), each layer fed the fp32 reference's input",
                          "zh": "进程内（{label}），每层输入取自 fp32 参考"},
    "faq_t_custom_op": {"en": "A custom operator in the model's own code ({file})", "zh": "模型自带代码中的自定义算子（{file}）"},
    "faq_custom_op_cause": {"en": "The model's own code needs a kernel that vLLM-Ascend does not ship: {evidence}.",
                            "zh": "模型自带代码需要 vLLM-Ascend 未提供的算子：{evidence}。"},
    "faq_cuda_seen": {"en": "With `--trust-remote-code`, the model fails to load on the NPU: an ImportError of a "
                            "CUDA-only package, or a CUDA kernel that cannot run.",
                      "zh": "使用 `--trust-remote-code` 时模型在 NPU 上加载失败：导入仅支持 CUDA 的包报 ImportError，"
                            "或 CUDA 算子无法运行。"},
    "faq_cuda_fix": {"en": "Serve the architecture with vLLM's own implementation where it has one; otherwise port "
                           "the kernel as an Ascend custom operator (AscendC, registered through torch_npu) or write "
                           "it in plain torch, and check its accuracy against the float32 reference.",
                     "zh": "若 vLLM 自带该架构的实现，请使用之；否则请将该算子移植为 Ascend 自定义算子（AscendC，经 "
                           "torch_npu 注册），或以纯 torch 实现，并对照 float32 参考检查其精度。"},
    "faq_fallback_seen": {"en": "The model loads and answers, but slower than expected, or with outputs that differ "
                                "slightly from a GPU's.",
                          "zh": "模型可以加载并作答，但比预期慢，或输出与 GPU 上略有差异。"},
    "faq_fallback_fix": {"en": "Nothing blocks: on Ascend the code takes its fallback path. Measure its speed, and "
                               "write an Ascend custom operator only where the fallback is too slow.",
                         "zh": "不阻塞部署：在昇腾上代码走其回退路径。请测量其速度，仅在回退路径过慢时编写昇腾自定义算子。"},
    "faq_triton_seen": {"en": "The model fails at its first request while a Triton kernel compiles, or answers with "
                              "wrong figures.",
                        "zh": "模型在首个请求编译 Triton 算子时失败，或作答数值错误。"},
    "faq_triton_fix": {"en": "Run the kernel through triton-ascend on the device and check its output against the "
                             "float32 reference; where it does not compile or match, replace it with plain torch or "
                             "an Ascend custom operator.",
                       "zh": "请在设备上经 triton-ascend 运行该算子，并对照 float32 参考检查其输出；无法编译或结果不符时，"
                             "改用纯 torch 或昇腾自定义算子。"},
    "faq_t_kv": {"en": "KV cache capacity at max-model-len {mml}", "zh": "max-model-len {mml} 时的 KV cache 容量"},
    "faq_t_warning": {"en": "Deployment setting", "zh": "部署设置"},
    "faq_quant_seen": {"en": "The service refuses to load the checkpoint, or loads it and answers wrongly.",
                       "zh": "服务拒绝加载该检查点，或加载后回答错误。"},
    "faq_memory_seen": {"en": "The service fails to start with an out-of-memory error, or the KV cache holds fewer "
                              "sequences than section 5.1 states.",
                        "zh": "服务启动时报内存不足，或 KV cache 可容纳的序列数少于 5.1 节所述。"},
    "faq_memory_cause": {"en": "The plan assumes NPUs of {gib} GiB (an Atlas A2 card); a card with less memory holds "
                               "less KV cache at `--gpu-memory-utilization` {util}.",
                         "zh": "部署计划按每张 NPU {gib} GiB（Atlas A2 卡）计算；内存更小的卡在 "
                               "`--gpu-memory-utilization` {util} 下可容纳的 KV cache 更少。"},
    "faq_memory_fix": {"en": "On a smaller card, lower `--max-model-len` or `--max-num-seqs`, or use more NPUs "
                             "(`--tensor-parallel-size`).",
                       "zh": "在内存更小的卡上，请降低 `--max-model-len` 或 `--max-num-seqs`，或使用更多 NPU"
                             "（`--tensor-parallel-size`）。"},
    "faq_headroom_seen": {"en": "Out-of-memory during graph capture or under peak load, though the KV cache was "
                                "allocated at start-up.",
                          "zh": "KV cache 已在启动时分配，但图捕获期间或负载高峰时仍出现内存不足。"},
    "faq_headroom_cause": {"en": "`--gpu-memory-utilization` {util} gives vLLM {used} GiB of each {gib} GiB NPU; the "
                                 "remaining {free} GiB is all that is left for ACLGraph capture, HCCL buffers and "
                                 "other processes on the card.",
                           "zh": "`--gpu-memory-utilization` {util} 让 vLLM 使用每张 {gib} GiB NPU 中的 {used} GiB；"
                                 "ACLGraph 捕获、HCCL 缓冲区及卡上其他进程只剩 {free} GiB。"},
    "faq_headroom_fix": {"en": "Lower `--gpu-memory-utilization` (for example to 0.85), or start with `--enforce-eager` "
                               "to skip graph capture.",
                         "zh": "降低 `--gpu-memory-utilization`（例如 0.85），或加 `--enforce-eager` 跳过图捕获。"},
    "faq_kv_seen": {"en": "Under load, requests wait in the queue and time to first token grows once more than {fit} "
                          "requests run at full length.",
                    "zh": "负载较高时，一旦超过 {fit} 个满长度请求同时运行，请求便会排队，首 token 时延随之增加。"},
    "faq_kv_cause": {"en": "At `--max-model-len` {mml} the KV cache ({blocks} blocks of {block} tokens, {per_token} "
                           "bytes per token per NPU) holds {fit} sequences of full length, while `--max-num-seqs` is "
                           "{seqs}.",
                     "zh": "在 `--max-model-len` {mml} 下，KV cache（{blocks} 个块，每块 {block} 个 token，每 token "
                           "每张 NPU {per_token} 字节）可容纳 {fit} 条满长度序列，而 `--max-num-seqs` 为 {seqs}。"},
    "faq_kv_fix": {"en": "Shorter requests share the cache: most workloads fit. For many long requests, lower "
                         "`--max-model-len` or add NPUs; section 9.1 trades length for concurrency.",
                   "zh": "较短的请求共享缓存，大多数负载可以容纳。若长请求很多，请降低 `--max-model-len` 或增加 NPU；"
                         "9.1 节给出了长度与并发之间的取舍。"},
    "faq_seqs_seen": {"en": "Under load, requests beyond {seqs} at once wait in the queue and their time to first "
                            "token grows, though the KV cache has room for more.",
                      "zh": "负载较高时，超过 {seqs} 个的并发请求会排队，首 token 时延随之增加，尽管 KV cache 仍有余量。"},
    "faq_seqs_cause": {"en": "`--max-num-seqs` {seqs} caps the sequences of one step; at `--max-model-len` {mml} the KV "
                             "cache ({blocks} blocks of {block} tokens, {per_token} bytes per token per NPU) would hold "
                             "{fit}.",
                       "zh": "`--max-num-seqs` {seqs} 限制了每步的序列数；在 `--max-model-len` {mml} 下 KV cache（{blocks} "
                             "个块，每块 {block} 个 token，每 token 每张 NPU {per_token} 字节）可容纳 {fit} 条。"},
    "faq_seqs_fix": {"en": "For more concurrency, raise `--max-num-seqs` up to {fit}, at the cost of time per output "
                           "token.",
                     "zh": "如需更高并发，可将 `--max-num-seqs` 提高到 {fit} 以内，代价是每个输出 token 的时间变长。"},
    "faq_warning_seen": {"en": "The deployment may not behave as section 5.1 describes.",
                         "zh": "部署行为可能与 5.1 节的描述不一致。"},
    "faq_warning_fix": {"en": "Review the setting the cause names before deploying.",
                        "zh": "部署前请检查原因中提到的设置。"},
    # the tutorial's words for what the run's evidence says in the tool's own
    # a differential run's check of a deployment feature (upstream/setting_checks.py)
    "ev_setting_checked": {"en": "checked on {platform} {setting} against the fp32 gold: {status} ({figures}; "
                                 "the run's {dir})",
                           "zh": "已在 {platform} 上{setting}对照 fp32 金标准检查：{status}（{figures}；见运行目录 {dir}）"},
    "ev_setting_refused": {"en": "tried on {platform} {setting}: the engine refused it ({error}; the run's {dir})",
                           "zh": "已在 {platform} 上{setting}尝试：引擎拒绝运行（「{error}」；见运行目录 {dir}）"},
    "ev_at_setting": {"en": "at {setting}", "zh": "以 {setting} "},
    "ev_in_graph_mode": {"en": "in graph mode", "zh": "以图模式"},
    "ev_at_setting_graph": {"en": "at {setting} in graph mode", "zh": "以 {setting} 图模式"},
    "ev_with_setting_check": {"en": "{check}. On the NPU: {evidence}", "zh": "{check}。NPU 上：{evidence}"},
    "tut_graph_unverified": {"en": "not verified on an NPU yet: start the command of section 5.1 (graph mode is the "
                                   "default) and repeat section 6",
                             "zh": "尚未在 NPU 上验证：按 5.1 节的命令启动（默认即图模式）并重复第 6 节"},
    "tut_native": {"en": "implemented natively by vLLM {version} ({source})",
                   "zh": "由 vLLM {version} 原生实现（{source}）"},
    "tut_backend": {"en": "served through vLLM {version}'s Transformers backend (`--model-impl transformers`)",
                    "zh": "通过 vLLM {version} 的 Transformers 后端运行（`--model-impl transformers`）"},
    "tut_unsupported": {"en": "not implemented by vLLM {version}: it needs a port before it can be served",
                        "zh": "vLLM {version} 未实现该模型：需先移植才能部署"},
    # 9.1: why each scenario's values (upstream/scenarios.py)
    "sc_long_len": {"en": "the longest context the KV cache holds, up to the model's {positions:,} positions",
                    "zh": "KV cache 能容纳的最长上下文，最多为模型的 {positions:,} 个位置"},
    "sc_long_seqs": {"en": "{seqs} sequences of that length fit the KV cache at once (capped at {cap}, so each long "
                           "request keeps its share of the cache)",
                     "zh": "KV cache 可同时容纳 {seqs} 条该长度的序列（上限 {cap}，使每个长请求保有其缓存份额）"},
    "sc_long_batched": {"en": "long prompts are prefilled in chunks of this size, so one prompt does not stall every "
                              "decode step for its whole length",
                        "zh": "长提示词按此大小分块预填充，避免单个提示词在整个长度内阻塞所有解码步"},
    "sc_latency_len": {"en": "interactive requests are short; {mml:,} tokens leaves the KV cache room for every "
                             "sequence",
                       "zh": "交互式请求较短；{mml:,} 个 token 使 KV cache 能为每条序列留出空间"},
    "sc_latency_seqs": {"en": "few sequences per decode step keep the time per output token near its single-stream "
                              "value",
                        "zh": "每个解码步只处理少量序列，使每个输出 token 的时间接近单路值"},
    "sc_latency_batched": {"en": "smaller prefill chunks give better inter-token latency: fewer prefill tokens share a "
                                 "step with the decodes (vLLM's tuning guide, chunked prefill)",
                           "zh": "较小的预填充分块带来更好的 token 间时延：与解码同一步处理的预填充 token 更少"
                                 "（vLLM 调优指南，chunked prefill）"},
    "sc_throughput_len": {"en": "short requests: {mml:,} tokens lets the KV cache hold {fit} sequences at once",
                          "zh": "短请求：{mml:,} 个 token 使 KV cache 可同时容纳 {fit} 条序列"},
    "sc_throughput_seqs": {"en": "as many sequences as fit the KV cache at full length, up to vLLM's default of {cap}",
                           "zh": "满长度下 KV cache 能容纳的最多序列，最多为 vLLM 默认的 {cap}"},
    "sc_throughput_batched": {"en": "above 8,192 tokens per step for throughput, as vLLM's tuning guide recommends "
                                    "(chunked prefill)",
                              "zh": "按 vLLM 调优指南的建议（chunked prefill），吞吐场景每步超过 8,192 个 token"},
}

# The parameter table under each exported command: per option or variable, (meaning, value range, unit) in each
# language. A range may name {max_positions}, {heads} or {last}; "-" where a column does not apply.
PARAMETERS: dict[str, dict[str, tuple[str, str, str]]] = {
    # vllm serve (vLLM v0.23.0's options; vLLM's `vllm serve --help`)
    "MODEL": {"en": ("the model to serve: a hub id (downloaded into the model cache on first start) or a local "
                     "directory", "ORG/NAME or a path", "-"),
              "zh": ("要服务的模型：模型 ID（首次启动时下载到模型缓存）或本地目录", "ORG/NAME 或路径", "-")},
    "--served-model-name": {"en": ("the model name clients send in `model`", "any name", "-"),
                            "zh": ("客户端在 `model` 字段中发送的模型名", "任意名称", "-")},
    "--dtype": {"en": ("data type of the weights and activations", "auto, half, float16, bfloat16, float, float32", "-"),
                "zh": ("权重与激活的数据类型", "auto、half、float16、bfloat16、float、float32", "-")},
    "--max-model-len": {"en": ("longest sequence one request may hold, prompt and output together",
                               "1 to {max_positions} (the model's max_position_embeddings)", "tokens"),
                        "zh": ("单个请求（提示词与输出合计）的最大长度", "1 至 {max_positions}（模型的 max_position_embeddings）",
                               "token")},
    "--max-num-seqs": {"en": ("most sequences scheduled in one step (requests served at once)", "1 or more", "sequences"),
                       "zh": ("每个调度步最多处理的序列数（同时服务的请求数）", "≥ 1", "条序列")},
    "--max-num-batched-tokens": {"en": ("most tokens processed in one scheduler step (the prefill chunk)",
                                        "at least --max-num-seqs", "tokens"),
                                 "zh": ("每个调度步最多处理的 token 数（预填充分块大小）", "不小于 --max-num-seqs", "token")},
    "--gpu-memory-utilization": {"en": ("share of each NPU's memory vLLM uses for weights, activations and KV cache",
                                        "greater than 0, at most 1", "fraction of device memory"),
                                 "zh": ("vLLM 在每张 NPU 上用于权重、激活与 KV cache 的内存比例", "大于 0，不超过 1",
                                        "设备内存的比例")},
    "--tensor-parallel-size": {"en": ("NPUs one model replica is split across", "a divisor of the {heads} attention "
                                      "heads, at most the NPUs of one node", "NPUs"),
                               "zh": ("一个模型副本切分到的 NPU 数", "{heads} 个注意力头的约数，不超过单节点的 NPU 数",
                                      "张 NPU")},
    "--pipeline-parallel-size": {"en": ("stages the layers are split into, one per node", "1 to the number of layers",
                                        "stages"),
                                 "zh": ("层被切分成的流水线阶段数，每个节点一段", "1 至层数", "段")},
    "--distributed-executor-backend": {"en": ("how vLLM starts its workers", "mp, ray, uni, external_launcher", "-"),
                                       "zh": ("vLLM 启动 worker 的方式", "mp、ray、uni、external_launcher", "-")},
    "--kv-cache-dtype": {"en": ("data type of the KV cache", "auto, fp8, fp8_e4m3, fp8_e5m2", "-"),
                         "zh": ("KV cache 的数据类型", "auto、fp8、fp8_e4m3、fp8_e5m2", "-")},
    "--trust-remote-code": {"en": ("run the Python code the checkpoint ships", "flag (on when given)", "-"),
                            "zh": ("运行检查点自带的 Python 代码", "开关（给出即开启）", "-")},
    "--model-impl": {"en": ("which implementation serves the model", "auto, vllm, transformers", "-"),
                     "zh": ("用哪种实现运行模型", "auto、vllm、transformers", "-")},
    "--quantization": {"en": ("how the checkpoint's weights are quantized", "ascend (msModelSlim) or a method vLLM "
                              "names", "-"),
                       "zh": ("检查点权重的量化方式", "ascend（msModelSlim）或 vLLM 支持的方法名", "-")},
    "--enable-auto-tool-choice": {"en": ("let the model call tools when a request sets tool_choice auto",
                                         "flag (on when given)", "-"),
                                  "zh": ("请求设置 tool_choice 为 auto 时允许模型调用工具", "开关（给出即开启）", "-")},
    "--tool-call-parser": {"en": ("parser of the model's tool-call format", "a parser name vLLM registers", "-"),
                           "zh": ("模型工具调用格式的解析器", "vLLM 注册的解析器名", "-")},
    "--host": {"en": ("address the server listens on", "an IP address: 127.0.0.1 for this host only, 0.0.0.0 for all",
                      "-"),
               "zh": ("服务监听的地址", "IP 地址：127.0.0.1 仅本机，0.0.0.0 所有网卡", "-")},
    "--port": {"en": ("TCP port of the OpenAI-compatible API", "1 to 65535", "port number"),
               "zh": ("OpenAI 兼容接口的 TCP 端口", "1 至 65535", "端口号")},
    "--enforce-eager": {"en": ("turn graph capture (ACLGraph) off: every step runs eagerly", "flag (on when given)",
                               "-"),
                        "zh": ("关闭图捕获（ACLGraph），每一步都以 eager 方式执行", "开关（给出即开启）", "-")},
    "--compilation-config": {"en": ("graph-capture settings as JSON", "a JSON object, e.g. {\"cudagraph_mode\": "
                                    "\"FULL_DECODE_ONLY\"}", "-"),
                             "zh": ("图捕获设置（JSON）", "JSON 对象，例如 {\"cudagraph_mode\": \"FULL_DECODE_ONLY\"}", "-")},
    "--enable-expert-parallel": {"en": ("spread a MoE model's experts across the NPUs", "flag (on when given)", "-"),
                                 "zh": ("把 MoE 模型的专家分布到各 NPU", "开关（给出即开启）", "-")},
    # the NPU's environment variables (their meaning is the plan's own note: platforms/npu.py)
    "ASCEND_RT_VISIBLE_DEVICES": {"en": ("", "comma-separated ids of this node's NPUs, from 0", "NPU ids"),
                                  "zh": ("", "逗号分隔的本节点 NPU 编号，从 0 开始", "NPU 编号")},
    "PYTORCH_NPU_ALLOC_CONF": {"en": ("", "expandable_segments:True or expandable_segments:False", "-"),
                               "zh": ("", "expandable_segments:True 或 expandable_segments:False", "-")},
    "TASK_QUEUE_ENABLE": {"en": ("", "0 (off), 1 or 2", "level"), "zh": ("", "0（关闭）、1 或 2", "级别")},
    "OMP_PROC_BIND": {"en": ("", "true or false", "-"), "zh": ("", "true 或 false", "-")},
    "OMP_NUM_THREADS": {"en": ("", "1 or more", "threads"), "zh": ("", "≥ 1", "线程")},
    "HCCL_BUFFSIZE": {"en": ("", "1 or more", "MB"), "zh": ("", "≥ 1", "MB")},
    "HCCL_OP_EXPANSION_MODE": {"en": ("", "AI_CPU, AIV or HOST", "-"), "zh": ("", "AI_CPU、AIV 或 HOST", "-")},
    "HCCL_IF_IP": {"en": ("", "this node's IP address", "-"), "zh": ("", "本节点的 IP 地址", "-")},
    "HCCL_SOCKET_IFNAME": {"en": ("", "a network interface name", "-"), "zh": ("", "网卡名", "-")},
    "GLOO_SOCKET_IFNAME": {"en": ("", "a network interface name", "-"), "zh": ("", "网卡名", "-")},
    "TP_SOCKET_IFNAME": {"en": ("", "a network interface name", "-"), "zh": ("", "网卡名", "-")},
    "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES": {"en": ("", "1", "-"), "zh": ("", "1", "-")},
    # docker run (Docker's `docker run --help`)
    "IMAGE": {"en": ("the vLLM-Ascend image of your hardware series", "an image tag of quay.io/ascend/vllm-ascend",
                     "-"),
              "zh": ("与硬件系列对应的 vLLM-Ascend 镜像", "quay.io/ascend/vllm-ascend 的镜像标签", "-")},
    "--rm": {"en": ("remove the container when it exits", "flag", "-"), "zh": ("容器退出后删除", "开关", "-")},
    "--name": {"en": ("the container's name", "any name", "-"), "zh": ("容器名", "任意名称", "-")},
    "--shm-size": {"en": ("shared memory of the container (worker processes exchange tensors through it)",
                          "a size such as 1g or 16g", "bytes (k, m, g suffixes)"),
                   "zh": ("容器的共享内存（worker 进程通过它交换张量）", "大小，例如 1g 或 16g", "字节（可用 k、m、g 后缀）")},
    "--net": {"en": ("the container shares the host's network: the server's --port is reachable on the host as it "
                     "is, with no -p mapping (multi-node HCCL needs the host network too)", "host", "-"),
              "zh": ("容器共享宿主机网络：服务的 --port 在宿主机上直接可达，无需 -p 映射（多节点 HCCL 也需要宿主机网络）",
                     "host", "-")},
    "--device": {"en": ("an NPU device (/dev/davinciN, one per NPU used) or a driver device "
                        "(davinci_manager, devmm_svm, hisi_hdc) passed into the container",
                        "/dev/davinci0 to /dev/davinci{last}, and the three driver devices", "-"),
                 "zh": ("传入容器的 NPU 设备（/dev/davinciN，每张所用 NPU 一个）或驱动设备"
                        "（davinci_manager、devmm_svm、hisi_hdc）", "/dev/davinci0 至 /dev/davinci{last}，以及三个驱动设备",
                        "-")},
    "-v": {"en": ("a host path mounted into the container: the driver, its tools and version files, and the model "
                  "cache (/root/.cache), so weights downloaded once are kept", "HOST_PATH:CONTAINER_PATH", "-"),
           "zh": ("挂载进容器的宿主机路径：驱动、驱动工具与版本文件，以及模型缓存（/root/.cache），下载一次的权重得以保留",
                  "宿主机路径:容器内路径", "-")},
    "-it": {"en": ("an interactive terminal in the container", "flag", "-"), "zh": ("在容器中打开交互式终端", "开关", "-")},
    # curl (curl's manual)
    "-H": {"en": ("a request header: the body is JSON", "Content-Type: application/json", "-"),
           "zh": ("请求头：请求体为 JSON", "Content-Type: application/json", "-")},
    "-d": {"en": ("the request body: `model` is the --served-model-name, `messages` the conversation, `temperature` 0 "
                  "picks the most likely token, `max_tokens` caps the answer",
                  "a JSON object of the OpenAI chat-completions API", "max_tokens in tokens"),
           "zh": ("请求体：`model` 为 --served-model-name，`messages` 为对话，`temperature` 为 0 时取概率最高的 token，"
                  "`max_tokens` 限制回答长度", "OpenAI chat-completions 接口的 JSON 对象", "max_tokens 以 token 计")},
    # lm_eval (lm-evaluation-harness's `lm_eval --help`)
    "--model": {"en": ("the harness's model type: local-completions sends requests to an OpenAI-compatible "
                       "/v1/completions endpoint", "local-completions, local-chat-completions, ...", "-"),
                "zh": ("评测框架的模型类型：local-completions 向 OpenAI 兼容的 /v1/completions 接口发送请求",
                       "local-completions、local-chat-completions 等", "-")},
    "--model_args": {"en": ("`model`: the --served-model-name; `tokenizer`: the hub id whose tokenizer the harness "
                            "loads; `base_url`: the server's completions URL; `tokenized_requests=False` sends text",
                            "comma-separated key=value pairs", "-"),
                     "zh": ("`model`：--served-model-name；`tokenizer`：评测框架加载其分词器的模型 ID；`base_url`：服务的 "
                            "completions 地址；`tokenized_requests=False` 发送文本", "逗号分隔的 key=value", "-")},
    "--tasks": {"en": ("the evaluation tasks", "task names the harness knows, comma-separated (gsm8k, mmlu, ...)", "-"),
                "zh": ("评测任务", "评测框架已知的任务名，逗号分隔（gsm8k、mmlu 等）", "-")},
    "--num_fewshot": {"en": ("examples placed before each question", "0 or more", "examples"),
                      "zh": ("每道题前放置的示例数", "≥ 0", "个示例")},
    "--output_path": {"en": ("where the results JSON is written", "a directory", "-"),
                      "zh": ("结果 JSON 的写入位置", "目录", "-")},
    # vllm bench serve (vLLM v0.23.0's `vllm bench serve --help`)
    "--backend": {"en": ("the API the benchmark sends to", "openai (completions), openai-chat, vllm, ...", "-"),
                  "zh": ("压测请求发送到的接口类型", "openai（completions）、openai-chat、vllm 等", "-")},
    "--base-url": {"en": ("the server's address", "http://HOST:PORT", "-"), "zh": ("服务地址", "http://HOST:PORT", "-")},
    "--endpoint": {"en": ("the API path", "/v1/completions", "-"), "zh": ("接口路径", "/v1/completions", "-")},
    "--model@bench": {"en": ("the hub id whose tokenizer builds the prompts", "a hub id or local path", "-"),
                      "zh": ("用于构造提示词的分词器所属模型 ID", "模型 ID 或本地路径", "-")},
    "--served-model-name@bench": {"en": ("the name sent in `model`: the server's --served-model-name", "any name", "-"),
                                  "zh": ("`model` 字段发送的名称：即服务端的 --served-model-name", "任意名称", "-")},
    "--dataset-name": {"en": ("where prompts come from: random builds them from random tokens", "random, sharegpt, ...",
                              "-"),
                       "zh": ("提示词来源：random 由随机 token 构造", "random、sharegpt 等", "-")},
    "--random-input-len": {"en": ("prompt length of each request", "1 or more", "tokens"),
                           "zh": ("每个请求的提示词长度", "≥ 1", "token")},
    "--random-output-len": {"en": ("output length of each request", "1 or more", "tokens"),
                            "zh": ("每个请求的输出长度", "≥ 1", "token")},
    "--num-prompts": {"en": ("requests sent in all", "1 or more", "requests"), "zh": ("发送的请求总数", "≥ 1", "个请求")},
    "--max-concurrency": {"en": ("most requests in flight at once", "1 or more", "requests"),
                          "zh": ("同时在途的最多请求数", "≥ 1", "个请求")},
    "--ignore-eos": {"en": ("keep generating past the end-of-sequence token, so every output has its full length",
                            "flag", "-"),
                     "zh": ("遇到结束符也继续生成，使每个输出达到设定长度", "开关", "-")},
}
