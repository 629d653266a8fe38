"""Planted faults: copies of a model directory with one known defect each, written at test time.

Each builder takes the clean directory and a destination, and returns the destination. Weights
stay float32 so an fp32 target of the copy differs from the reference only where the fault is.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import load_file, save_file

FAULT_LAYER = 7  # the layer weight faults are planted in


def _copy(src: Path, dst: Path) -> Path:
    """The model's files, its weights hard-linked rather than copied (the default model's are 538 MB, and a
    fault in its config or tokenizer leaves them as they are); a fault in the weights writes a file of its
    own (_weights), never into the linked one."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, copy_function=_link_weights)
    return dst


def _link_weights(src: str, dst: str) -> str:
    if src.endswith(".safetensors"):
        try:
            os.link(src, dst)
            return dst
        except OSError:  # another file system: a copy
            pass
    return shutil.copy2(src, dst)


def _weights(dst: Path, mutate: Callable[[dict[str, torch.Tensor]], None]) -> Path:
    path = dst / "model.safetensors"
    weights = load_file(path)
    mutate(weights)
    path.unlink()  # linked to the source (_copy): never write through it
    save_file(weights, path, metadata={"format": "pt"})
    return dst


def _json(path: Path, mutate: Callable[[dict], None]) -> None:
    data = json.loads(path.read_text())
    mutate(data)
    path.write_text(json.dumps(data, indent=2))


def _config(dst: Path) -> dict:
    return json.loads((dst / "config.json").read_text())


def gguf_permutation(w: torch.Tensor, heads: int) -> torch.Tensor:
    """llama.cpp's convert permutation of q/k rows (interleaved rotary halves), applied once too often."""
    rows, cols = w.shape
    return w.reshape(heads, 2, rows // heads // 2, cols).swapaxes(1, 2).reshape(rows, cols)


def qk_permuted(src: Path, dst: Path) -> Path:
    cfg = _config(_copy(src, dst))
    prefix = f"model.layers.{FAULT_LAYER}.self_attn."

    def mutate(w):
        w[prefix + "q_proj.weight"] = gguf_permutation(w[prefix + "q_proj.weight"], cfg["num_attention_heads"])
        w[prefix + "k_proj.weight"] = gguf_permutation(w[prefix + "k_proj.weight"], cfg["num_key_value_heads"])
    return _weights(dst, mutate)


def perturbed_layer(src: Path, dst: Path, scale: float = 0.5) -> Path:
    _copy(src, dst)
    key = f"model.layers.{FAULT_LAYER}.mlp.down_proj.weight"

    def mutate(w):
        gen = torch.Generator().manual_seed(0)
        w[key] = w[key] + scale * w[key].std() * torch.randn(w[key].shape, generator=gen)
    return _weights(dst, mutate)


def int8_one_layer(src: Path, dst: Path) -> Path:
    """Per-tensor symmetric int8 (max |W| / 127) on one layer's linears only."""
    _copy(src, dst)
    prefix = f"model.layers.{FAULT_LAYER}."

    def mutate(w):
        for name in [n for n in w if n.startswith(prefix) and n.endswith("proj.weight")]:
            scale = w[name].abs().max() / 127
            w[name] = torch.round(w[name] / scale).clamp(-127, 127) * scale
    return _weights(dst, mutate)


def wrong_rms_norm_eps(src: Path, dst: Path, eps: float = 1e-2) -> Path:
    _copy(src, dst)
    _json(dst / "config.json", lambda c: c.update(rms_norm_eps=eps))
    return dst


def wrong_rope_theta(src: Path, dst: Path, theta: float = 10000.0) -> Path:
    _copy(src, dst)

    def mutate(c):
        if isinstance(c.get("rope_parameters"), dict):
            c["rope_parameters"]["rope_theta"] = theta
        c["rope_theta"] = theta
    _json(dst / "config.json", mutate)
    return dst


def extra_eos(src: Path, dst: Path, token_id: int) -> Path:
    """generation_config lists one more EOS: answers stop at its first occurrence."""
    _copy(src, dst)
    _json(dst / "generation_config.json", lambda g: g.update(eos_token_id=[g["eos_token_id"], token_id]))
    return dst


def missing_eos(src: Path, dst: Path, replacement_id: int = 0, replacement: str = "<|endoftext|>") -> Path:
    """The chat's end-of-turn token is no longer a stop token anywhere: answers run on past it."""
    _copy(src, dst)
    _json(dst / "generation_config.json", lambda g: g.update(eos_token_id=replacement_id))
    _json(dst / "config.json", lambda c: c.update(eos_token_id=replacement_id))
    _json(dst / "tokenizer_config.json", lambda t: t.update(eos_token=replacement))
    return dst


def nan_logits(src: Path, dst: Path, token_id: int = 100) -> Path:
    """An untied output head with one NaN row: logits NaN, every hidden state finite."""
    _copy(src, dst)

    def mutate(w):
        head = w["model.embed_tokens.weight"].clone()
        head[token_id] = float("nan")
        w["lm_head.weight"] = head
    _json(dst / "config.json", lambda c: c.update(tie_word_embeddings=False))
    return _weights(dst, mutate)


def chat_template_mismatch(src: Path, dst: Path) -> Path:
    """The served chat template drops the default system prompt the reference renders."""
    _copy(src, dst)
    template = dst / "chat_template.jinja"
    text = template.read_text()
    changed = text.replace("You are a helpful AI assistant named SmolLM, trained by Hugging Face", "You are an assistant")
    assert changed != text, "the default model's chat template changed; update this fault"
    template.write_text(changed)
    return dst


# ---- faults for the zoo of families (benchmarks/zoo.py, tests/models/test_zoo.py) ---------------------------

def norm_shifted(src: Path, dst: Path, layer: int = 1, delta: float = 0.5) -> Path:
    """One layer's input norm weight moved by `delta` (a norm loaded wrong; for Gemma's (1 + w) norms too)."""
    _copy(src, dst)
    key = f"model.layers.{layer}.input_layernorm.weight"

    def mutate(w):
        w[key] = w[key] + delta
    return _weights(dst, mutate)


def moe_top_k(src: Path, dst: Path, k: int = 1) -> Path:
    """Expert routing: every MoE layer chooses `k` experts instead of the checkpoint's number."""
    _copy(src, dst)
    key = next(k for k in ("num_experts_per_tok", "moe_topk") if k in _config(dst))
    _json(dst / "config.json", lambda c: c.__setitem__(key, k))
    return dst


def moe_no_renormalization(src: Path, dst: Path) -> Path:
    """Expert routing: the chosen experts' weights no longer renormalized to sum to one."""
    _copy(src, dst)
    _json(dst / "config.json", lambda c: c.__setitem__("norm_topk_prob", False))
    return dst


def router_rows_swapped(src: Path, dst: Path, layer: int = 1) -> Path:
    """Expert routing: two experts' router rows swapped in one layer (a router loaded wrong), so tokens go to
    the other expert of the two."""
    _copy(src, dst)

    def mutate(w):  # the router of layer `layer` as the checkpoint names it (Mixtral: block_sparse_moe.gate)
        key = next(k for k in w if k.startswith(f"model.layers.{layer}.") and k.endswith(".gate.weight"))
        gate = w[key].clone()
        gate[[0, 1]] = gate[[1, 0]]
        w[key] = gate
    return _weights(dst, mutate)
