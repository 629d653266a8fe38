"""The gold's answers to the prompts AISBench sent the served model: the model in process, float32, greedy,
one prompt at a time (no padding to move a token), up to the same max_out_len, special tokens dropped from
the text as vLLM drops them. The chat template is applied as the server applies it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def answers(model_path: str, prompts: Sequence[list[dict[str, str]] | str], max_out_len: int,
            say: Callable[[str], None] = print) -> list[str]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).eval()
    out = []
    for i, prompt in enumerate(prompts):
        ids = _encode(tokenizer, prompt)
        with torch.inference_mode():
            generated = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_out_len,
                                       do_sample=False, pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
        out.append(tokenizer.decode(generated[0, ids.shape[1]:], skip_special_tokens=True))
        if (i + 1) % 10 == 0:
            say(f"gold: {i + 1} of {len(prompts)} answered")
    return out


def _encode(tokenizer: Any, prompt: list[dict[str, str]] | str):
    if isinstance(prompt, str):
        return tokenizer(prompt, return_tensors="pt").input_ids
    text = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=False)
    return tokenizer(text, return_tensors="pt", add_special_tokens=False).input_ids
