"""Pre-quantized checkpoints: what the checkpoint says about its quantization, and what each engine needs.

Two places say it:
- config.json `quantization_config` (AWQ, GPTQ, compressed-tensors, FP8 and the rest of vLLM's methods);
  vLLM reads it itself, so no --quantization flag is planned for those;
- msmodelslim's `quant_model_description*.json` beside the weights: a map tensor name -> "W8A8",
  "W8A8_DYNAMIC", "FLOAT", ..., plus "model_quant_type". vLLM-Ascend serves it with `--quantization ascend`
  (vllm_ascend/quantization/modelslim_config.py registers that name and reads this file).

Parsing is pure (dict in, QuantInfo out, UsageError with one line for bad input); `detect_quant` is the
only function that reads files.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.errors import UsageError
from llm_adapt.models.config_json import ConfigJson

# Side data of quantized layers (AWQ/GPTQ scales, zeros, g_idx; compressed-tensors weight_shape; FP8
# weight_scale(_inv); msmodelslim deq_scale, quant_bias, input/weight offsets): kept at their stored width.
QUANT_SIDE = re.compile(r"\.(scales?|scale_inv|weight_scale\w*|input_scale|\w*zeros?|\w*zero_point|\w*offset|"
                        r"deq_scale|quant_bias|g_idx|weight_shape)$")

MSMODELSLIM = "ascend"  # vLLM-Ascend's --quantization name for msmodelslim checkpoints
MSMODELSLIM_GLOB = "quant_model_description*.json"

# Methods parsed in detail here.
DETAILED = ("awq", "gptq", "compressed-tensors", "fp8")
# Every other quant_method vLLM 0.32 accepts in a checkpoint
# (vllm/model_executor/layers/quantization/__init__.py, QUANTIZATION_METHODS), plus the aliases
# checkpoints write; recorded with what the config says, without a detailed scheme.
OTHER_VLLM_METHODS = frozenset({
    "auto_awq", "awq_marlin", "auto_gptq", "gptq_marlin", "fbgemm_fp8", "fp_quant", "modelopt", "modelopt_fp4",
    "modelopt_mxfp8", "modelopt_mixed", "humming", "experts_int8", "quark", "moe_wna16", "torchao", "inc",
    "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8", "mxfp8",
})
ALIASES = {"auto_awq": "awq", "awq_marlin": "awq", "auto_gptq": "gptq", "gptq_marlin": "gptq"}


@with_config(ConfigDict(extra="allow"))
class QuantRecord(TypedDict, total=False):
    """A pre-quantized checkpoint's scheme as results record it (QuantInfo.to_dict)."""
    method: str
    source: str
    scheme: str
    weight_bits: int | None
    weight_type: str | None
    activation_bits: int | None
    group_size: int | None
    symmetric: bool | None
    block: list[int] | None
    ignored: list[str]
    quantized_tensors: int | None
    float_tensors: int | None


@dataclass(frozen=True)
class QuantInfo:
    method: str  # vLLM's name: awq, gptq, compressed-tensors, fp8, ascend (msmodelslim), ...
    source: str  # the file that says so: "config.json" or the msmodelslim description's name
    scheme: str  # one readable label, e.g. "W4A16 int, group 128, asymmetric"
    weight_bits: int | None = None
    weight_type: str | None = None  # "int" | "float"
    activation_bits: int | None = None  # None: weight-only
    group_size: int | None = None  # None: per channel or per tensor
    symmetric: bool | None = None
    block: tuple[int, int] | None = None  # FP8 block quantization [rows, cols]
    ignored: tuple[str, ...] = ()  # modules the config keeps in float
    quantized_tensors: int | None = None  # msmodelslim: weights marked other than FLOAT
    float_tensors: int | None = None  # msmodelslim: weights marked FLOAT
    raw: ConfigJson = field(default_factory=dict, repr=False, compare=False)

    @property
    def weight_only(self) -> bool:
        return self.activation_bits is None

    @property
    def pack_factor(self) -> int:
        """Weights per stored element of a packed tensor (qweight, weight_packed: int4 in int32 -> 8)."""
        packs = self.method in ("awq", "gptq", "compressed-tensors") and self.weight_type == "int"
        return 32 // self.weight_bits if packs and self.weight_bits and self.weight_bits < 8 else 1

    def to_dict(self) -> QuantRecord:
        return {"method": self.method, "source": self.source, "scheme": self.scheme, "weight_bits": self.weight_bits,
                "weight_type": self.weight_type, "activation_bits": self.activation_bits,
                "group_size": self.group_size, "symmetric": self.symmetric,
                "block": list(self.block) if self.block else None, "ignored": list(self.ignored),
                "quantized_tensors": self.quantized_tensors, "float_tensors": self.float_tensors}


