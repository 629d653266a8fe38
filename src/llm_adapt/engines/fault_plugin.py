"""For tests only: a fault planted inside a served vLLM engine, where real adaptations break (its
kernels, its positions, its prefill and decode paths), with the checkpoint and the config untouched.

A vLLM general plugin like capture_plugin.py, loaded in every engine process and off unless
LLM_ADAPT_ENGINE_FAULT names a fault; never set it on a deployment. Faults:

  decode-only:L:S      decoder layer L's branch output (before the residual add) times S, on decode
                       tokens only
  prefill-only:L:S     the same on prompt (prefill) tokens only
  scaled:L:S           the same on every token, every step
  attention-scale:L:S  layer L's attention softmax scale times S
  rope-beyond:P        every position past P rotated as if 16 positions further on (all layers)

Prefill against decode: V1 packs every scheduled request's tokens into one flat batch whose
positions run up by one within a request. A run of one or two consecutive positions is a decode
token (a request's next token), a longer run a prompt chunk. Two decode requests whose positions
happen to be consecutive would read as a two-token run, still decode; a one- or two-token prompt
chunk would read as decode: the suites' prompts are longer than that.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV_FAULT = "LLM_ADAPT_ENGINE_FAULT"
KINDS = ("decode-only", "prefill-only", "scaled", "attention-scale", "rope-beyond")
ROPE_SHIFT = 16
DECODE_RUN = 2  # runs of consecutive positions up to this long are decode tokens


@dataclass(frozen=True)
class EngineFault:
    kind: str
    layer: int | None
    value: float

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.layer}:{self.value:g}" if self.layer is not None else f"{self.kind}:{self.value:g}"


def parse_fault(text: str) -> EngineFault:
    """'decode-only:5:1.5' -> EngineFault; ValueError naming the expected form. Pure."""
    parts = text.split(":")
    kind = parts[0]
    if kind not in KINDS:
        raise ValueError(f"{ENV_FAULT}={text!r}: the kind must be one of {', '.join(KINDS)}")
    try:
        if kind == "rope-beyond" and len(parts) == 2:
            return EngineFault(kind, None, float(int(parts[1])))
        if kind != "rope-beyond" and len(parts) == 3:
            return EngineFault(kind, int(parts[1]), float(parts[2]))
    except ValueError:
        pass
    form = "rope-beyond:POSITION" if kind == "rope-beyond" else f"{kind}:LAYER:FACTOR"
    raise ValueError(f"{ENV_FAULT}={text!r}: expected {form}")


def decode_mask(positions):
    """True for the tokens of a flat V1 batch that are decode tokens (see above)."""
    import torch

    n = positions.shape[0]
    if n == 0:
        return torch.zeros(0, dtype=torch.bool, device=positions.device)
    breaks = torch.ones(n, dtype=torch.bool, device=positions.device)
    breaks[1:] = positions[1:] != positions[:-1] + 1  # a new run starts here
    run_id = torch.cumsum(breaks.long(), 0) - 1
    lengths = torch.bincount(run_id)
    return lengths[run_id] <= DECODE_RUN


def register() -> bool:
    """The entry point vLLM calls in each of its processes. True when a fault was planted."""
    text = os.environ.get(ENV_FAULT)
    if not text:
        return False
    fault = parse_fault(text)
    from llm_adapt.engines.capture_plugin import after_model_load

    after_model_load("_llm_adapt_fault", lambda model, vllm_config: plant(model, fault))
    return True


def plant(model, fault: EngineFault) -> None:
    """Hooks on vLLM's own modules that make `fault` happen in every forward."""
    import sys

    print(f"llm-adapt: engine fault planted: {fault.label}", file=sys.stderr, flush=True)  # the tests look for it
    inner = model.model
    if fault.kind == "rope-beyond":
        def shift(module, args, kwargs):
            positions = kwargs.get("positions", args[0] if args else None)  # forward(positions, hidden_states)
            if positions is None:
                return None
            moved = positions + ROPE_SHIFT * (positions > int(fault.value)).to(positions.dtype)
            if "positions" in kwargs:
                return args, {**kwargs, "positions": moved}
            return (moved, *args[1:]), kwargs

        for layer in inner.layers:
            layer.self_attn.register_forward_pre_hook(shift, with_kwargs=True)
        return
    layer = inner.layers[fault.layer]
    if fault.kind == "attention-scale":
        layer.self_attn.attn.impl.scale = float(layer.self_attn.attn.impl.scale) * fault.value
        return

    def scale_output(module, args, kwargs, output):
        positions = kwargs.get("positions", args[0] if args else None)
        hidden, residual = output if isinstance(output, tuple) else (output, None)
        if fault.kind == "scaled" or positions is None:
            hidden = hidden * fault.value
        else:
            rows = decode_mask(positions)
            if fault.kind == "prefill-only":
                rows = ~rows
            factor = torch_where(rows, fault.value, hidden)
            hidden = hidden * factor
        return (hidden, residual) if isinstance(output, tuple) else hidden

    layer.register_forward_hook(scale_output, with_kwargs=True)


def torch_where(rows, value: float, like):
    """A [tokens, 1] factor: `value` on the chosen rows, 1 elsewhere."""
    import torch

    return torch.where(rows.unsqueeze(-1), torch.tensor(value, dtype=like.dtype, device=like.device),
                       torch.tensor(1.0, dtype=like.dtype, device=like.device))
