"""llm-adapt: adapt an LLM to an accelerator and prove it."""
__version__ = "0.1.0"
