"""The vLLM-format result file: the keys vLLM's code writes and reads, and its flag names."""

import json
import math
from datetime import datetime

import pytest

from llm_adapt.bench import stats
from llm_adapt.bench.vllm_format import RunInfo, result_filename, vllm_result, write_vllm_result


def records():
    return [{"start": 0.0, "success": True, "ttft": 0.1, "e2el": 1.0, "output_tokens": 10, "prompt_tokens": 5,
             "itl": [0.1] * 9, "error_kind": None, "dispatch_lag": 0.0, "max_tokens": 10, "chunks": 10,
             "client_tokens": 10, "usage_reported": True}]


INFO = RunInfo(backend="openai", model_id="org/m", tokenizer_id="/tok", num_prompts=1, request_rate=math.inf,
               burstiness=1.0, max_concurrency=4, metadata=(("tp", "1"),), percentiles=(50, 99.9))


# The keys vLLM 0.32's `benchmark` + `main_async` put in a --save-result file (without --save-detailed).
VLLM_KEYS = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
             "burstiness", "max_concurrency", "duration", "completed", "failed", "total_input_tokens",
             "total_output_tokens", "request_throughput", "request_goodput", "output_throughput",
             "total_token_throughput", "max_output_tokens_per_s", "max_concurrent_requests"]


def vllm_source(module: str) -> str:
    """Source of an installed vLLM module, read without importing vLLM (a slow import)."""
    import importlib.util
    from pathlib import Path

    root = Path(importlib.util.find_spec("vllm").submodule_search_locations[0])
    return (root / module).read_text()


def saved(tmp_path):
    metrics = stats.compute_metrics(records(), 2.0, pcts=(50, 99.9))
    path = write_vllm_result(tmp_path / "r.json", vllm_result(INFO, metrics, datetime(2026, 1, 2, 3, 4, 5)))
    return json.loads(path.read_text())


def test_file_has_the_keys_vllm_writes(tmp_path):
    import ast

    loaded = saved(tmp_path)
    source = vllm_source("benchmarks/serve.py")
    assert all(f'"{k}"' in source for k in VLLM_KEYS)  # the names are still vLLM's
    assert set(VLLM_KEYS) <= set(loaded)
    for name in ("ttft", "tpot", "itl", "e2el"):
        assert {f"mean_{name}_ms", f"median_{name}_ms", f"std_{name}_ms", f"p50_{name}_ms", f"p99.9_{name}_ms"} <= set(loaded)
    # every mean/median/std name we write is a field of vLLM's BenchmarkMetrics
    cls = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef) and n.name == "BenchmarkMetrics")
    fields = {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)}
    assert {k for k in loaded if k.startswith(("mean_", "median_", "std_"))} <= fields
    assert loaded["date"] == "20260102-030405" and loaded["tp"] == "1" and loaded["request_rate"] == "inf"
    assert loaded["output_throughput"] == pytest.approx(5.0) and loaded["mean_tpot_ms"] == pytest.approx(100)
    assert loaded["request_goodput"] is None  # as vLLM without --goodput


@pytest.mark.slow
def test_vllm_pareto_reader_accepts_the_file(tmp_path):
    from vllm.benchmarks.sweep.plot_pareto import _prepare_records

    prepared, skipped = _prepare_records([saved(tmp_path)], user_count_var="max_concurrency", gpu_count_var=None)
    assert skipped == 0 and prepared[0]["tokens_per_user"] == pytest.approx(5.0 / 4)


def test_empty_metrics_are_zero_as_in_vllm():
    metrics = stats.compute_metrics([dict(records()[0], success=False, error_kind="http_500")], 1.0, pcts=(99,))
    data = vllm_result(RunInfo("openai", "m", None, 1, 2.0, 1.0, None), metrics, datetime(2026, 1, 1))
    assert data["mean_ttft_ms"] == 0.0 and data["p99_itl_ms"] == 0.0 and data["completed"] == 0
    assert data["request_rate"] == 2.0 and "p50_ttft_ms" not in data


def test_result_filename_follows_vllm():
    when = datetime(2026, 1, 2, 3, 4, 5)
    assert result_filename(INFO, when, None, "serve", 0, False) == "openai-infqps-concurrency4-m-20260102-030405.json"
    assert result_filename(INFO, when, "x.json", "c4", 1, True) == "x-c4-r1.json"


def test_vllm_flag_names_parse(capsys):
    from llm_adapt.cli import build_parser
    from llm_adapt.commands.bench_cmds import bench_options_from

    args = build_parser().parse_args(
        ["bench", "--endpoint", "http://x/v1", "--goodput", "ttft:500", "tpot:100", "--save-result", "--result-dir", "d",
         "--result-filename", "f.json", "--label", "L", "--metadata", "a=1", "b=2", "--percentile-metrics", "ttft,itl",
         "--metric-percentiles", "25,50,99.9", "--repeats", "3", "--reuse-prompts"])
    opts = bench_options_from(args, "serve")
    assert opts.slo == {"ttft": 500.0, "tpot": 100.0} and opts.metadata == (("a", "1"), ("b", "2"))
    assert opts.percentiles == (25.0, 50.0, 99.9) and opts.percentile_metrics == ("ttft", "itl")
    assert opts.result_dir == "d" and opts.result_filename == "f.json" and opts.label == "L"
    assert opts.repeats == 3 and opts.reuse_prompts
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--endpoint", "http://x/v1", "--goodput", "ttft=500"])
    assert "ttft:MS" in capsys.readouterr().err
