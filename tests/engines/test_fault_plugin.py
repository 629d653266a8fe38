"""The engine fault injector's own logic on plain data: its fault syntax and prefill/decode split."""

import pytest
import torch

from llm_adapt.engines.fault_plugin import (
    EngineFault,
    decode_mask,
    parse_fault,
    register,
    sparse_rows,
)


def test_fault_syntax():
    assert parse_fault("decode-only:5:1.5") == EngineFault("decode-only", 5, 1.5)
    assert parse_fault("rope-beyond:40") == EngineFault("rope-beyond", None, 40.0)
    assert parse_fault("attention-scale:3:2").label == "attention-scale:3:2"
    assert parse_fault("foreign-kv:5:3") == EngineFault("foreign-kv", 5, 3.0)
    assert parse_fault("graph-only:1:3") == EngineFault("graph-only", 1, 3.0)
    for bad in ("decode-only:5", "rope-beyond:x", "sideways:1:2", "scaled:one:2", "foreign-kv:5:x", "foreign-kv:5"):
        with pytest.raises(ValueError, match="LLM_ADAPT_ENGINE_FAULT"):
            parse_fault(bad)


def test_the_sparse_faults_hit_the_prompts_of_their_shape_only():
    # two prompts from 0 (4 and 5 tokens) in one step, then a decode token
    two = torch.tensor([0, 1, 2, 3, 0, 1, 2, 3, 4, 17])
    alone = torch.tensor([0, 1, 2, 3, 4, 5, 6, 7])
    batched = parse_fault("batched:5:1.3:2")
    assert batched.label == "batched:5:1.3:2"
    assert sparse_rows(batched, two, {}).tolist() == [True] * 9 + [False]  # both prompts, never the decode token
    assert sparse_rows(batched, alone, {}).tolist() == [False] * 8  # a prompt prefilled alone is never hit
    aligned = parse_fault("block-aligned:5:1.3:4")
    assert sparse_rows(aligned, two, {}).tolist() == [True] * 4 + [False] * 6  # the 4-token prompt, not the 5
    assert sparse_rows(aligned, alone, {}).tolist() == [True] * 8
    for bad in ("batched:5:1.3", "block-aligned:5:1.3:0"):
        with pytest.raises(ValueError, match="LLM_ADAPT_ENGINE_FAULT"):
            parse_fault(bad)


def test_decode_tokens_are_the_short_runs_of_a_flat_batch():
    # a 5-token prompt chunk from 0, two decode tokens (positions 40 and 17), another prompt from 0
    positions = torch.tensor([0, 1, 2, 3, 4, 40, 17, 0, 1, 2])
    assert decode_mask(positions).tolist() == [False] * 5 + [True, True] + [False] * 3
    assert decode_mask(torch.tensor([12])).tolist() == [True]  # one request decoding alone
    assert decode_mask(torch.tensor([], dtype=torch.long)).tolist() == []


def test_off_without_the_variable(monkeypatch):
    monkeypatch.delenv("LLM_ADAPT_ENGINE_FAULT", raising=False)
    assert register() is False


def test_a_fault_file_is_read_again_as_it_changes(tmp_path):
    from llm_adapt.engines.fault_plugin import FaultFile

    path = tmp_path / "fault"
    source = FaultFile(str(path))
    assert source.current() is None  # no file: no fault
    path.write_text("decode-only:5:1.5\n")
    assert source.current() == EngineFault("decode-only", 5, 1.5)
    path.write_text("rope-beyond:32")
    assert source.current() == EngineFault("rope-beyond", None, 32.0)
    path.write_text("")
    assert source.current() is None
    path.write_text("sideways:1:2")
    with pytest.raises(ValueError, match="LLM_ADAPT_ENGINE_FAULT"):
        source.current()


class _Impl:
    scale = 0.125


class _Attn(torch.nn.Module):
    def __init__(self, cache):
        super().__init__()
        self.impl = _Impl()
        self.kv_cache = cache


