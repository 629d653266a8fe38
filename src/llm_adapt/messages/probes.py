"""The probes' words: the feature probes' evidence (probes/features.py) and the probes' names and statuses."""

from __future__ import annotations

REASONS: dict[str, dict[str, str]] = {
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
    "pe_stop": {"en": "stop=[{stop}] (taken from its own greedy text {own}) -> {text}, finish_reason {finish}",
                "zh": "stop=[{stop}]（取自模型自身的贪心输出 {own}）-> 「{text}」，finish_reason {finish}"},
    "pe_stop_nothing": {"en": "not judged: the model's own output ({text}) holds no stop string to test with",
                        "zh": "未评判：模型自身的输出（{text}）中没有可用于测试的停止字符串"},
    "pe_schema_length": {"en": "not judged: the model's own output ran out of max_tokens inside the JSON: {text}",
                         "zh": "未评判：模型自身的输出在 JSON 内用尽了 max_tokens：「{text}」"},
    "pe_no_chat_template": {"en": "not applicable: no chat template (a base model); the server refuses chat",
                            "zh": "不适用：没有对话模板（基座模型）；服务端拒绝对话请求"},
    "pe_model_output": {"en": "not judged: the model's own output (its logits are flat: untrained or random "
                              "weights?): {evidence}",
                        "zh": "未评判：取决于模型自身的输出（其 logits 很平坦：权重未训练或为随机权重？）：{evidence}"},
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
}


# The probes' names (probes/features.PROBES) and statuses in the report's other language; a word not here
# shows as written.
PROBE_WORDS = {"zh": {
    "supported": "支持", "unsupported": "不支持", "not applicable": "不适用", "error": "出错", "not run": "未运行",
    "not enabled": "未启用", "not judged": "未评判", "streamed completions": "流式补全接口",
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
