"""The accuracy defaults `compare`, `layers` and `run` share: one value per concept, named once.

No imports, so the command line reads them without loading torch."""

PROMPTS = "default"  # the prompt suite: knowledge, reasoning, greeting, Chinese, code, multi-turn, long context
MAX_NEW_TOKENS = 48  # greedy tokens per prompt: the gold's continuation every target is judged on
TIE_MARGIN = 0.3  # nats: a top-1 vs top-2 gap within it is a near-tie (lighteval; bf16 steps at logit 32-64 are 0.25)
TOP_K = 5  # k of top-k overlap and of mutual top-k