# ---- config.json quantization_config ----

def from_quantization_config(cfg: Any) -> QuantInfo:
    """QuantInfo from config.json's `quantization_config`; one line naming the problem otherwise."""
    if not isinstance(cfg, dict):
        raise UsageError(f"config.json: 'quantization_config' must be an object, got {cfg!r}; fix or re-download config.json")
    given = cfg.get("quant_method")
    if not isinstance(given, str) or not given:
        raise UsageError("config.json: 'quantization_config' has no 'quant_method'; add it (e.g. \"awq\", \"gptq\", "
                         "\"compressed-tensors\", \"fp8\") or remove the block for a float checkpoint")
    name = given.lower()
    method = ALIASES.get(name, name)
    parser = {"awq": _awq, "gptq": _gptq, "compressed-tensors": _compressed_tensors, "fp8": _fp8}.get(method)
    if parser is not None:
        return parser(cfg)
    if name in OTHER_VLLM_METHODS:
        return QuantInfo(method=name, source="config.json", scheme=f"{name} (not parsed in detail)", raw=cfg)
    known = ", ".join(sorted({*DETAILED, *OTHER_VLLM_METHODS}))
    raise UsageError(f"config.json: quantization_config.quant_method {given!r} is not a method vLLM knows "
                     f"({known}); fix quant_method or quantize with one of them")


def _bits(cfg: dict, *names: str) -> int:
    for name in names:
        value = cfg.get(name)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 32:
                raise UsageError(f"config.json: quantization_config.{name} must be a bit width 1-32, got {value!r}")
            return value
    raise UsageError(f"config.json: quantization_config has no '{names[0]}'; add the weights' bit width")


def _group(value: Any, where: str) -> int | None:
    """-1 / None / 0: one scale per output channel."""
    if value is None or value in (-1, 0):
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"config.json: {where} must be a positive integer or -1, got {value!r}")
    return value


def _label(wbits: int | None, abits: int | None, kind: str | None, group: int | None, sym: bool | None) -> str:
    text = f"W{wbits}A{abits or 16} {kind or ''}".rstrip()
    text += f", group {group}" if group else ", per channel"
    return text + ("" if sym is None else ", symmetric" if sym else ", asymmetric")


def _awq(cfg: dict) -> QuantInfo:
    bits = _bits(cfg, "bits", "w_bit")
    group = _group(cfg.get("group_size", cfg.get("q_group_size")), "quantization_config.group_size")
    sym = not bool(cfg.get("zero_point", True))
    return QuantInfo(method="awq", source="config.json", scheme="AWQ " + _label(bits, None, "int", group, sym),
                     weight_bits=bits, weight_type="int", group_size=group, symmetric=sym,
                     ignored=tuple(cfg.get("modules_to_not_convert") or ()), raw=cfg)