class _Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = _Attn(torch.tensor([float(len(_CACHES))]))
        _CACHES.append(self.attn.kv_cache)
        self.seen = []
        self.caches = []

    def forward(self, positions, hidden_states):
        self.seen.append((positions.tolist(), self.attn.impl.scale))
        self.caches.append(int(self.attn.kv_cache))
        return hidden_states


_CACHES: list = []


class _Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.self_attn = _Attention()
        self.mlp = torch.nn.Identity()

    def forward(self, positions, hidden_states, residual):
        return self.mlp(self.self_attn(positions, hidden_states) + 1.0), residual


class _Inner(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = torch.nn.ModuleList(_Layer() for _ in range(n))

    def forward(self, positions, hidden):
        residual = None
        for layer in self.layers:
            hidden, residual = layer(positions, hidden, residual)
        return hidden


def test_one_planted_engine_serves_each_fault_of_the_file_in_turn(tmp_path):
    """vLLM's module shapes in miniature: a switched fault acts on its layer only, and switching it
    off gives the clean output back."""
    from llm_adapt.engines.fault_plugin import FaultFile, plant

    model = torch.nn.Module()
    model.model = _Inner(3)
    seen = []  # a hook registered before the fault, as the layer capture may be: it must see the fault
    model.model.layers[2].register_forward_hook(lambda m, a, out: seen.append(float(out[0].max())))
    in_mlp = []  # the scaled faults sit in the MLP: the served part pass records its output there
    model.model.layers[2].mlp.register_forward_hook(lambda m, a, out: in_mlp.append(float(out.max())))
    path = tmp_path / "fault"
    plant(model, FaultFile(str(path)))
    positions, hidden = torch.arange(40, 44), torch.zeros(4, 2)
    clean = model.model(positions, hidden)
    path.write_text("scaled:2:3")
    assert torch.equal(model.model(positions, hidden), torch.full((4, 2), 3.0 * 3))  # layer 2's 3 -> 9
    assert seen[-2:] == [3.0, 9.0]  # clean, then the faulty output, as recorded by the earlier hook
    assert in_mlp[-2:] == [3.0, 9.0]
    path.write_text("attention-scale:1:2")
    model.model(positions, hidden)
    assert [s for _, s in (layer.self_attn.seen[-1] for layer in model.model.layers)] == [0.125, 0.25, 0.125]
    path.write_text("rope-beyond:41")
    model.model(positions, hidden)
    assert model.model.layers[0].self_attn.seen[-1] == ([40, 41, 58, 59], 0.125)
    path.write_text("foreign-kv:2:0")
    model.model(positions, hidden)
    own = [layer.self_attn.attn.kv_cache for layer in model.model.layers]
    assert [layer.self_attn.caches[-1] for layer in model.model.layers] == [int(own[0]), int(own[1]), int(own[0])]
    assert own[2] is not own[0] and int(own[2]) != int(own[0])  # layer 2 ran on layer 0's cache, its own is back
    path.write_text("")
    assert torch.equal(model.model(positions, hidden), clean)
    assert model.model.layers[0].self_attn.seen[-1][0] == [40, 41, 42, 43]


def test_the_graph_only_fault_lives_in_the_compiled_graph_alone():
    """graph-only: the eager model is untouched; the same model compiled carries the fault (the hook adds
    it while dynamo traces), as a graph mode's own bug would."""
    from llm_adapt.engines.fault_plugin import FixedFault, parse_fault, plant

    model = torch.nn.Module()
    model.model = _Inner(3)
    positions, hidden = torch.arange(40, 44), torch.zeros(4, 2)
    clean = model.model(positions, hidden)
    plant(model, FixedFault(parse_fault("graph-only:2:3")))
    assert torch.equal(model.model(positions, hidden), clean)
    torch._dynamo.reset()
    compiled = torch.compile(model.model, backend="eager")
    assert torch.equal(compiled(positions, hidden), torch.full((4, 2), 3.0 * 3))  # layer 2's 3 -> 9
    assert torch.equal(model.model(positions, hidden), clean)  # eager again: still clean


def test_the_setting_faults_syntax():
    assert parse_fault("double-reduce:1") == EngineFault("double-reduce", 1, 0.0)
    assert parse_fault("moe-top-k:1:1@tp") == EngineFault("moe-top-k", 1, 1.0, "tp")
    assert parse_fault("moe-no-renorm:0@ep").label == "moe-no-renorm:0@ep"
    assert parse_fault("scaled:2:3@graph") == EngineFault("scaled", 2, 3.0, "graph")
    assert parse_fault("moe-router-bf16:1").label == "moe-router-bf16:1"
    for bad in ("double-reduce:1:2", "moe-top-k:1", "moe-top-k:1:0", "scaled:2:3@pp", "moe-no-renorm",
                "moe-router-bf16:1:2", "moe-router-bf16"):
        with pytest.raises(ValueError, match="LLM_ADAPT_ENGINE_FAULT"):
            parse_fault(bad)


def test_a_fault_confined_to_a_setting_acts_only_there():
    from llm_adapt.engines.fault_plugin import acts_here

    tp = parse_fault("moe-top-k:1:1@tp")
    assert acts_here(tp, {"tp": 2, "ep": False}) and not acts_here(tp, {"tp": 1, "ep": False})
    ep = parse_fault("moe-no-renorm:1@ep")
    assert acts_here(ep, {"tp": 2, "ep": True}) and not acts_here(ep, {"tp": 2, "ep": False})
    assert not acts_here(parse_fault("scaled:1:2@graph"), {"tp": 1})  # not compiling here
    assert acts_here(parse_fault("scaled:1:2"), {"tp": 1}) and not acts_here(None, {})


def test_routing_faults_on_plain_weights():
    from llm_adapt.engines.fault_plugin import routing_fault

    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    ids = torch.tensor([[1, 0]])  # unsorted, as vLLM's CPU top-k returns them
    probs = torch.softmax(logits, -1)[0]
    weights = torch.tensor([[probs[1] / (probs[0] + probs[1]), probs[0] / (probs[0] + probs[1])]])
    top1 = routing_fault(parse_fault("moe-top-k:0:1"), weights, ids, logits, renormalize=True)
    assert torch.allclose(top1, torch.tensor([[0.0, 1.0]]))  # expert 0 alone, weight 1
    raw = routing_fault(parse_fault("moe-no-renorm:0"), weights, ids, logits, renormalize=True)
    assert torch.allclose(raw, torch.tensor([[probs[1], probs[0]]]))
    assert float(raw.sum()) < 0.95  # the renormalization it drops


def test_a_reduction_twice_is_nothing_on_one_rank_and_n_times_on_n():
    """double-reduce: at TP=1 vLLM's all-reduce returns its input, so the planted fault is clean; at TP>1 the
    hook adds an all-reduce of an output every rank holds whole (shown with the reduction stubbed: x 2)."""
    import sys
    import types

    from llm_adapt.engines.fault_plugin import FixedFault, plant

    model = torch.nn.Module()
    model.model = _Inner(3)
    positions, hidden = torch.arange(40, 44), torch.zeros(4, 2)
    clean = model.model(positions, hidden)
    fake = types.ModuleType("vllm.distributed")
    ranks = {"n": 1}
    fake.tensor_model_parallel_all_reduce = lambda x: x * ranks["n"]
    saved = sys.modules.get("vllm.distributed")
    sys.modules["vllm.distributed"] = fake
    try:
        plant(model, FixedFault(parse_fault("double-reduce:2")), {"tp": 1, "ep": False})
        assert torch.equal(model.model(positions, hidden), clean)
        ranks["n"] = 2
        assert torch.equal(model.model(positions, hidden), torch.full((4, 2), 3.0 * 2))  # layer 2's 3 -> 6
    finally:
        if saved is None:
            sys.modules.pop("vllm.distributed", None)
        else:
            sys.modules["vllm.distributed"] = saved


def test_bf16_rounding_keeps_the_dtype_and_rounds_to_bf16s_step():
    from llm_adapt.engines.fault_plugin import bf16_rounded

    x = torch.tensor([1.0 + 2.0 ** -10, 3.0], dtype=torch.float32)
    rounded = bf16_rounded(x)
    assert rounded.dtype == torch.float32 and rounded.tolist() == [1.0, 3.0]  # 2^-10 is under bf16's step at 1
