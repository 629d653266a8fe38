"""The adaptation report's layer-by-layer compatibility matrix, as vLLM-Ascend's model-adapter skill asks for it
(its dense and MoE templates: one row per component, with what the deployment gives it, what the model needs, the
gap and the plan), and beside it one row per decoder layer, filled from the run's own measurement of each layer
against the gold. Pure: the export gives it the run's records."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from llm_adapt.accuracy.result import LayerRow, LocatedFault
from llm_adapt.accuracy.verdict.checks import allowance
from llm_adapt.accuracy.verdict.roundoff import local_ruling, own_error_excess
from llm_adapt.messages import Reason, message, reason

# the skill's fixed templates (references/model-layer-baseline: "dense llm" and "moe llm"), in their order
DENSE = ("embedding", "positional/rope", "attention", "mlp/ffn", "norm", "lm_head/output")
MOE = ("embedding", "positional/rope", "attention", "moe router/gate", "moe experts", "shared expert / residual mlp",
       "norm", "lm_head/output")
PREFIX = {"head_dim": "head_dim"}  # operator values that are a bare figure, shown after their name
COLUMNS = ("Layer", "Current capability", "Model requirement", "Gap", "Adaptation plan")

# component -> the operator rows of inspect.json that state what it needs (and whose caveats are its gaps)
OPERATORS = {"embedding": ("embedding scale",), "positional/rope": ("positional encoding",),
             "attention": ("attention", "head_dim", "attention window", "soft-capping"),
             "mlp/ffn": ("activation", "biases"), "moe router/gate": ("MoE",), "moe experts": ("MoE", "activation"),
             "shared expert / residual mlp": (), "norm": ("norm", "norms per layer"),
             "lm_head/output": ("output head", "scalings")}

# a located fault's place (a measured tensor or the part of a layer) -> its component
PLACE = (("router", "moe router/gate"), ("shared expert", "shared expert / residual mlp"), ("experts", "moe experts"),
         ("norm", "norm"), ("attention", "attention"), ("mlp", "mlp/ffn"), ("embeddings", "embedding"),
         ("output head", "lm_head/output"))


@dataclass(frozen=True)
class ComponentRow:
    layer: str
    capability: Any  # each a Reason or plain text
    requirement: Any
    gap: Any
    plan: Any


@dataclass(frozen=True)
class DecoderLayerRow:
    index: int
    attention: str  # "full" | "sliding"
    mlp: str  # "dense" | "MoE"
    error: float | None  # the layer's own error (rel. L2), None: not measured
    ratio: float | None  # against its basis (its floor, or the rounding of its dtype)
    allowed: float | None  # the ratio it may reach
    status: str  # "in line" | "out of line" | "located" | "not measured"


@dataclass(frozen=True)
class Measured:
    """One source of per-layer errors: the rows, the fault the verdict located in them, and how to judge a row."""
    source: Reason
    rows: list[LayerRow]
    located: LocatedFault | None
    floored: bool  # ratios to a floor (else to the rounding of `dtype`)
    factor: float  # the local factor a floored row's allowance is multiplied by (1: served, judged on the full error)
    dtype: str
    contraction: int | None
    local: bool  # judged on the layer's own error (in process) or the full one (served)


def template_for(moe_layers: int) -> tuple[str, ...]:
    return MOE if moe_layers else DENSE


def component_of(place: str) -> str | None:
    """The component a located place belongs to ("layer 3 / attention", "final norm", "router"). Pure."""
    low = place.lower()
    return next((component for word, component in PLACE if word in low), None)


def layer_index(name: str) -> int | None:
    found = re.fullmatch(r"layer (\d+)", name)
    return int(found.group(1)) if found else None


def judge_row(row: LayerRow, m: Measured) -> tuple[float | None, float | None, bool]:
    """(ratio, allowed ratio, out of line) of one measured layer, by the rule its verdict used: in process, its own
    error against its floor x the local factor, or against the rounding of its dtype (roundoff.local_ruling);
    served, its full error's ratio to the floor against that ratio's allowance (layers.first_step_up). Pure."""
    if m.local:
        ratio, allowed, _, out = local_ruling(row, m.factor, m.floored, m.dtype, m.contraction)
        return ratio, allowed, out
    value, ratio = row["rel_l2"], row.get("ratio")
    if not m.floored:
        ratio, _, out = own_error_excess(value, None, 1.0, m.factor, False, m.dtype, m.contraction)
        return ratio, 1.0, out
    try:
        allowed = allowance(row)
    except KeyError:  # a row never compared with a floor (the embeddings, say)
        return ratio, None, not math.isfinite(value)
    return ratio, allowed, bool((ratio is not None and ratio > allowed) or not math.isfinite(value))


def decoder_rows(layer_types: list[str], moe_indexes: list[int], layers: int,
                 measured: Measured | None) -> list[DecoderLayerRow]:
    """One row per decoder layer: its attention and MLP kind, and its measured error with its ruling. Pure."""
    by_index = {layer_index(r["name"]): r for r in (measured.rows if measured else [])}
    located = layer_index(measured.located["name"]) if measured and measured.located else None
    moe = set(moe_indexes)
    out = []
    for i in range(layers):
        kind = layer_types[i] if i < len(layer_types) else "full"
        mlp = "MoE" if i in moe else "dense"
        row = by_index.get(i)
        if row is None or measured is None:
            out.append(DecoderLayerRow(i, kind, mlp, None, None, None, "not measured"))
            continue
        ratio, allowed, excess = judge_row(row, measured)
        status = "located" if i == located else "out of line" if excess else "in line"
        error = row.get("local_rel_l2", row["rel_l2"]) if measured.local else row["rel_l2"]
        out.append(DecoderLayerRow(i, kind, mlp, error, ratio, allowed, status))
    return out


def located_component(located: LocatedFault | None, head_named: bool) -> tuple[str | None, str | None]:
    """(component, place) of the fault the verdict located: its part inside the layer where the part pass named
    one, else the tensor itself (the embeddings, the final norm); the output head where the verdict named it. A
    whole decoder layer with no part names no component. Pure."""
    if head_named:
        return "lm_head/output", "output head"
    if not located:
        return None, None
    place = located.get("part") or located["name"]
    return component_of(place) if layer_index(place) is None else None, f"{located['name']}" + (
        f" / {located['part']}" if located.get("part") else "")


LAYER_BODY = ("attention", "mlp/ffn", "moe router/gate", "moe experts")  # where a whole layer's fault may sit


def component_rows(template: tuple[str, ...], operators: list[dict[str, Any]], inventory: dict[str, Any],
                   caveats: list[dict[str, Any]], support: str, architecture: str, measured: bool,
                   located: tuple[str | None, str | None], verdict: str | None = None) -> list[ComponentRow]:
    """The template's rows for this model. `operators`: inspect.json's operator rows (name, value); `caveats`: the
    model's caveats on the deployment's platform; `support`: "native" | "transformers-backend" | anything else;
    `measured`: this run served the model and measured it against the gold; `located`: (component, place) of the
    fault the run located, or (None, None), or (None, place) for a whole decoder layer; `verdict`: the run's
    accuracy status. Pure."""
    values = {o["name"]: o.get("value") for o in operators}
    capability = capability_of(support, architecture, not measured)
    out = []
    for layer in template:
        gaps = [c for c in caveats if c.get("operator") in OPERATORS[layer]]
        requirement = requirement_of(layer, values, inventory)
        if requirement is None:
            out.append(ComponentRow(layer, reason("lm_na"), reason("lm_na"), reason("lm_na"), reason("lm_na")))
            continue
        if layer == located[0]:
            gap, plan = reason("lm_gap_located", place=located[1]), reason("lm_plan_located")
        elif located[0] is None and located[1] and layer in LAYER_BODY:
            gap, plan = reason("lm_gap_layer", place=located[1]), reason("lm_plan_located")
        elif gaps:
            gap, plan = gaps[0].get("text"), gaps[0].get("check")
        else:
            unlocated = measured and located == (None, None) and verdict in ("FAIL", "WARN")
            gap = reason("lm_gap_unlocated", status=verdict) if unlocated else reason(
                "lm_gap_none" if measured else "lm_gap_none_planned")
            plan = reason("lm_plan_native" if support == "native" else "lm_plan_port")
        out.append(ComponentRow(layer, capability, requirement, gap, plan))
    return out


def capability_of(support: str, architecture: str, planned: bool) -> Reason:
    key = {"native": "lm_cap_native", "transformers-backend": "lm_cap_backend"}.get(support, "lm_cap_none")
    return reason(key + ("_planned" if planned and support in ("native", "transformers-backend") else ""),
                  arch=architecture)


def requirement_of(layer: str, values: dict[str, Any], inv: dict[str, Any]) -> Any:
    """What the model needs of one component, in inspect's own words (None: the model has no such component,
    a shared expert where it has none). Pure."""
    if layer == "embedding":
        scale = inv.get("embed_scale")
        return reason("lm_req_embedding", tied=reason("lm_tied" if inv.get("tied") else "lm_untied"),
                      scale=f" x {scale:g}" if scale else "")
    if layer == "moe router/gate":
        return reason("lm_req_router", router=inv.get("router") or "?", k=inv.get("experts_per_token") or "?",
                      experts=inv.get("experts") or "?", layers=inv.get("moe_layers") or 0)
    if layer == "moe experts":
        return reason("lm_req_experts", experts=inv.get("experts") or "?", act=values.get("activation") or "?")
    if layer == "shared expert / residual mlp":
        return inv.get("shared_experts") or None
    if layer == "lm_head/output":
        return reason("lm_req_head", tied=reason("lm_tied" if inv.get("tied") else "lm_untied"),
                      softcap=f", soft-capping {inv['final_softcap']:g}" if inv.get("final_softcap") else "")
    parts = [Joined((PREFIX[name], values[name])) if name in PREFIX else values[name]
             for name in OPERATORS[layer] if values.get(name) not in (None, "", "none")]
    return parts[0] if len(parts) == 1 else Joined(tuple(parts)) if parts else None


@dataclass(frozen=True)
class Joined:
    """Several operator values shown in one cell, each in the report's language."""
    parts: tuple[Any, ...]


