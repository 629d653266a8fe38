"""Small pre-quantized checkpoints written by our own code, one per layout engines read.

Each writer takes a float model directory (a tiny random Llama) and a destination, quantizes every
decoder linear (q/k/v/o, gate/up/down) the way that format stores it, and writes config.json (with
its quantization_config) or msmodelslim's description file. Layouts follow the formats' loaders:
AWQ GEMM (qweight [in, out/8] int32 in AWQ's nibble order, qzeros, fp16 scales), GPTQ (qweight
[in/8, out], qzeros, scales, g_idx), compressed-tensors (pack-quantized W4A16: weight_packed,
weight_scale, weight_shape; int-quantized W8A8: int8 weight + weight_scale), FP8 (float8_e4m3fn weight
+ weight_scale, or block-wise weight_scale_inv) and msmodelslim W8A8 (int8 weight, input_scale,
input_offset, quant_bias, deq_scale).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
GROUP = 32
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # nibble i of a packed int32 holds column AWQ_ORDER[i] of 8


def is_linear(name: str) -> bool:
    return name.endswith(".weight") and any(f".{proj}." in name for proj in LINEARS)


def pack_int4(q: torch.Tensor, dim: int, order: tuple[int, ...] = tuple(range(8))) -> torch.Tensor:
    """uint4 values (0..15) packed 8 per int32 along `dim`."""
    q = q.movedim(dim, -1).to(torch.int64)
    q = q.reshape(*q.shape[:-1], q.shape[-1] // 8, 8)[..., list(order)]
    packed = sum(q[..., i] << (4 * i) for i in range(8))
    packed = torch.where(packed >= 2**31, packed - 2**32, packed).to(torch.int32)
    return packed.movedim(-1, dim)


def unpack_int4(packed: torch.Tensor, dim: int, order: tuple[int, ...] = tuple(range(8))) -> torch.Tensor:
    p = packed.movedim(dim, -1).to(torch.int64) & 0xFFFFFFFF
    nibbles = torch.stack([(p >> (4 * i)) & 0xF for i in range(8)], dim=-1)
    out = torch.empty_like(nibbles)
    out[..., list(order)] = nibbles
    return out.reshape(*p.shape[:-1], p.shape[-1] * 8).movedim(-1, dim)


def int4_groups(w: torch.Tensor, symmetric: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """w [out, in] -> (q [in, out] uint4, scales [in/G, out], zeros [in/G, out]) with one scale per
    GROUP inputs of each output, as AWQ and GPTQ store them."""
    wt = w.t().float().reshape(w.shape[1] // GROUP, GROUP, w.shape[0])  # [groups, G, out]
    if symmetric:
        scale = (wt.abs().amax(1) / 7).clamp_min(1e-8)
        zero = torch.full_like(scale, 8)
    else:
        lo, hi = wt.amin(1), wt.amax(1)
        scale = ((hi - lo) / 15).clamp_min(1e-8)
        zero = torch.round(-lo / scale).clamp(0, 15)
    q = torch.round(wt / scale[:, None] + zero[:, None]).clamp(0, 15)
    return q.reshape(w.shape[1], w.shape[0]).to(torch.int64), scale, zero.to(torch.int64)


def _rewrite(src: Path, dst: Path, quantize: Callable[[str, torch.Tensor, dict], None],
             quant_config: dict | None) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    weights = load_file(dst / "model.safetensors")
    out: dict[str, torch.Tensor] = {}
    for name, tensor in weights.items():
        if is_linear(name):
            quantize(name.removesuffix(".weight"), tensor, out)
        else:
            out[name] = tensor.to(torch.float16)
    save_file({k: v.contiguous() for k, v in out.items()}, dst / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((dst / "config.json").read_text())
    config["torch_dtype"] = "float16"
    if quant_config is not None:
        config["quantization_config"] = quant_config
    (dst / "config.json").write_text(json.dumps(config, indent=2))
    return dst


def awq(src: Path, dst: Path) -> Path:
    def quantize(prefix, w, out):
        q, scale, zero = int4_groups(w, symmetric=False)
        out[f"{prefix}.qweight"] = pack_int4(q, 1, AWQ_ORDER)
        out[f"{prefix}.qzeros"] = pack_int4(zero, 1, AWQ_ORDER)
        out[f"{prefix}.scales"] = scale.to(torch.float16)
    return _rewrite(src, dst, quantize, {"quant_method": "awq", "bits": 4, "group_size": GROUP,
                                         "zero_point": True, "version": "gemm"})


def gptq(src: Path, dst: Path, bits: int = 4) -> Path:
    def quantize(prefix, w, out):
        q, scale, zero = int4_groups(w, symmetric=True)
        out[f"{prefix}.qweight"] = pack_int4(q, 0)
        out[f"{prefix}.qzeros"] = pack_int4(zero - 1, 1)  # GPTQ's v1 format stores zero - 1
        out[f"{prefix}.scales"] = scale.to(torch.float16)
        out[f"{prefix}.g_idx"] = (torch.arange(w.shape[1]) // GROUP).to(torch.int32)
    return _rewrite(src, dst, quantize, {"quant_method": "gptq", "bits": bits, "group_size": GROUP,
                                         "desc_act": False, "sym": True, "checkpoint_format": "gptq"})


def compressed_w4a16(src: Path, dst: Path) -> Path:
    def quantize(prefix, w, out):
        q, scale, _ = int4_groups(w, symmetric=True)
        out[f"{prefix}.weight_packed"] = pack_int4(q.t(), 1)  # [out, in/8], signed int4 offset by 8
        out[f"{prefix}.weight_scale"] = scale.t().contiguous().to(torch.bfloat16)  # [out, in/G]
        out[f"{prefix}.weight_shape"] = torch.tensor(list(w.shape), dtype=torch.int64)
    group = {"targets": ["Linear"], "input_activations": None,
             "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": GROUP}}
    return _rewrite(src, dst, quantize, {"quant_method": "compressed-tensors", "format": "pack-quantized",
                                         "config_groups": {"group_0": group}, "ignore": ["lm_head"],
                                         "quantization_status": "compressed"})


def compressed_w8a8(src: Path, dst: Path) -> Path:
    def quantize(prefix, w, out):
        scale = (w.float().abs().amax(1, keepdim=True) / 127).clamp_min(1e-8)
        out[f"{prefix}.weight"] = torch.round(w.float() / scale).clamp(-127, 127).to(torch.int8)
        out[f"{prefix}.weight_scale"] = scale.to(torch.float32)
    act = {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True}
    group = {"targets": ["Linear"], "input_activations": act,
             "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel"}}
    return _rewrite(src, dst, quantize, {"quant_method": "compressed-tensors", "format": "int-quantized",
                                         "config_groups": {"group_0": group}, "ignore": ["lm_head"],
                                         "quantization_status": "compressed"})


FP8_MAX = 448.0  # largest float8_e4m3fn


def fp8(src: Path, dst: Path, block: int | None = None) -> Path:
    def quantize(prefix, w, out):
        w = w.float()
        if block is None:
            scale = (w.abs().max() / FP8_MAX).clamp_min(1e-12)
            out[f"{prefix}.weight"] = (w / scale).to(torch.float8_e4m3fn)
            out[f"{prefix}.weight_scale"] = scale.reshape(()).to(torch.float32)
            return
        rows, cols = w.shape[0] // block, w.shape[1] // block
        tiles = w.reshape(rows, block, cols, block)
        scale = (tiles.abs().amax((1, 3)) / FP8_MAX).clamp_min(1e-12)  # [rows, cols]
        out[f"{prefix}.weight"] = (tiles / scale[:, None, :, None]).reshape(w.shape).to(torch.float8_e4m3fn)
        out[f"{prefix}.weight_scale_inv"] = scale.to(torch.float32)
    config = {"quant_method": "fp8", "activation_scheme": "dynamic"}
    if block is not None:
        config["weight_block_size"] = [block, block]
    return _rewrite(src, dst, quantize, config)


def msmodelslim_w8a8(src: Path, dst: Path, float_layers: tuple[str, ...] = ("model.layers.0.mlp.down_proj",)) -> Path:
    """W8A8 static as msmodelslim exports it; `float_layers` stay FLOAT (as its fallback layers do)."""
    description: dict[str, str] = {"model_quant_type": "W8A8", "version": "1.0.0"}

    def quantize(prefix, w, out):
        if prefix in float_layers:
            out[f"{prefix}.weight"] = w.to(torch.float16)
            description[f"{prefix}.weight"] = "FLOAT"
            return
        scale = (w.float().abs().amax(1) / 127).clamp_min(1e-8)
        act_scale = torch.tensor([0.02])
        out[f"{prefix}.weight"] = torch.round(w.float() / scale[:, None]).clamp(-128, 127).to(torch.int8)
        out[f"{prefix}.input_scale"] = act_scale.to(torch.float16)
        out[f"{prefix}.input_offset"] = torch.zeros(1, dtype=torch.float16)
        out[f"{prefix}.quant_bias"] = torch.zeros(w.shape[0], dtype=torch.int32)
        out[f"{prefix}.deq_scale"] = (scale * act_scale).to(torch.float32)
        for suffix in ("weight", "input_scale", "input_offset", "quant_bias", "deq_scale"):
            description[f"{prefix}.{suffix}"] = "W8A8"

    _rewrite(src, dst, quantize, None)
    for name in load_file(dst / "model.safetensors"):
        description.setdefault(name, "FLOAT")
    (dst / "quant_model_description.json").write_text(json.dumps(description, indent=2))
    return dst


LAYOUTS: dict[str, Callable[[Path, Path], Path]] = {
    "awq": awq, "gptq": gptq, "compressed-w4a16": compressed_w4a16, "compressed-w8a8": compressed_w8a8,
    "fp8": fp8, "fp8-block": lambda s, d: fp8(s, d, block=32), "msmodelslim-w8a8": msmodelslim_w8a8,
}
