"""benchmarks/attention_probe.py's weight edits on plain tensors: the rotary rows it zeroes, and only those."""

import torch

from tests.benchmarks.scripts import load_script

CONFIG = {"qk_nope_head_dim": 2, "qk_rope_head_dim": 3, "kv_lora_rank": 4, "num_attention_heads": 2}


def test_no_rope_zeroes_each_heads_q_pe_rows_and_the_k_pe_rows_only():
    probe = load_script("attention_probe")
    q = probe.without_rope("model.layers.0.self_attn.q_proj.weight", torch.ones(2 * 5, 6), CONFIG).view(2, 5, 6)
    assert q[:, :2].eq(1).all() and q[:, 2:].eq(0).all()  # q_nope kept, q_pe zeroed, in every head
    kv = probe.without_rope("model.layers.0.self_attn.kv_a_proj_with_mqa.weight", torch.ones(4 + 3, 6), CONFIG)
    assert kv[:4].eq(1).all() and kv[4:].eq(0).all()  # the latent kept, k_pe zeroed
    other = torch.ones(3, 6)
    assert probe.without_rope("model.layers.0.mlp.up_proj.weight", other, CONFIG).eq(1).all()
