"""Where a causal LM keeps its decoder blocks and its final norm, found on the model, never spelled as
`model.model.layers`: transformers' own accessor for the base model (Llama's `model`, GPT-J's and GPT-2's
`transformer`, OPT's `model.decoder`), then its one list of decoder blocks (as many as the config's layers) and
the norm registered after it. The embeddings come from `get_input_embeddings()`."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from llm_adapt.errors import AdaptError


@dataclass(frozen=True)
class Layout:
    layers: list[torch.nn.Module]
    norm: torch.nn.Module
    where: str  # the blocks' path from the causal LM, e.g. "model.layers", "transformer.h"


def find_layout(model: torch.nn.Module) -> Layout:
    """The decoder blocks and the final norm of `model` (a transformers causal LM). AdaptError naming what was
    not found, for a model whose blocks are not one list of its layers' count."""
    count = _layer_count(model)
    for prefix, owner in _candidates(model):
        for name, child in owner.named_children():
            if isinstance(child, torch.nn.ModuleList) and len(child) > 0 and (count is None or len(child) == count):
                norm = _norm_after(owner, name)
                if norm is not None:
                    return Layout(list(child), norm, f"{prefix}{name}".lstrip("."))
    raise AdaptError(f"{type(model).__name__}: no list of {count or 'its'} decoder blocks with a final norm found on "
                     "the model, so its layers cannot be compared one by one")


def _layer_count(model: torch.nn.Module) -> int | None:
    config = getattr(model, "config", None)
    config = getattr(config, "get_text_config", lambda: config)() if config is not None else None
    for key in ("num_hidden_layers", "n_layer", "num_layers"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _candidates(model: torch.nn.Module) -> list[tuple[str, torch.nn.Module]]:
    """The base model (transformers' `base_model`), then each of its children: OPT keeps its blocks one level
    down (`model.decoder.layers`)."""
    base = getattr(model, "base_model", model)
    prefix = next((f"{name}." for name, child in model.named_children() if child is base), "")
    return [(prefix, base)] + [(f"{prefix}{name}.", child) for name, child in base.named_children()]


FINAL_NORMS = ("norm", "ln_f", "final_layernorm", "final_layer_norm", "norm_f")


def _norm_after(owner: torch.nn.Module, list_name: str) -> torch.nn.Module | None:
    """The final norm on `owner`: the last normalization module registered after the block list, else one of the
    final norm's usual names registered before it (OPT registers final_layer_norm before its layers)."""
    names = [name for name, _ in owner.named_children()]
    is_norm = lambda name: ("norm" in type(getattr(owner, name)).__name__.lower()  # noqa: E731
                            or name in FINAL_NORMS)
    after = [getattr(owner, name) for name in names[names.index(list_name) + 1:] if is_norm(name)]
    before = [getattr(owner, name) for name in names[:names.index(list_name)] if name in FINAL_NORMS]
    return after[-1] if after else before[-1] if before else None
