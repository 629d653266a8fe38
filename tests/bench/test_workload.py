"""The ShareGPT reader of the benchmark workload (bench/workload.py)."""

import json

import pytest

from llm_adapt.bench.workload import _sharegpt_pairs
from llm_adapt.errors import UsageError


def test_sharegpt_reader(tmp_path):
    rows = [{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}]},
            {"conversations": [{"from": "gpt", "value": "skipped: no human turn first"}]},
            {"no": "conversations"}]
    path = tmp_path / "d.json"
    path.write_text(json.dumps(rows))
    assert _sharegpt_pairs(path) == [("hi", "hello")]
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in rows))
    assert _sharegpt_pairs(jsonl) == [("hi", "hello")]
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(UsageError, match="not JSON or JSONL"):
        _sharegpt_pairs(bad)
