"""The inspect room's words: the plan's warnings, the multi-node form, the strategy, the operator gate, the
feature rows' evidence, tool calling, the operator inventory and model walk, the support level, the capacity
baseline, the platform caveats and the parameter accounting."""

from __future__ import annotations

REASONS: dict[str, dict[str, str]] = {
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
    "cpu_ep_crash": {"en": "--ep on vLLM-CPU 0.32: its MoE kernel (csrc/cpu/cpu_fused_moe.cpp) is given the global "
                           "expert ids but holds only the rank's experts (the expert map is not passed); seen here: the "
                           "server starts, then a worker dies of SIGSEGV at the first request. Expert parallelism is "
                           "checked on an NPU or GPU, not on this CPU build",
                     "zh": "vLLM-CPU 0.32 上的 --ep：其 MoE 算子（csrc/cpu/cpu_fused_moe.cpp）收到的是全局专家编号，"
                           "但只持有本 rank 的专家（未传入专家映射）；本机所见：服务能启动，第一个请求时 worker 因 "
                           "SIGSEGV 退出。专家并行需在 NPU 或 GPU 上验证，此 CPU 版本无法验证"},
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
    "pe_concurrent": {"en": "8 concurrent requests answered in {seconds} s", "zh": "8 个并发请求在 {seconds} s 内全部得到回答"},
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
    "inv_embed_multiplier": {"en": "x {scale:g} (config's multiplier, applied in the model's forward before layer 0)",
                             "zh": "x {scale:g}（配置中的乘数，在模型 forward 中于第 0 层之前施加）"},
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
    "sup_pinned": {"en": "the release vLLM-Ascend pins", "zh": "vLLM-Ascend 固定依赖的版本"},
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
    "cav_cpu_mla": {"en": "vLLM-CPU 0.32 runs MLA through its reference CPU_MLA backend (AMX_MLA on AMX CPUs), whose "
                          "decode kernel takes DeepSeek's latent (512 + 64) with blocks of 16 only; in eager mode its "
                          "rotary kernel rotates MLA's strided q_pe and k_pe wrongly (benchmarks/rope_kernel.py: off by "
                          "up to 5.9 against vLLM's own native rope), so the served output is expected off the gold",
                    "zh": "vLLM-CPU 0.32 通过其参考实现 CPU_MLA 后端运行 MLA（支持 AMX 的 CPU 上为 AMX_MLA），其解码内核只接受 "
                          "DeepSeek 的潜变量（512 + 64）和大小为 16 的块；eager 模式下其旋转位置编码内核对 MLA 跨步的 q_pe 和 "
                          "k_pe 旋转有误（benchmarks/rope_kernel.py：与 vLLM 自带的原生实现相差最多 5.9），因此服务输出预计偏离金标准"},
    "cav_cpu_mla_check": {"en": "a FAIL at layer 0's attention may be this kernel's: served again with --compilation-config "
                                "'{{\"custom_ops\": [\"-rotary_embedding\"]}}' the engine takes vLLM's native rope; expect low "
                                "throughput in the benchmark",
                          "zh": "第 0 层注意力处的 FAIL 可能来自该内核：加上 --compilation-config "
                                "'{{\"custom_ops\": [\"-rotary_embedding\"]}}' 重新部署时引擎改用 vLLM 的原生旋转位置编码；"
                                "基准测试中预计吞吐较低"},
    "cav_untied_head_ignored": {"en": "tie_word_embeddings is false and the checkpoint has an lm_head of its own, but vLLM's "
                                      "{arch} always computes the logits from the embedding and never reads lm_head: it "
                                      "serves another head than the checkpoint's",
                                "zh": "tie_word_embeddings 为 false，且检查点自带 lm_head，但 vLLM 的 {arch} 始终用嵌入层计算 logits，"
                                      "从不读取 lm_head：实际服务的输出头与检查点不同"},
    "cav_untied_head_ignored_check": {"en": "the served KL against the gold, with every layer and the final norm in line: "
                                            "the head is the place to look",
                                      "zh": "服务端对比金标准的 KL：若各层与最终归一化均正常，问题在输出头"},
    "cav_tied_head_ignored": {"en": "tie_word_embeddings is true, but vLLM's {arch} never ties its output head to the "
                                    "embedding: a checkpoint saved tied holds no lm_head.weight, and the engine serves "
                                    "a head left unloaded (every answer one token)",
                              "zh": "tie_word_embeddings 为 true，但 vLLM 的 {arch} 从不把输出头与词嵌入绑定：以绑定方式保存的"
                                    "检查点没有 lm_head.weight，引擎使用未加载的输出头（每个回答都是同一个 token）"},
    "cav_tied_head_ignored_check": {"en": "the served same top-1 rate against the gold: near 0 with every greedy answer one "
                                          "token; save the checkpoint with lm_head.weight written out (untied)",
                                    "zh": "服务端与金标准的 top-1 一致率：接近 0 且每个贪心回答都是同一个 token；"
                                          "请写出 lm_head.weight（不绑定）后重新保存检查点"},
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
    # what the run measured: the weights' provenance (models/provenance.py)
    "prov_quant": {"en": "{quant} GGUF", "zh": "{quant} GGUF"},
    "prov_quant_unknown": {"en": "GGUF", "zh": "GGUF"},
    "prov_unrecorded": {"en": " (this older run did not record the GGUF's quantization)",
                        "zh": "（此旧运行未记录该 GGUF 的量化类型）"},
    "prov_package": {"en": " from the {package} package", "zh": "，来自 {package} 包"},
    "prov_gguf": {"en": "measured on the {kind} `{file}`{package}, dequantized to {dtype}: the figures describe that "
                        "conversion{note}",
                  "zh": "测量对象为 {kind} `{file}`{package}，已反量化为 {dtype}：各项数字描述的是这一转换结果{note}"},
    "prov_gguf_of": {"en": "measured on the {kind} of `{hub}` (`{file}`{package}), dequantized to {dtype}: the figures "
                           "describe that conversion, not the checkpoint `{hub}` as published{note}",
                     "zh": "测量对象为 `{hub}` 的 {kind}（`{file}`{package}），已反量化为 {dtype}：各项数字描述的是这一"
                           "转换结果，而非 `{hub}` 发布的检查点{note}"},
    "prov_revision": {"en": " at revision {rev}", "zh": "（修订版 {rev}）"},
    "prov_hub": {"en": "measured on the checkpoint `{hub}`{revision} ({detail})",
                 "zh": "测量对象为检查点 `{hub}`{revision}（{detail}）"},
    "prov_hub_not": {"en": "measured on the checkpoint `{hub}`{revision} ({detail}), not on `{given}`: the figures "
                           "describe `{hub}`",
                     "zh": "测量对象为检查点 `{hub}`{revision}（{detail}），而非 `{given}`：各项数字描述的是 `{hub}`"},
    "prov_local": {"en": "measured on the local checkpoint `{name}` ({detail})",
                   "zh": "测量对象为本地检查点 `{name}`（{detail}）"},
    "prov_local_as": {"en": "measured on the local checkpoint `{name}` ({detail}), exported as `{hub}`: its files "
                            "were not compared with the hub's",
                      "zh": "测量对象为本地检查点 `{name}`（{detail}），以 `{hub}` 导出：其文件未与模型仓库中的文件比对"},
    "prov_config_only": {"en": "no weights were measured: `{name}` holds a config only",
                         "zh": "未测量任何权重：`{name}` 只有配置文件"},
}
