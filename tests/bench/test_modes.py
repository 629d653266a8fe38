"""Fresh prompts per level, stage and repeat; one warm-up wave per level; repeats with median and spread."""

import json

import pytest

from llm_adapt.bench import stats
from llm_adapt.bench.modes import BenchOptions, Workload, build_specs, derived_seed, plans, warmup_count
from tests.conftest import bench, start_mock


def level_prompts(opts, tokenizer, label, repeat=0):
    plan = next(p for p in plans(opts) if p.label == label)
    specs = build_specs(opts, Workload(tokenizer, as_ids=True), plan.n, rate=plan.rate,
                        warmup=warmup_count(opts, plan, repeat), seed=derived_seed(opts, label, repeat))
    return [tuple(s.prompt) for s in specs]


def test_two_levels_and_two_repeats_share_no_prompt(tokenizer):
    opts = BenchOptions(mode="sweep", concurrencies=(1, 8), num_prompts=64, input_len=128)
    c1, c8, c8_again = (level_prompts(opts, tokenizer, "c1"), level_prompts(opts, tokenizer, "c8"),
                        level_prompts(opts, tokenizer, "c8", repeat=1))
    assert len(c8) == 64 + 8 and all(len(p) == 128 for p in c8)  # a warm-up wave of 8 before level c8
    assert not set(c1) & set(c8) and not set(c8) & set(c8_again)
    assert len(set(c1 + c8 + c8_again)) == len(c1 + c8 + c8_again)  # no repeats inside a level either
    # the first 16-token block (a prefix-cache block) differs between every pair of prompts
    assert len({p[:16] for p in c1 + c8 + c8_again}) == len(c1 + c8 + c8_again)
    other_stage = BenchOptions(mode="throughput", num_prompts=64, input_len=128)
    assert not set(level_prompts(other_stage, tokenizer, "throughput")) & set(c1 + c8)


def test_reuse_prompts_repeats_them_on_request(tokenizer):
    opts = BenchOptions(mode="sweep", concurrencies=(2, 4), num_prompts=8, warmup=0, reuse_prompts=True)
    assert level_prompts(opts, tokenizer, "c2") == level_prompts(opts, tokenizer, "c4")


def test_warmup_is_one_wave_per_level():
    opts = BenchOptions(mode="sweep", concurrencies=(1, 4, 16), warmup=2)
    counts = [warmup_count(opts, p, 0) for p in plans(opts)]
    assert counts == [2, 4, 16] and warmup_count(opts, plans(opts)[1], repeat=1) == 0
    assert warmup_count(BenchOptions(mode="sweep", warmup=0), plans(opts)[2], 0) == 0


def test_across_repeats_gives_median_and_spread():
    merged, spread = stats.across_repeats([{"output_throughput": 10.0, "mode": "a", "ok": True},
                                           {"output_throughput": 14.0, "mode": "b", "ok": True},
                                           {"output_throughput": 11.0, "mode": "c", "ok": False}])
    assert merged["output_throughput"] == 11.0 and merged["mode"] == "c" and merged["ok"] is False
    assert spread["output_throughput"] == {"median": 11.0, "min": 10.0, "max": 14.0, "rel_spread": pytest.approx(4 / 11), "n": 3}


def test_repeats_against_the_mock(tmp_path, tokenizer):
    with start_mock(tmp_path, "--ttft-ms", "5", "--itl-ms", "2") as server:
        result = bench(server.endpoint, tokenizer, tmp_path, mode="sweep", concurrencies=(2, 4), num_prompts=8,
                       output_len=4, warmup=1, repeats=3)
    assert [r["label"] for r in result.runs] == ["c2", "c4"]
    level = result.runs[1]
    assert len(level["repeats"]) == 3 and level["sent"] == 24 and level["spread"]["output_throughput"]["n"] == 3
    assert [r["warmup"] for r in level["repeats"]] == [4, 0, 0]  # one wave at concurrency 4, before the level only
    values = sorted(r["metrics"]["median_ttft_ms"] for r in level["repeats"])
    assert level["metrics"]["median_ttft_ms"] == pytest.approx(values[1])
    files = sorted(tmp_path.glob("*-c4-r*.json"))
    assert len(files) == 3 and json.loads(files[0].read_text())["max_concurrency"] == 4


