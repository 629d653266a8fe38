"""tune's words: the trials left out (tune/grid.py)."""

from __future__ import annotations

REASONS: dict[str, dict[str, str]] = {
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
    "result_unreadable": {"en": "{name}: result file unreadable, not judged (see the notes)",
                          "zh": "{name}：结果文件无法读取，未参与评判（见注释）"},
    "nothing_judged": {"en": "no accuracy was judged in this run", "zh": "本次运行未评判任何精度"},
}
