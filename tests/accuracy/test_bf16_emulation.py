"""bf16 numerics with fp32 matmuls: the products a native bf16 kernel would store, at fp32 speed."""

import pytest
import torch
import torch.nn.functional as F

from llm_adapt.accuracy.bf16_emulation import Bf16Emulation, sdpa
from llm_adapt.accuracy.runner import Runner, RunnerSpec

BF16 = torch.bfloat16


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def test_a_matmul_is_summed_in_fp32_and_rounded_once():
    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(64, 512, generator=gen).to(BF16), torch.randn(256, 512, generator=gen).to(BF16)
    exact = F.linear(x.double(), w.double())
    with Bf16Emulation():
        out = F.linear(x, w)
        prod = x @ w.T
    assert out.dtype == BF16 and prod.dtype == BF16
    assert torch.equal(out, F.linear(x.float(), w.float()).to(BF16))  # the fp32 sum, rounded once
    assert torch.equal(prod, out)
    step = torch.finfo(BF16).eps * exact.abs()  # one bf16 step at each value
    assert ((out.double() - exact).abs() <= step).all()
    assert rel(out, exact) > 0  # it is bf16, not fp32


def test_fp32_work_inside_the_mode_is_untouched():
    x = torch.randn(8, 16)
    with Bf16Emulation():
        out = F.linear(x, torch.eye(16))
    assert out.dtype == torch.float32 and torch.equal(out, x)


@pytest.mark.parametrize("causal", [True, False])
def test_attention_matches_fp32_attention_to_bf16_rounding(causal):
    gen = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 4, 40, 32, generator=gen).to(BF16) for _ in range(3))
    exact = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
    out = sdpa(q, k, v, is_causal=causal)
    assert out.dtype == BF16
    assert 0 < rel(out, exact) < 2e-2  # bf16 probabilities and output: a few bf16 steps, no more


def test_attention_with_a_mask_gqa_and_a_fully_masked_row():
    gen = torch.Generator().manual_seed(2)
    q = torch.randn(1, 4, 6, 16, generator=gen).to(BF16)
    k, v = (torch.randn(1, 2, 6, 16, generator=gen).to(BF16) for _ in range(2))
    mask = torch.ones(1, 1, 6, 6, dtype=torch.bool).tril()
    mask[..., 0, :] = False  # a padded query row sees nothing
    out = sdpa(q, k, v, attn_mask=mask, enable_gqa=True)
    assert torch.isfinite(out).all() and torch.count_nonzero(out[..., 0, :]) == 0
    exact = F.scaled_dot_product_attention(q.float(), k.float().repeat_interleave(2, 1), v.float().repeat_interleave(2, 1),
                                           attn_mask=mask)
    assert rel(out[..., 1:, :], exact[..., 1:, :]) < 2e-2
    additive = torch.zeros(1, 1, 6, 6).masked_fill(~mask, float("-inf"))
    assert torch.equal(sdpa(q, k, v, attn_mask=additive, enable_gqa=True)[..., 1:, :], out[..., 1:, :])


def test_an_emulated_runner_errs_like_a_native_one(tiny_llama):
    """The point of it: its error against fp32 is bf16's error, of the native kernel's size."""
    ids = list(range(5, 45))
    gold = Runner(RunnerSpec("cpu", "fp32"), tiny_llama).capture(ids)
    native = Runner(RunnerSpec("cpu", "bf16"), tiny_llama).capture(ids)
    emulated_runner = Runner(RunnerSpec("cpu", "bf16", emulated=True), tiny_llama)
    emulated = emulated_runner.capture(ids)
    for g, n, e in zip(gold.hidden[1:], native.hidden[1:], emulated.hidden[1:]):
        err_native, err_emulated = rel(n, g), rel(e, g)
        assert err_emulated > 1e-4  # not fp32
        assert 0.7 < err_emulated / err_native < 1.4, (err_native, err_emulated)
    assert rel(emulated.logits, gold.logits) < 3 * rel(native.logits, gold.logits)
    tokens = emulated_runner.generate_all([ids[:10], ids[:7]], 4, eos_ids=[])
    assert [len(t) for t in tokens] == [4, 4]