def _gptq(cfg: dict) -> QuantInfo:
    bits = _bits(cfg, "bits")
    group = _group(cfg.get("group_size"), "quantization_config.group_size")
    sym = bool(cfg.get("sym", True))
    scheme = "GPTQ " + _label(bits, None, "int", group, sym) + (", act-order" if cfg.get("desc_act") else "")
    return QuantInfo(method="gptq", source="config.json", scheme=scheme, weight_bits=bits, weight_type="int",
                     group_size=group, symmetric=sym, raw=cfg)


def _compressed_tensors(cfg: dict) -> QuantInfo:
    groups = cfg.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise UsageError("config.json: compressed-tensors quantization_config has no 'config_groups'; "
                         "fix or re-export the checkpoint")
    first = next(iter(groups.values()))
    weights = first.get("weights") if isinstance(first, dict) else None
    if not isinstance(weights, dict):
        raise UsageError("config.json: compressed-tensors config group has no 'weights' block; fix or re-export the checkpoint")
    acts = first.get("input_activations") if isinstance(first.get("input_activations"), dict) else None
    bits = _bits(weights, "num_bits")
    kind = str(weights.get("type", "int"))
    group = _group(weights.get("group_size"), "config_groups.weights.group_size")
    block = weights.get("block_structure")
    sym = weights.get("symmetric")
    scheme = f"compressed-tensors {cfg.get('format', '')} " + _label(
        bits, acts.get("num_bits") if acts else None, kind, group, None if sym is None else bool(sym))
    if len(groups) > 1:
        scheme += f" (+{len(groups) - 1} more group{'s' if len(groups) > 2 else ''})"
    return QuantInfo(method="compressed-tensors", source="config.json", scheme=" ".join(scheme.split()),
                     weight_bits=bits, weight_type=kind, activation_bits=acts.get("num_bits") if acts else None,
                     group_size=group, symmetric=None if sym is None else bool(sym),
                     block=tuple(block) if isinstance(block, list) and len(block) == 2 else None,
                     ignored=tuple(cfg.get("ignore") or ()), raw=cfg)


def _fp8(cfg: dict) -> QuantInfo:
    block = cfg.get("weight_block_size")
    if block is not None and not (isinstance(block, list) and len(block) == 2 and all(isinstance(b, int) and b > 0 for b in block)):
        raise UsageError(f"config.json: quantization_config.weight_block_size must be [rows, cols], got {block!r}")
    scheme = f"FP8 W8A8 ({cfg.get('activation_scheme', 'dynamic')} activations)"
    scheme += f", block {block[0]}x{block[1]}" if block else ", per tensor"
    return QuantInfo(method="fp8", source="config.json", scheme=scheme, weight_bits=8, weight_type="float",
                     activation_bits=8, block=tuple(block) if block else None,
                     ignored=tuple(cfg.get("modules_to_not_convert") or cfg.get("ignored_layers") or ()), raw=cfg)


# ---- msmodelslim ----

_MSMODELSLIM_TYPE = re.compile(r"^W(\d+)A(\d+)")


def from_msmodelslim(desc: Any, filename: str = "quant_model_description.json") -> QuantInfo:
    """QuantInfo from msmodelslim's description: {"model_quant_type": "W8A8", "<tensor>.weight": "W8A8" | "FLOAT"}."""
    if not isinstance(desc, dict):
        raise UsageError(f"{filename}: expected a JSON object (tensor name -> quant type); re-export it with msmodelslim")
    weights = {k: v for k, v in desc.items() if k.endswith(".weight") and isinstance(v, str)}
    quantized = [v for v in weights.values() if v.upper() != "FLOAT"]
    kind = desc.get("model_quant_type") or (max(set(quantized), key=quantized.count) if quantized else None)
    if not quantized or not isinstance(kind, str):
        raise UsageError(f"{filename}: no tensor is quantized (every weight is FLOAT); serve the float checkpoint "
                         "without it, or re-export it with msmodelslim")
    match = _MSMODELSLIM_TYPE.match(kind.upper())
    if not match:
        raise UsageError(f"{filename}: model_quant_type {kind!r} is not of the form WnAm (W8A8, W8A8_DYNAMIC, W4A8_DYNAMIC, ...)")
    wbits, abits = int(match.group(1)), int(match.group(2))
    return QuantInfo(method=MSMODELSLIM, source=filename, scheme=f"msmodelslim {kind.upper()}", weight_bits=wbits,
                     weight_type="int", activation_bits=abits if abits < 16 else None,
                     quantized_tensors=len(quantized), float_tensors=len(weights) - len(quantized), raw=desc)