def words(value: Any, lang: str) -> str:
    """One cell in `lang`: a Reason, a Joined, plain text or None ("-"). Pure."""
    if value is None:
        return "-"
    if isinstance(value, Joined):
        sep = " " if len(value.parts) == 2 and value.parts[0] in PREFIX.values() else "; "
        return sep.join(words(p, lang) for p in value.parts)
    return str(message(value, lang))


@dataclass(frozen=True)
class LayerMatrix:
    template: str  # "dense" | "moe": which of the skill's templates
    components: list[ComponentRow]
    layers: list[DecoderLayerRow]
    source: Reason | None  # where the per-layer errors were measured; None: not in this run


def measured_of(layers: Any, accuracy: Any, main: Any) -> Measured | None:
    """The run's per-layer errors: captured inside the served engine (layers.json) where the run has them, else
    the in-process target's (accuracy.json); None where neither ran."""
    if layers is not None and layers.layers:
        return Measured(reason("lm_src_served", dtype=layers.served_dtype), list(layers.layers),
                        layers.first_local_excess, layers.floor is not None, 1.0, layers.served_dtype, None, False)
    if main is not None and main.layers:
        basis = main.roundoff_basis or {}
        return Measured(reason("lm_src_in_process", label=main.label), list(main.layers), main.first_local_excess,
                        main.floor is not None, float(accuracy.settings.get("local_factor", 2.0)), main.dtype,
                        basis.get("contraction"), True)
    return None


