"""A float32 gold reference for models larger than RAM: one layer in memory at a time.

The model skeleton is built on the meta device (no memory). Each pass reads layer i's weights
straight from the safetensors shards, runs every sequence of the pass through it, and drops it
before reading layer i+1. Peak memory is about the embeddings + one layer + the activations.
A teacher-forced capture is one pass (each weight byte read once); greedy decoding of N tokens
is N + 1 passes, every prompt advancing one token per pass with its own KV cache.

The per-layer arithmetic is the model's own modules (transformers), called exactly as the
model's forward calls them, so in float32 the results equal the in-memory reference.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from llm_adapt.errors import UsageError


class ShardReader:
    """Tensor name -> shard file, from the index file or from each shard's header."""

    def __init__(self, model_dir: Path):
        from llm_adapt.models.weights import read_header, safetensors_files

        self.model_dir = Path(model_dir)
        index = self.model_dir / "model.safetensors.index.json"
        if index.is_file():
            weight_map = json.loads(index.read_text())["weight_map"]
            self.where = {name: self.model_dir / file for name, file in weight_map.items()}
        else:
            self.where = {name: path for path in safetensors_files(self.model_dir) for name in read_header(path)}
        if not self.where:
            raise UsageError(f"{model_dir}: no safetensors weights; the streaming reference reads safetensors shards")

    def load(self, prefix: str, dtype: torch.dtype = torch.float32) -> dict[str, torch.Tensor]:
        """Every tensor whose name starts with `prefix`, prefix stripped, converted to `dtype`."""
        from safetensors import safe_open

        names = [n for n in self.where if n.startswith(prefix)]
        out: dict[str, torch.Tensor] = {}
        for path in sorted({self.where[n] for n in names}):
            with safe_open(str(path), framework="pt") as handle:
                for name in names:
                    if self.where[name] == path:
                        out[name[len(prefix):]] = handle.get_tensor(name).to(dtype)
        return out

    def has(self, name: str) -> bool:
        return name in self.where


@dataclass
class Item:
    """One sequence's input for one pass, and the KV cache it keeps across passes."""

    ids: torch.Tensor  # [1, T]
    cache: object | None = None


class StreamingReference:
    """Gold reference that never holds more than one decoder layer."""

    def __init__(self, model_dir: Path):
        from transformers import AutoConfig, AutoModelForCausalLM

        self.config = AutoConfig.from_pretrained(model_dir)
        with torch.device("meta"):
            self.model = AutoModelForCausalLM.from_config(self.config, dtype=torch.float32)
        base = self.model.model
        base.rotary_emb = type(base.rotary_emb)(config=self.config)  # real buffers, not meta
        self.reader = ShardReader(model_dir)
        self.embed = self.reader.load("model.embed_tokens.")["weight"]
        base.norm.load_state_dict(self.reader.load("model.norm."), assign=True)
        self.num_layers = len(base.layers)
        self.tied = not self.reader.has("lm_head.weight")
        self.layers_read = 0  # for tests and benchmarks: how many layer loads happened

    def _layer(self, i: int):
        layer = self.model.model.layers[i]
        layer.load_state_dict(self.reader.load(f"model.layers.{i}."), assign=True)
        self.layers_read += 1
        return layer

    def _drop(self, i: int) -> None:
        self.model.model.layers[i].to("meta")

    @torch.no_grad()
    def run_pass(self, items: list[Item], capture: bool, last_only: bool = False,
                 progress: Callable[[int, int], None] | None = None) -> list[tuple[list[torch.Tensor], torch.Tensor]]:
        """Every item through every layer; returns (hidden states if captured, logits [T, V]) per item.

        `last_only` keeps the logits of the last position only (all greedy decoding needs);
        `progress(done, total)` advances per layer read."""
        from transformers.masking_utils import create_causal_mask

        base = self.model.model
        states, extras, hidden = [], [], [[] for _ in items]
        for k, item in enumerate(items):
            x = torch.nn.functional.embedding(item.ids, self.embed)
            past = item.cache.get_seq_length() if item.cache is not None else 0
            pos = (torch.arange(item.ids.shape[1]) + past).unsqueeze(0)
            mask = create_causal_mask(config=self.config, inputs_embeds=x, attention_mask=None,
                                      past_key_values=item.cache, position_ids=pos)
            extras.append(dict(attention_mask=mask, position_ids=pos, past_key_values=item.cache,
                               use_cache=item.cache is not None, position_embeddings=base.rotary_emb(x, position_ids=pos)))
            states.append(x)
            if capture:
                hidden[k].append(x.clone())
        for i in range(self.num_layers):
            layer = self._layer(i)
            for k in range(len(items)):
                out = layer(states[k], **extras[k])
                states[k] = out[0] if isinstance(out, tuple) else out
                if capture:
                    hidden[k].append(states[k].clone())
            self._drop(i)
            if progress:
                progress(i + 1, self.num_layers)
        head = self.embed if self.tied else self.reader.load("lm_head.")["weight"]
        results = []
        for k in range(len(items)):
            normed = base.norm(states[k][:, -1:] if last_only else states[k])
            if capture:
                hidden[k].append(normed.clone())
            results.append((hidden[k], (normed[0] @ head.T).float()))
        return results

    def capture_all(self, sequences: list[list[int]], progress=None) -> list[tuple[list[torch.Tensor], torch.Tensor]]:
        return self.run_pass([Item(torch.tensor([s])) for s in sequences], capture=True, progress=progress)

    def logits_all(self, sequences: list[list[int]], progress=None) -> list[torch.Tensor]:
        items = [Item(torch.tensor([s])) for s in sequences]
        return [logits for _, logits in self.run_pass(items, capture=False, progress=progress)]

    def greedy_all(self, prompts: list[list[int]], max_new_tokens: int, eos_ids: list[int],
                   progress: Callable[[int, int], None] | None = None) -> list[list[int]]:
        """Greedy continuations of every prompt; one pass per generated token (`progress` per token)."""
        from transformers import DynamicCache

        items = [Item(torch.tensor([p]), DynamicCache(config=self.config)) for p in prompts]
        generated: list[list[int]] = [[] for _ in prompts]
        active = list(range(len(prompts)))
        for step in range(max_new_tokens):
            results = self.run_pass([items[k] for k in active], capture=False, last_only=True)
            still = []
            for k, (_, logits) in zip(active, results):
                token = int(logits[-1].argmax())
                generated[k].append(token)
                if token not in eos_ids and len(generated[k]) < max_new_tokens:
                    items[k].ids = torch.tensor([[token]])
                    still.append(k)
            active = still
            if progress:
                progress(step + 1 if active else max_new_tokens, max_new_tokens)
            if not active:
                break
        return generated