# ---- detection (reads files) ----

def detect_quant(model_dir: Path, config: ConfigJson) -> QuantInfo | None:
    """The checkpoint's quantization: msmodelslim's description file first, else config.json's block."""
    descriptions = sorted(Path(model_dir).glob(MSMODELSLIM_GLOB))
    if descriptions:
        path = descriptions[0]
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: malformed JSON ({exc}); re-export it with msmodelslim") from None
        return from_msmodelslim(data, path.name)
    return quant_in_config(config)


def quant_in_config(config: ConfigJson) -> QuantInfo | None:
    cfg = config.get("quantization_config")
    if cfg is None and isinstance(config.get("text_config"), dict):
        cfg = config["text_config"].get("quantization_config")
    return None if cfg is None else from_quantization_config(cfg)


# ---- what each engine needs ----

def transformers_problem(quant: QuantInfo | None) -> str | None:
    """Why transformers cannot load this checkpoint on this machine (one line), or None.

    Asks transformers' own quantizer for the method (its validate_environment checks the packages and
    devices it needs) instead of keeping a second list here."""
    if quant is None:
        return None
    if quant.method == MSMODELSLIM:
        return (f"transformers cannot load msmodelslim checkpoints ({quant.source}): it would read the int8 weights "
                "as floats. Serve it on vLLM-Ascend and run `compare FLOAT_MODEL --endpoint URL`")
    if quant.method == "fp8" and quant.block is None:
        # transformers' FP8 quantizer assumes block scales (weight_scale_inv, 128x128 by default): a per-tensor
        # checkpoint's weight_scale is dropped as an unexpected key and the raw FP8 values load unscaled
        # (measured here: weights off by 900x).
        return ("transformers reads FP8 checkpoints with block scales (weight_block_size, weight_scale_inv) only; "
                "this per-tensor one would load with its scales dropped. Serve it with vLLM and run "
                "`compare FLOAT_MODEL --endpoint URL`")
    from transformers.quantizers.auto import AutoHfQuantizer

    try:
        quantizer = AutoHfQuantizer.from_config(dict(quant.raw), pre_quantized=True)
        quantizer.validate_environment(device_map=None, weights_only=True, dtype=None)
    except (ImportError, RuntimeError, ValueError, KeyError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return f"transformers cannot load this {quant.method} checkpoint here: {first}"
    return None


def measures_line(quant: QuantInfo, dtype: str, floor: str | None) -> str:
    """What comparing this quantized --target-model with its float original measures (one line)."""
    line = (f"this measures quantization error: the {quant.scheme} checkpoint, as transformers loads it at {dtype}, "
            "against the float checkpoint as the gold")
    return line + (f"; the noise floor {floor} is the float checkpoint at {dtype}, so the ratio is the error "
                   "quantization adds" if floor else "; nothing else differs, so all of the error is quantization's")


def with_measures(verdict: dict[str, Any], quant: QuantInfo, dtype: str, floor: str | None) -> dict[str, Any]:
    """A target's verdict with the line saying what it measures, first among its reasons and its checks
    (an "info" row: it informs, it does not judge)."""
    line = measures_line(quant, dtype, floor)
    row = {"name": "what this target's error measures", "value": line, "status": "info",
           "threshold": "-", "source": f"{quant.source}: {quant.method}"}
    return {**verdict, "measures": line, "reasons": [line, *verdict.get("reasons", [])],
            "checks": [row, *verdict.get("checks", [])]}