def head_named(verdict: dict[str, Any] | None) -> bool:
    from llm_adapt.accuracy.diagnosis import HEAD_REASON

    return any(str(r).startswith(HEAD_REASON) for r in (verdict or {}).get("reasons") or [])


def matrix(inspect: Any, layers: Any, accuracy: Any, main: Any, caveats: list[dict[str, Any]],
           served: bool) -> LayerMatrix:
    """The whole matrix from the run's records: inspect.json (operators, inventory, support), layers.json,
    accuracy.json and its main target, the model's caveats on the deployment's platform, and whether this run
    served the deployment itself."""
    inv = inspect.inventory or {}
    layer_count = int(inspect.config.get("num_layers") or len(inv.get("layer_types") or []))
    measured = measured_of(layers, accuracy, main)
    judged = (layers.verdict if measured and not measured.local else main.verdict if measured else None) or {}
    moe_layers = int(inv.get("moe_layers") or 0)
    template = template_for(moe_layers)
    named_head = head_named(main.verdict if main is not None else None)
    place = located_component(measured.located if measured else None, named_head)
    support = (inspect.support or {}).get("vllm", "")
    components = component_rows(template, inspect.operators or [], inv, caveats, support, inspect.architecture,
                                served and measured is not None, place,
                                judged.get("status"))
    rows = decoder_rows(list(inv.get("layer_types") or []), list(inv.get("moe_layer_indexes") or []), layer_count,
                        measured)
    return LayerMatrix("moe" if template is MOE else "dense", components, rows, measured.source if measured else None)