def test_prefix_groups_share_exactly_their_prefix(tokenizer):
    opts = BenchOptions(mode="serve", num_prompts=12, input_len=32, prefix_len=64, prefix_repeats=4, warmup=2,
                        max_concurrency=2)
    specs = build_specs(opts, Workload(tokenizer, as_ids=True), 12, rate=float("inf"), warmup=2, seed=5)
    warm, measured = [s.prompt for s in specs if s.warmup], [s.prompt for s in specs if not s.warmup]
    assert all(len(p) == 96 for p in warm + measured) and specs[-1].prompt_len == 96
    prefixes = [tuple(p[:64]) for p in measured]
    assert len(set(prefixes)) == 3 and prefixes[0] == prefixes[3] != prefixes[4]  # groups of 4
    assert len({tuple(p) for p in measured}) == 12  # each request's own tokens after the prefix
    assert not {tuple(p[:64]) for p in warm} & set(prefixes)  # warm-up cannot prime the measured prefixes


def test_prefix_len_with_a_dataset_is_a_usage_error():
    from llm_adapt.cli import build_parser
    from llm_adapt.commands.bench_cmds import bench_options_from
    from llm_adapt.errors import UsageError

    args = build_parser().parse_args(["bench", "--endpoint", "http://x/v1", "--prefix-len", "64", "--dataset", "d.json"])
    with pytest.raises(UsageError, match="--prefix-len"):
        bench_options_from(args, "serve")


def test_sla_search_against_the_mock(tmp_path, tokenizer):
    with start_mock(tmp_path, "--ttft-ms", "5", "--itl-ms", "2") as server:
        result = bench(server.endpoint, tokenizer, tmp_path, mode="sla", slo={"ttft": 2000.0, "tpot": 1000.0},
                       sla_max=4, num_prompts=4, output_len=4, warmup=0, repeats=2)
    assert [r["label"] for r in result.runs] == ["c1", "c2", "c4"] and all(r["sla"]["met"] for r in result.runs)
    assert result.sla["capacity"] == 4 and result.sla["first_failing"] is None and result.sla["repeats"] == 2
    assert len(result.runs[-1]["repeats"]) == 2
    assert json.loads((tmp_path / "bench.json").read_text())["sla"]["capacity"] == 4
    text = report_of(tmp_path, "en")
    assert "SLA capacity (every request of every run meets the SLOs): **concurrency 4**" in text
    assert "(at least that: every point up to 4 met)" in text
    assert "ttft p99 ≤ 2000 ms and tpot p99 ≤ 1000 ms; 2 runs at each concurrency probed: 1, 2, 4" in text
    assert "直到 4 的每个点都满足" in report_of(tmp_path, "zh")


def report_of(run_dir, lang: str) -> str:
    """`bench --mode sla --out RUN_DIR`: the run's report shows the capacity beside the sweep, in its language."""
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.report.render import render_report

    source = resolve_model("default")
    if not (run_dir / "inspect.json").exists():
        run_inspect(source, PlanOptions(model_path=str(source.path), served_model_name="m"), "cpu").save(run_dir / "inspect.json")
    return render_report(run_dir, lang)[0].read_text()


def test_sla_search_counts_failed_requests_as_a_violation(tmp_path, tokenizer):
    with start_mock(tmp_path, "--ttft-ms", "5", "--itl-ms", "2", "--error-rate", "0.5", "--seed", "3") as server:
        result = bench(server.endpoint, tokenizer, tmp_path, mode="sla", slo={"ttft": 2000.0}, sla_max=8,
                       num_prompts=6, output_len=4, warmup=0, repeats=1)
    assert result.sla["capacity"] == 0 and result.sla["first_failing"] == 1 and not result.runs[0]["sla"]["met"]
    assert result.runs[0]["sla"]["runs"][0]["failed"] > 0


