"""vLLM-Ascend's template rules, checked on our tutorial: the checker passes on the export of a run of the default
model (`--plan-for npu`) and of the stand-in NPU run, and fails on a tutorial with each rule broken in turn. The
scenarios are the planner's plans, the FAQ entries come from the model's caveats and the plan, and nothing the
CPU measured is claimed for the NPU."""

import re
import shutil

import pytest

from llm_adapt import rundir
from llm_adapt.inspect.plan import PlanOptions, make_plan
from llm_adapt.inspect.stage import plan_inputs
from llm_adapt.messages import message
from llm_adapt.models.source import resolve_model
from llm_adapt.models.synthetic import write_tiny_family
from llm_adapt.upstream import template_rules
from llm_adapt.upstream.adaptation import build
from llm_adapt.upstream.faq import faq_entries
from llm_adapt.upstream.scenarios import scenarios
from llm_adapt.upstream.template_rules import check, options_of
from tests.conftest import config_fixture

from .markdown_tables import table_problems
from .test_adaptation import write_run
from .test_export import DOCS, exported, npu_run

SMOL = "HuggingFaceTB/SmolLM2-135M-Instruct"


def planned_export(base, model, model_id: str) -> dict[str, str]:
    out = base / "run"
    out.mkdir(parents=True)
    source = write_run(out, model)
    build(out, source.path).save(out / rundir.ADAPTATION)
    return exported(out, base / "up", "--plan-for", "npu", "--model-id", model_id)


@pytest.fixture(scope="module")
def default_export(default_model, tmp_path_factory):
    """The export of a run of the default model (the Q4_1 GGUF), planned for an NPU, as the README shows it."""
    return planned_export(tmp_path_factory.mktemp("default"), "default", SMOL)


@pytest.fixture(scope="module")
def npu_export(tiny_llama, tmp_path_factory):
    base = tmp_path_factory.mktemp("npu")
    return exported(npu_run(base / "run", shutil.copytree(tiny_llama, base / "model")), base / "up")


def test_the_checker_passes_on_the_default_runs_export_and_on_the_npu_stand_in(default_export, npu_export):
    default = default_export[f"{DOCS}/SmolLM2-135M-Instruct.md"]
    assert check(default) == [], check(default)
    assert check(npu_export[f"{DOCS}/tiny-llama.md"]) == []
    for files in (default_export, npu_export):
        for name, text in files.items():
            assert table_problems(text) == [], (name, table_problems(text))
            if name.endswith("-runbook.md"):  # published beside the tutorial: vLLM-Ascend's commands only
                assert template_rules.tool_words_rule(text, []) == [], (name, template_rules.tool_words_rule(text, []))


def test_the_default_runs_export_names_the_gguf_it_measured_in_every_file(default_export):
    assert sorted(default_export) == ["SmolLM2-135M-Instruct-nav.patch",
                                      f"{DOCS}/SmolLM2-135M-Instruct-adaptation-report.md",
                                      f"{DOCS}/SmolLM2-135M-Instruct-runbook.md", f"{DOCS}/SmolLM2-135M-Instruct.md"]
    for name, text in default_export.items():
        if name.endswith((".patch", "SmolLM2-135M-Instruct.md")):  # the planned tutorial quotes no figure: below
            continue
        assert "Q4_1 GGUF" in text and "SmolLM2-135M-Instruct.Q4_1.gguf" in text, name
        assert "fp32" in text and ("not the checkpoint" in text or "而非" in text), name


def test_the_planned_tutorial_says_no_figure_describes_a_conversion_it_does_not_show(default_export):
    """Where figures are (the report), the weights they were measured on; the planned tutorial quotes none."""
    tutorial = default_export[f"{DOCS}/SmolLM2-135M-Instruct.md"]
    assert "describe that conversion" not in tutorial and "Q4_1" not in tutorial
    assert "deploy `HuggingFaceTB/SmolLM2-135M-Instruct`. This document quotes no measured figure" in tutorial
    assert "各项数字描述的是这一转换结果" in default_export[f"{DOCS}/SmolLM2-135M-Instruct-adaptation-report.md"]  # zh


