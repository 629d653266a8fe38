"""benchmarks/rope_kernel.py's reference and its verdict on plain tensors: the reference is DeepSeek's
interleaved rotation, and a difference past fp32 rounding reads DIFFERS."""

import torch

from tests.benchmarks.scripts import load_script


def interleaved(x: torch.Tensor, positions: torch.Tensor, dim: int) -> torch.Tensor:
    """Each adjacent pair (2i, 2i+1) rotated by position x theta_i, written out by hand."""
    theta = 1.0 / (10000.0 ** (torch.arange(0, dim, 2).float() / dim))
    angle = positions[:, None, None].float() * theta
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * angle.cos() - odd * angle.sin()
    out[..., 1::2] = even * angle.sin() + odd * angle.cos()
    return out


def test_the_reference_is_deepseeks_interleaved_rope():
    probe = load_script("rope_kernel")
    positions = torch.arange(probe.TOKENS)
    q, k = torch.randn(probe.TOKENS, probe.HEADS, probe.ROPE), torch.randn(probe.TOKENS, 1, probe.ROPE)
    got_q, got_k = probe.transformers_rope(torch, positions, q, k)
    assert torch.allclose(got_q, interleaved(q, positions, probe.ROPE), atol=1e-5)
    assert torch.allclose(got_k, interleaved(k, positions, probe.ROPE), atol=1e-5)
    assert torch.equal(got_q[0], q[0])  # position 0 is not rotated


def test_rounding_reads_equal_and_a_real_difference_reads_differs():
    probe = load_script("rope_kernel")
    x = torch.randn(4, 2, 8)
    assert probe.row("l", "p", (x, x), (x.clone(), x + 1e-7))["verdict"] == "equal"
    moved = probe.row("l", "p", (x, x), (x, x.flip(-1)))
    assert moved["verdict"] == "DIFFERS" and moved["k"] > 0 and moved["q"] == 0
