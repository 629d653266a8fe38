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
}