def break_rule(text: str, rule: str) -> str:
    """The tutorial with one rule broken (each edit must change the text)."""
    edits = {
        "feature columns": lambda t: t.replace("| W8A8 |", "| INT8 |"),
        "sections": lambda t: t.replace("### 7.1 Using AISBench", "### Using AISBench"),
        "scenarios": lambda t: "\n".join(line for line in t.splitlines() if not line.startswith("| Low Latency |")),
        "parameters": lambda t: "\n".join(line for line in t.splitlines() if not line.startswith("| `--max-model-len` |")),
        "faq": lambda t: "\n".join(line for line in t.splitlines() if not line.startswith("- **Cause:**")),
        "versions": lambda t: t.replace("vllm-ascend:{{ vllm_ascend_version }}-a3", "vllm-ascend:v0.23.0-a3"),
        "tabs": lambda t: t.replace('=== "A3 series"', '=== "A9"').replace('=== "A2 series"', '=== "A3 series"')
                           .replace('=== "A9"', '=== "A2 series"'),
        "tool words": lambda t: t.replace("## 10 FAQ\n", "## 10 FAQ\n\nPlan another card with `llm-adapt inspect "
                                                          "--device-memory 32`.\n"),
        "rendering": lambda t: t.replace("the flag that enables it:\n\n| Feature |",  # a table glued to its line
                                         "the flag that enables it: | Feature |"),
    }
    broken = edits[rule](text)
    assert broken != text, rule
    return broken


@pytest.mark.parametrize("rule", sorted(template_rules.RULES))
def test_a_tutorial_with_each_rule_broken_in_turn_fails_on_that_rule(rule, default_export):
    clean = default_export[f"{DOCS}/SmolLM2-135M-Instruct.md"]
    problems = check(break_rule(clean, rule))
    assert problems and all(p.startswith(rule + ":") for p in problems), problems


def test_each_rule_says_what_is_missing():
    lines = ["## 1 Introduction", "", "### Intro", ""]
    assert any("should be numbered 1.1" in p for p in template_rules.sections_rule("", template_rules.parse(
        "\n".join(lines))))
    assert options_of("export A=1\nvllm serve m \\\n    --port 8000 --net=host -v a:b # --not-this\n") == [
        "A", "--port", "--net", "-v"]
    assert template_rules.versions_rule("", template_rules.parse(
        "```bash\npip install vllm-ascend==0.23.0  # Please replace with your actual version.\n```\n")) == []
    assert template_rules.versions_rule("", template_rules.parse("```bash\npip install vllm-ascend==0.23.0\n```\n"))
    assert template_rules.tab_groups(template_rules.parse('=== "A2 series"\n\n    x\n\n=== "A3 series"\n')) == [
        ["A2 series", "A3 series"]]


def test_each_scenario_is_the_planners_plan_for_its_three_values(tmp_path):
    """Llama-3.2-3B's published config on a 64 GiB NPU: the KV cache cannot hold 16 sequences of 128k, so the
    long-context scenario takes as many as fit; each scenario's plan is what the planner gives for its values."""
    import json

    model = tmp_path / "llama-3.2-3b"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(config_fixture("llama-3.2-3b")))
    inputs = plan_inputs(resolve_model(str(model), weights=False),
                         PlanOptions(model_path="meta-llama/Llama-3.2-3B-Instruct", served_model_name="m",
                                     device_memory_gib=64), "npu")
    found = {s.name: s for s in scenarios(inputs)}
    assert list(found) == ["High Throughput", "Long Context", "Low Latency"]
    for s in found.values():
        graph = s.plan.command("graph")
        values = (s.plan.max_model_len, s.plan.max_num_seqs, int(graph.get("--max-num-batched-tokens")))
        again = make_plan(inputs.spec, inputs.params["from_config"], inputs.target, PlanOptions(
            **{**inputs.options.__dict__, "max_model_len": values[0], "max_num_seqs": values[1],
               "max_num_batched_tokens": values[2]}))
        same = {k: v for k, v in again.to_dict().items() if k != "max_model_len_from"}  # given, not chosen, here
        assert same == {k: v for k, v in s.plan.to_dict().items() if k != "max_model_len_from"}, s.name
        assert set(s.why) == {"--max-model-len", "--max-num-seqs", "--max-num-batched-tokens"}
        assert all(message(w, "zh") != str(w) for w in s.why.values())  # worded in both languages
    long = found["Long Context"].plan
    assert long.max_model_len == long.longest_max_model_len <= 131072 and 1 <= long.max_num_seqs < 16
    assert long.max_num_seqs <= long.max_concurrency < long.max_num_seqs + 1  # as many as fit, no more
    assert (found["Low Latency"].plan.max_model_len, found["Low Latency"].plan.max_num_seqs) == (4096, 8)
    high = found["High Throughput"].plan
    assert high.max_model_len == 4096 and high.max_num_seqs == min(256, int(high.max_concurrency))