def test_sla_needs_slos(capsys):
    from llm_adapt.cli import main

    assert main(["bench", "--endpoint", "http://127.0.0.1:9/v1", "--mode", "sla"]) != 0
    err = capsys.readouterr().err
    assert "--mode sla needs --slo" in err and "Traceback" not in err


def test_the_latency_run_is_the_sweeps_concurrency_one_level():
    from llm_adapt.bench.modes import BenchResult, with_latency_level

    def level(label, load, tok_s):
        return {"label": label, "load": load, "sent": 5, "metrics": {"output_throughput": tok_s}}

    sweep = BenchResult(mode="sweep", endpoint={}, model="m", settings={},
                        runs=[level("c2", 2, 30.0), level("c4", 4, 31.0)])
    latency = BenchResult(mode="latency", endpoint={}, model="m", settings={}, runs=[level("latency", 1, 29.0)])
    merged = with_latency_level(sweep, latency)
    assert [(r["label"], r["load"]) for r in merged.runs] == [("c1", 1), ("c2", 2), ("c4", 4)]
    assert merged.runs[0]["from"] == "latency" and merged.knee["load"] == 1  # 29 is 90% of the best
    assert "latency run" in merged.notes[-1] and sweep.runs[0]["label"] == "c2"  # the given result is not changed
    assert with_latency_level(merged, latency).runs == merged.runs  # a sweep that has concurrency 1 keeps its own
    assert with_latency_level(sweep, latency.model_copy(update={"runs": []})).runs == sweep.runs



def test_bench_json_reads_back_as_it_was_written_for_every_mode(tmp_path):
    """bench.json's records hold what each mode writes: a serve level's load (its rate and concurrency cap),
    a throughput level's "all", the settings of every option (BenchSettings keeps up with BenchOptions);
    a record that did not would refuse the file or change a figure when it is read back."""
    from dataclasses import asdict, fields

    from llm_adapt.bench.modes import BenchResult, BenchSettings
    from llm_adapt.results import read_checked

    assert {f.name for f in fields(BenchOptions)} <= set(BenchSettings.__annotations__)
    opts = BenchOptions(mode="serve", request_rate=4, max_concurrency=6, slo={"ttft": 500}, percentiles=(50, 99.9))
    settings = {k: v for k, v in asdict(opts).items() if v is not None} | {"prompts_as_token_ids": True}
    metrics = {"completed": 3, "failed": 0, "errors": {}, "p50_ttft_ms": 1.5, "mean_itl_ms": None}
    runs = [{"label": p.label, "load": p.load, "metrics": metrics, "sent": 3}
            for mode in ("serve", "throughput", "latency") for p in plans(BenchOptions(mode=mode, request_rate=4,
                                                                                       max_concurrency=6))]
    path = BenchResult(mode="serve", endpoint={"base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key": None},
                       model="m", settings=settings, runs=runs).save(tmp_path / "bench.json")
    read = read_checked(path, BenchResult)
    assert json.loads(read.to_json()) == json.loads(path.read_text())
    assert [r["load"] for r in read.runs] == [{"request_rate": 4, "max_concurrency": 6}, "all", 1]


@pytest.mark.parametrize("mode,extra", [
    ("serve", ["--request-rate", "inf"]),
    ("latency", ["--iterations", "2"]),
    ("throughput", []),
    ("sweep", ["--concurrencies", "1,2"]),
    ("sla", ["--slo", "ttft=2000", "--sla-max", "2", "--repeats", "1"]),
])
def test_every_bench_mode_runs_from_the_entry_point(mode, extra, default_model, tmp_path, capsys):
    """`llm-adapt bench --mode MODE` as a user types it, against a mock streaming server: exit 0 and bench.json
    with that mode's runs."""
    import json

    from llm_adapt.cli import main

    with start_mock(tmp_path, "--ttft-ms", "5", "--itl-ms", "1") as server:
        code = main(["bench", "--endpoint", server.endpoint.base_url, "--mode", mode, "--num-prompts", "4",
                     "--input-len", "16", "--output-len", "4", "--warmup", "0", "--tokenizer", str(default_model.path),
                     "--out", str(tmp_path / "out"), *extra])
    result = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert code == 0 and result["mode"] == mode and result["runs"], capsys.readouterr().err
