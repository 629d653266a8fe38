"""vLLM-Ascend's own model-adaptation workflow (the model-adapter skill in vllm-project/vllm-ascend):
its gates, its feature rows, and the files it delivers upstream, from this run's measurements."""