def test_faq_entries_come_from_the_caveats_and_the_plan_each_with_three_parts(tmp_path):
    """A Gemma2-like model with head_dim 288: soft-capping and head_dim entries from its caveats, then the
    plan's memory and KV-cache entries."""
    model = write_tiny_family("gemma2", tmp_path / "gemma2", head_dim=288)
    from llm_adapt.inspect.stage import run_inspect

    result = run_inspect(resolve_model(str(model)), PlanOptions(model_path="acme/g", served_model_name="g"), "npu")
    entries = faq_entries(result.caveats, result.plan, result.config)
    titles = [message(e.title, "en") for e in entries]
    assert "Attention soft-capping" in titles and "head_dim 288" in titles and "Soft-capping in float16" in titles
    assert titles[-3:] == ["NPU memory", "Memory headroom", "KV cache capacity at max-model-len 2,048"]
    for e in entries:
        for part in (e.phenomenon, e.cause, e.solution):
            assert message(part, "en") and message(part, "zh"), e.title
    tight = result.plan.model_copy(update={"max_concurrency": 3.5, "max_num_seqs": 8, "device_memory_assumed": False})
    kv = faq_entries([], tight, {})
    assert [message(e.title, "en") for e in kv] == ["Memory headroom", "KV cache capacity at max-model-len 2,048"]
    assert "more than 3 requests run at full length" in kv[-1].phenomenon


def test_a_planned_tutorial_claims_nothing_measured_off_an_npu(default_export):
    tutorial = default_export[f"{DOCS}/SmolLM2-135M-Instruct.md"]
    assert "Result on an Atlas NPU: *to be filled by the NPU run* of the command above." in tutorial
    for words in ("CPU:", "vLLM-CPU", "(not an NPU)", "tok/s |", "PASS", "gold"):
        assert words not in tutorial, words
    report = default_export[f"{DOCS}/SmolLM2-135M-Instruct-adaptation-report.md"]
    assert "（非 NPU）" in report  # the CPU evidence is the adaptation report's, labelled with its platform
    runbook = default_export[f"{DOCS}/SmolLM2-135M-Instruct-runbook.md"]
    assert "CPU" not in runbook and "本次验证在" not in runbook


def test_the_reports_differential_run_asks_for_a_tensor_parallel_size_the_heads_split_over(default_export):
    """SmolLM2-135M's 9 attention heads (3 KV heads) split over 3 ranks, not 2: the adaptation report's "how this
    was measured" command is one vLLM can serve as written; the published runbook holds no command of this tool."""
    report = default_export[f"{DOCS}/SmolLM2-135M-Instruct-adaptation-report.md"]
    assert "--settings eager,graph,tp3" in report and "tp2" not in report
    assert "--settings" not in default_export[f"{DOCS}/SmolLM2-135M-Instruct-runbook.md"]


def test_the_smallest_split_follows_vllms_head_rules():
    from llm_adapt.inspect.plan import smallest_split

    assert smallest_split(9, 3) == 3 and smallest_split(32, 8) == 2 and smallest_split(32, 8, at_least=4) == 4
    assert smallest_split(12, 1) == 2  # one KV head: replicated on every rank
    assert smallest_split(6, 4) == 2  # 4 KV heads split over 2
    assert smallest_split(17, 17) is None  # 17 heads: no size from 2 to 16 divides them
    assert smallest_split(10, 4, at_least=3) is None  # 5 and 10 divide the heads; 4 KV heads neither divide by 5 nor 5 by 4


def test_the_tutorial_counts_whole_sequences_of_full_length(default_export):
    tutorial = default_export[f"{DOCS}/SmolLM2-135M-Instruct.md"]
    assert re.search(r"the KV cache holds [\d,]+ sequences of 8,192 tokens", tutorial), tutorial[:3000]
    assert not re.search(r"holds [\d,]+\.\d+ ", tutorial)


