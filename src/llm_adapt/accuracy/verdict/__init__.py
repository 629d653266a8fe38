"""Accuracy verdicts: one judge per module, and what they share.

- checks.py: the thresholds with their sources, the one banding of a figure, checks worded from their keys, the
  unjudged form, and the checks several judges make (same top-1, perplexity, greedy, stops, expert routing);
- in_process.py: a runner in process against its floor, or against budgets and rounding without one;
- layers.py: layers captured inside a served engine;
- endpoint.py: a served model against the gold;
- roundoff.py: the rounding a correct kernel makes, what a layer's own error is judged against without a floor;
- msprobe.py: msprobe's own per-tensor rules, in its words.

Every judge is pure; the words of every check are in messages/accuracy.py."""

from llm_adapt.accuracy.verdict.checks import (
                                               ABSOLUTE_KL,
                                               ABSOLUTE_LN_PPL,
                                               ABSOLUTE_TOP1,
                                               GREEDY_ARGS,
                                               GREEDY_P,
                                               K_SPREAD,
                                               MIN_DECISIVE,
                                               MIN_GREEDY,
                                               NOTHING_DECIDED,
                                               PPL_ABS_TOLERANCE,
                                               SAME_DTYPE_KL,
                                               SAME_DTYPE_TOP1,
                                               accuracy_verdict,
                                               allowance,
                                               allowed_ratio,
                                               band,
                                               binomial_tail,
                                               check,
                                               decided_status,
                                               genuine_count,
                                               graded,
                                               greedy_min_prompts,
                                               greedy_status,
                                               is_informational,
                                               ppl_check,
                                               routing_check,
                                               routing_totals,
                                               stops_check,
                                               top1_evidence,
                                               top1_figures,
                                               top1_status,
                                               unjudged,
                                               verdict_of,
                                               worst,
)
from llm_adapt.accuracy.verdict.endpoint import (
                                               ENDPOINT_SECTIONS,
                                               clean_kl_bound,
                                               judge_endpoint,
                                               same_dtype_checks,
                                               same_dtype_kl_check,
                                               top1_check,
)
from llm_adapt.accuracy.verdict.in_process import judge, located_args
from llm_adapt.accuracy.verdict.layers import first_step_up, judge_layers, locate_and_judge
from llm_adapt.accuracy.verdict.msprobe import MSPROBE_DTYPE_SHARES, msprobe_dtype_rule, msprobe_rule
from llm_adapt.accuracy.verdict.roundoff import (
                                               ACCUMULATOR,
                                               INSIDE,
                                               NO_FLOOR_ERROR,
                                               ROUNDOFF_FACTOR,
                                               SUM_GROWTH,
                                               UNIT_ROUNDOFF,
                                               find_first_local_excess,
                                               locate_part,
                                               longest_sum,
                                               own_error_excess,
                                               roundoff_basis,
                                               target_basis,
)

__all__ = ["ABSOLUTE_KL", "ABSOLUTE_LN_PPL", "ABSOLUTE_TOP1", "ACCUMULATOR", "ENDPOINT_SECTIONS", "GREEDY_ARGS",
           "GREEDY_P", "INSIDE", "K_SPREAD", "MIN_DECISIVE", "MIN_GREEDY", "MSPROBE_DTYPE_SHARES", "NOTHING_DECIDED",
           "NO_FLOOR_ERROR", "PPL_ABS_TOLERANCE", "ROUNDOFF_FACTOR", "SAME_DTYPE_KL", "SAME_DTYPE_TOP1", "SUM_GROWTH",
           "UNIT_ROUNDOFF", "accuracy_verdict", "allowance", "allowed_ratio", "band", "binomial_tail", "check", "clean_kl_bound",
           "decided_status", "find_first_local_excess", "first_step_up", "genuine_count", "graded",
           "greedy_min_prompts", "greedy_status", "is_informational", "judge", "judge_endpoint", "judge_layers",
           "locate_and_judge", "locate_part", "located_args", "longest_sum", "msprobe_dtype_rule", "msprobe_rule",
           "own_error_excess", "ppl_check", "roundoff_basis", "routing_check", "routing_totals", "same_dtype_checks",
           "same_dtype_kl_check", "stops_check", "target_basis", "top1_check", "top1_evidence", "top1_figures",
           "top1_status", "unjudged", "verdict_of", "worst"]
