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
    for bad in ("decode-only:5", "rope-beyond:x", "sideways:1:2", "scaled:one:2"):
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
