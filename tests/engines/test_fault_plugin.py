"""The engine fault injector's own logic on plain data: its fault syntax and prefill/decode split."""

import pytest
import torch

from llm_adapt.engines.fault_plugin import (
    EngineFault,
    decode_mask,
    parse_fault,
    register,
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
