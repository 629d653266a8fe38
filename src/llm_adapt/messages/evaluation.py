"""eval's words: the per-metric judgement (evaluation/stats.py, judge.py)."""

from __future__ import annotations

REASONS: dict[str, dict[str, str]] = {
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
    # upstream's rules beside ours (evaluation/rules.py)
    "tv_rule_no_items": {"en": "no items: not judged", "zh": "没有题目：未判定"},
    "tv_rule_rtol": {"en": "served {served} vs gold {gold}: |diff| <= {allowed} (rtol {rtol}) to pass",
                     "zh": "服务端 {served}，金标准 {gold}：|差值| <= {allowed}（rtol {rtol}）才通过"},
    "tv_rule_threshold": {"en": "served {served} vs gold {gold} points: within ±{threshold} to pass",
                          "zh": "服务端 {served}，金标准 {gold} 分：在 ±{threshold} 分内才通过"},
    # what the items run could see (evaluation/power.py)
    "tv_unseen": {"en": "{task} {metric}: with {n} items, a drop smaller than {drop} points would go unseen "
                        "(the paired test needs {needed} items to see {detect} points; an unpaired test {unpaired})",
                  "zh": "{task} {metric}：只有 {n} 道题，小于 {drop} 分的下降看不出来"
                        "（配对检验要看出 {detect} 分需 {needed} 道题；非配对检验需 {unpaired} 道）"},
    "tv_unseen_more": {"en": "{task} {metric}: with {n} items, a drop smaller than {drop} points would go unseen "
                             "(the paired test needs {needed} items to see {detect} points; an unpaired test {unpaired}; "
                             "the task holds {available})",
                       "zh": "{task} {metric}：只有 {n} 道题，小于 {drop} 分的下降看不出来"
                             "（配对检验要看出 {detect} 分需 {needed} 道题；非配对检验需 {unpaired} 道；该任务共 {available} 道）"},
    "tv_enough": {"en": "{task} {metric}: {n} items see a drop of {drop} points (the paired test needs {needed} "
                        "for {detect} points; an unpaired test {unpaired})",
                  "zh": "{task} {metric}：{n} 道题可看出 {drop} 分的下降（配对检验看出 {detect} 分需 {needed} 道；"
                        "非配对检验需 {unpaired} 道）"},
    "tv_no_items_seen": {"en": "{task} {metric}: no items paired with the gold, so no drop can be seen",
                         "zh": "{task} {metric}：没有与金标准配对的题目，看不出任何下降"},
}
