"""bf16 numerics with fp32 matmuls, for a CPU without native bf16 (AVX2 only, Kunpeng 920).

There torch's bf16 matmul runs through a slow conversion path (9.7 GFLOP/s against 66 GFLOP/s for
fp32, measured side by side), and every bf16 noise floor pays it. The floor does not need that
path, only its numbers: weights and activations stored in bf16, products summed in fp32, one
rounding per stored result. So the model stays a bf16 model (its weights are the bf16 weights, its
element-wise ops run in bf16 as they would natively) and only the products are redirected: each
matmul takes its bf16 operands up to fp32 (exact: a bf16 x bf16 product fits fp32's mantissa), sums
in fp32 and rounds the result to bf16 once, as a bf16 GEMM with fp32 accumulation stores it.
Attention computes its scores in fp32 and, like torch's CPU flash attention for reduced types,
rounds the unnormalised probabilities to bf16 before they meet V.

What differs from a native kernel is the order of the fp32 sums, the same kind of difference the
floor's kernel-spread rerun measures; benchmarks/bf16_emulation.py measures it side by side.
"""

from __future__ import annotations

import math
import weakref

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

BF16 = torch.bfloat16
LABEL = "bf16 emulated in fp32"
QUERY_BLOCK = 128  # attention rows per block: bounds the fp32 scores (and was fastest here at 2.5k tokens)


def _f32(t):
    return t.float() if torch.is_tensor(t) and t.dtype == BF16 else t


class WeightCopies:
    """fp32 copies of bf16 weights, made once: a decode step would otherwise widen every weight
    again. Bounded by a byte budget; past it weights are widened per call."""

    def __init__(self, budget_bytes: int):
        self.budget, self.used = budget_bytes, 0
        self.copies: dict[int, tuple[weakref.ref, torch.Tensor]] = {}  # id -> (the weight, its copy)

    def get(self, weight: torch.Tensor) -> torch.Tensor:
        if weight.dtype != BF16:
            return weight
        held = self.copies.get(id(weight))
        if held is not None and held[0]() is weight:
            return held[1]
        wide = weight.float()
        if isinstance(weight, torch.nn.Parameter) and self.used + wide.nbytes <= self.budget:
            self.copies[id(weight)] = (weakref.ref(weight), wide)
            self.used += wide.nbytes
        return wide


def _linear_with(copies: WeightCopies):
    def linear(x, weight, bias=None):
        return F.linear(x.float(), copies.get(weight), None if bias is None else bias.float()).to(BF16)
    return linear


def _product(func):
    def run(a, b, *rest, **kwargs):
        return func(_f32(a), _f32(b), *rest, **kwargs).to(BF16)
    return run


def _addmm(func):
    def run(base, a, b, *rest, **kwargs):
        return func(_f32(base), _f32(a), _f32(b), *rest, **kwargs).to(BF16)
    return run


def sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    """scaled_dot_product_attention for bf16 operands: fp32 scores and sums, probabilities rounded
    to bf16 before the product with V, output rounded once. Fully masked rows give zeros.

    Query rows go in blocks; a causal block reads only the keys it can see, and grouped KV heads are
    broadcast rather than copied."""
    if dropout_p:
        raise ValueError("bf16 emulation: attention dropout is not supported (evaluation runs without it)")
    q, k, v = query.float(), key.float(), value.float()
    *batch, heads, length, dim = q.shape
    kv_heads, source = k.shape[-3], k.shape[-2]
    group = heads // kv_heads
    q = q.reshape(*batch, kv_heads, group, length, dim)
    keys_t, values = k.transpose(-2, -1).unsqueeze(-3), v.unsqueeze(-3)  # [..., kv_heads, 1, dim|source, ...]
    mask = _grouped_mask(attn_mask, heads, kv_heads, group) if attn_mask is not None else None
    scale = 1.0 / math.sqrt(dim) if scale is None else scale
    out = torch.empty(*q.shape[:-1], v.shape[-1])
    for start in range(0, length, QUERY_BLOCK):
        stop = min(start + QUERY_BLOCK, length)
        seen = stop + (source - length) if is_causal else source  # query i sees keys up to i + (source - length)
        scores = torch.matmul(q[..., start:stop, :], keys_t[..., :seen]).mul_(scale)
        if is_causal:  # only keys past the block's first query can be hidden from one of its queries
            rows = torch.arange(start, stop).unsqueeze(-1) + (source - length)
            first = min(max(start + source - length + 1, 0), seen)
            scores[..., first:].masked_fill_(torch.arange(first, seen) > rows, float("-inf"))
        if mask is not None:
            block = mask[..., start:stop, :seen] if mask.shape[-2] == length else mask[..., :seen]
            if block.dtype == torch.bool:
                scores.masked_fill_(~block, float("-inf"))
            else:
                scores.add_(block.float())
        peak = scores.amax(dim=-1, keepdim=True)
        scores.sub_(torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))).exp_()
        total = scores.sum(dim=-1, keepdim=True).clamp_min_(torch.finfo(torch.float32).tiny)
        rows_out = out[..., start:stop, :]
        torch.matmul(scores.to(BF16).float(), values[..., :seen, :], out=rows_out)
        rows_out.div_(total)
    return out.reshape(*batch, heads, length, v.shape[-1]).to(BF16)


def _grouped_mask(mask: torch.Tensor, heads: int, kv_heads: int, group: int) -> torch.Tensor:
    """A [..., heads | 1, L, S] mask laid out as the grouped scores: [..., kv_heads | 1, group | 1, L, S]."""
    if mask.dim() < 3 or mask.shape[-3] == 1:
        return mask.unsqueeze(-3)
    return mask.reshape(*mask.shape[:-3], kv_heads, group, *mask.shape[-2:])


def _attention(query, key, value, *args, **kwargs):
    if query.dtype != BF16:
        return F.scaled_dot_product_attention(query, key, value, *args, **kwargs)
    return sdpa(query, key, value, *args, **kwargs)


_REDIRECT = {
    torch.matmul: _product(torch.matmul),
    torch.Tensor.matmul: _product(torch.matmul),
    torch.Tensor.__matmul__: _product(torch.matmul),
    torch.mm: _product(torch.mm),
    torch.Tensor.mm: _product(torch.mm),
    torch.bmm: _product(torch.bmm),
    torch.Tensor.bmm: _product(torch.bmm),
    torch.baddbmm: _addmm(torch.baddbmm),
    torch.addmm: _addmm(torch.addmm),
    F.scaled_dot_product_attention: _attention,
}


def default_budget() -> int:
    """fp32 weight copies may take a third of the memory available now."""
    import psutil

    return int(psutil.virtual_memory().available / 3)


class Bf16Emulation(TorchFunctionMode):
    """Inside this mode, every matmul whose operands are bf16 runs in fp32 and is rounded to bf16.
    Keep one instance per model: it holds that model's fp32 weight copies."""

    def __init__(self, copies: WeightCopies | None = None):
        super().__init__()
        self.copies = copies or WeightCopies(default_budget())
        self.redirect = {**_REDIRECT, F.linear: _linear_with(self.copies)}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        redirect = self.redirect.get(func)
        if redirect is not None and args and torch.is_tensor(args[0]) and _any_bf16(args):
            return redirect(*args, **kwargs)
        return func(*args, **kwargs)


def _any_bf16(args) -> bool:
    return any(torch.is_tensor(a) and a.dtype == BF16 for a in args[:3])