def test_the_faq_names_the_tensor_parallel_sizes_the_heads_allow(default_export):
    """SmolLM2's 9 attention heads and 3 KV heads take TP 1, 3 or 9 only (vLLM's rules, inspect/plan.allowed_tp);
    the tutorial's FAQ says so, from the config."""
    from llm_adapt.inspect.plan import allowed_tp

    assert allowed_tp(9, 3) == [1, 3, 9] and allowed_tp(32, 8) == [1, 2, 4, 8, 16, 32] and allowed_tp(4, 0) == []
    assert allowed_tp(12, 8) == [1, 2, 4]  # 3, 6, 12: the 8 KV heads neither divide by them nor divide them
    tutorial = default_export[f"{DOCS}/SmolLM2-135M-Instruct.md"]
    faq = tutorial.split("## 10 FAQ", 1)[1]
    assert "9 attention heads and 3 KV heads" in faq and "`--tensor-parallel-size` values: 1, 3, 9" in faq


KV_FIGURE = re.compile(r"(\d[\d,]*) sequences of (\d[\d,]*) tokens( \(at [^)]*\))?")


def test_one_kv_figure_per_length_and_settings_across_every_file(default_export):
    """§5.1, §9.1 and the FAQ print the KV cache's sequences at a length: one figure where the settings are the
    same; where two figures at one length differ, each names the settings that move it."""
    seen: dict[tuple[str, str], set[str]] = {}
    for name, text in default_export.items():
        for count, length, settings in KV_FIGURE.findall(text):
            seen.setdefault((length, settings), set()).add(count)
    assert seen and all(len(counts) == 1 for counts in seen.values()), seen
    by_length: dict[str, set[str]] = {}
    for (length, settings), counts in seen.items():
        by_length.setdefault(length, set()).update(counts)
    for length, counts in by_length.items():
        if len(counts) > 1:  # figures differ at one length: none of them stands without its settings
            assert all(s for (n, s) in seen if n == length), (length, seen)


def test_kv_holds_names_the_settings_only_where_another_figure_at_that_length_differs():
    from types import SimpleNamespace

    from llm_adapt.upstream.kv_figures import kv_holds

    def plan(fit, seqs, batched, mml=8192):
        return SimpleNamespace(max_concurrency=fit + 0.4, max_model_len=mml, max_num_seqs=seqs, memory_utilization=0.9,
                               command=lambda mode: {"--max-num-batched-tokens": batched})

    main, long, short = plan(313, 256, None), plan(314, 16, 8192), plan(625, 256, 16384, mml=4096)
    assert kv_holds(short, [main, long, short]) == "the KV cache holds 625 sequences of 4,096 tokens"
    assert kv_holds(main, [main, long, short]).endswith(
        "(at `--max-num-seqs 256` and `--max-num-batched-tokens` at its default: the activation reserve they take moves "
        "this figure)")
    assert "`--max-num-seqs 16`" in kv_holds(long, [main, long, short])
    assert kv_holds(main, [main, plan(313, 16, 8192)]) == "the KV cache holds 313 sequences of 8,192 tokens"


def test_the_faq_names_a_context_shorter_than_the_models_and_a_float16_range_only_where_they_apply(tmp_path):
    """Context: the deployment's max-model-len below the model's positions, with the longest this deployment
    holds; range: a bf16 or fp32 checkpoint served in float16. Neither where it does not hold."""
    model = write_tiny_family("llama", tmp_path / "llama", max_position_embeddings=2048)
    from llm_adapt.inspect.stage import run_inspect

    result = run_inspect(resolve_model(str(model)), PlanOptions(model_path="acme/l", served_model_name="l",
                                                                max_model_len=1024), "npu")
    config = {**result.config, "torch_dtype": "bfloat16"}
    titles = [message(e.title, "en") for e in faq_entries([], result.plan, config)]
    assert "Requests longer than the deployment's context" in titles and "Overflow in float16" not in titles
    entry = next(e for e in faq_entries([], result.plan, config) if message(e.title, "en").startswith("Requests"))
    assert "`--max-model-len` is 1,024, below the model's 2,048 positions" in message(entry.cause, "en")
    assert "2,048" in message(entry.solution, "zh")
    half = result.plan.model_copy(update={"dtype": "fp16", "max_model_len": 2048})
    titles = [message(e.title, "en") for e in faq_entries([], half, config)]
    assert "Overflow in float16" in titles and "Requests longer than the deployment's context" not in titles
    assert "Overflow in float16" not in [message(e.title, "en")
                                         for e in faq_entries([], half, {**config, "torch_dtype": "float16"})]
