"""`llm-adapt export RUN_DIR --to vllm-ascend --out DIR`: the files vLLM-Ascend's model-adapter skill
delivers upstream, in the formats on vLLM-Ascend's main branch (upstream/formats.py), written from one run
directory's JSON.

- docs/source/tutorials/models/<Model>.md                     the tutorial, in the ten-section template (en)
- docs/source/tutorials/models/<Model>-adaptation-report.md   the adaptation report (zh by default)
- docs/source/tutorials/models/<Model>-runbook.md             the runbook (zh by default)
- tests/e2e/models/configs/<Model>.yaml                       the e2e accuracy config (only from public tasks)
- benchmarks/accuracy/<Model>.md                              the accuracy report, in report_template.md's layout

Rules: the files describe an NPU deployment. A run on an NPU exports its own; a run elsewhere exports only
with `--plan-for npu`, which writes the NPU plan labelled "planned, not run on an NPU" and claims nothing it
did not measure on an NPU: the tutorial's sections 6 to 8 give each command and the form of its result, to
be filled by the NPU run; the run's own evidence goes to the adaptation report only, labelled with the
platform it was measured on; no e2e config or accuracy report is written (their values would be another
platform's). Every number is one the run measured or a plan computed; every file says what weights were
measured (models/provenance.py); every command runs against the plan's server as written (its client
commands name the served model); models are named by their hub id; no file carries a path of this
machine; the tutorial follows vLLM-Ascend's template rules (upstream/template_rules.py) in its words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypedDict

import jinja2

from llm_adapt.engines.session import ServeResult
from llm_adapt.errors import AdaptError, UsageError
from llm_adapt.inspect.plan import DeployPlan
from llm_adapt.judged.data import RunData, load_run
from llm_adapt.results import write_text_atomic
from llm_adapt.run_status import StageStatus
from llm_adapt.upstream import commands as cmd
from llm_adapt.upstream import feature_table, formats, kv_figures, layer_matrix, nav, origin
from llm_adapt.upstream.baseline import BesideMeasured, PublishedBaseline, beside_measured, read_baseline
from llm_adapt.upstream.deployment import Deployment, ModeCommand, from_npu_run, planned_for_npu

if TYPE_CHECKING:
    from llm_adapt.accuracy.result import AccuracyResult, EndpointAccuracyResult, RunnerReport
    from llm_adapt.evaluation.stage import EvalResult
    from llm_adapt.inspect.gates import AdaptationResult, FeatureRow, Gates
    from llm_adapt.inspect.stage import InspectResult
    from llm_adapt.inspect.support import SupportAnswer
    from llm_adapt.messages import Reason
    from llm_adapt.probes.run import ProbesResult
    from llm_adapt.run_status import RunVerdict, StageRecord
    from llm_adapt.upstream.faq import FaqEntry
    from llm_adapt.upstream.samples import Sample
    from llm_adapt.upstream.scenarios import Scenario
    from llm_adapt.upstream.setting_checks import SettingCheck

TARGETS = ("vllm-ascend",)
LANGS = ("en", "zh")
PLAN_FOR = ("npu",)


@dataclass
class Exported:
    written: list[Path]
    notes: list[str] = field(default_factory=list)  # what was not written, and the command that would write it


class E2EFiles(TypedDict):
    """The e2e config (None without a public task measured), its report's fields, its rows, the tasks left out."""
    config: formats.E2EConfig | None
    rows: list[formats.TaskRow]
    left: list[str]
    fields: formats.ReportFields | None


class BenchShown(TypedDict):
    """What an NPU run's throughput benchmark measured with section 8's command."""
    prompts: int
    input_len: int
    output_len: int
    concurrency: int
    output_throughput: float | None
    ttft: float | None
    tpot: float | None


class BenchWorkload(TypedDict, total=False):
    """Section 8's benchmark: an NPU run's own workload with its result, else BENCH_DEFAULT's."""
    input_len: int
    output_len: int
    prompts: int
    concurrency: int
    result: BenchShown


class ShownCommands(TypedDict):
    """The commands the tutorial and the runbook show, and what an NPU run measured with them."""
    server: cmd.Shown
    served_name: str
    port: str
    docker: dict[str, cmd.Shown]
    models: cmd.Shown
    chat: cmd.Shown
    chat_prompt: str
    chat_answer: str | None
    lm_eval: cmd.Shown
    bench: cmd.Shown
    bench_result: BenchShown | None


class ExportContext(ShownCommands):
    """Everything the export's templates show (context), each measurement with where it was measured."""
    run: RunData
    insp: InspectResult
    ad: AdaptationResult | None
    serve: ServeResult | None
    status: dict[str, StageRecord]
    probes: ProbesResult | None
    ep: EndpointAccuracyResult | None
    acc: AccuracyResult | None
    main: RunnerReport | None  # the main in-process target
    ev: EvalResult | None
    e2e: E2EFiles
    verdict: RunVerdict
    started: bool
    served_mode: str | None
    deploy: Deployment
    plan: DeployPlan
    gates: Gates
    where: dict[str, str]
    model_id: str
    model: str
    paths: dict[str, str]
    weights_reason: Reason | None
    support_reason: Reason
    samples: list[Sample]
    faq: list[FaqEntry]
    layer_matrix: layer_matrix.LayerMatrix
    baseline: PublishedBaseline | None  # export --baseline-file: the published score of the same model and size
    baseline_beside: BesideMeasured | None
    scenarios: list[Scenario]
    setting_checks: dict[str, SettingCheck]
    settings_command: str
    feature_table: dict[str, str]  # the template's section 2 columns (upstream/feature_table.py)
    feature_legend: list[tuple[str, str]]


class TemplateFunctions(TypedDict):
    """What the templates call (template_functions), in one language."""
    params: Callable[[cmd.Shown], Any]
    batched: Callable[[Any], str]
    option_value: Callable[[Any, str], str]
    remark: Callable[[Any], str]
    mode_status: Callable[[bool], str]
    graph_mode: str
    weights: str
    support_words: str
    kv_holds: Callable[[Any], str]


def paths(model: str) -> dict[str, str]:
    """Where each file lives in a vLLM-Ascend checkout (the accuracy report where upstream's test writes it)."""
    docs = "docs/source/tutorials/models"
    return {"tutorial": f"{docs}/{model}.md", "report": f"{docs}/{model}-adaptation-report.md",
            "runbook": f"{docs}/{model}-runbook.md", "config": f"tests/e2e/models/configs/{model}.yaml",
            "accuracy": f"benchmarks/accuracy/{model}.md", "nightly": f"{formats.NIGHTLY_DIR}/{model}.yaml",
            "nav": f"{model}-nav.patch"}  # `git apply` it at the checkout's root: the tutorial in main's nav


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


def same_options(planned: list[str], started: list[str]) -> bool:
    """Whether a started command ran the planned one: the same options, whatever the port (a started
    engine takes a free one) and the program's spelling. Pure."""
    from llm_adapt.command import Command

    def options(argv: list[str]) -> tuple:
        return Command.from_argv(argv).without("--port").options

    return bool(planned) and bool(started) and options(planned) == options(started)


def commands(plan: DeployPlan, serve: ServeResult | None, started: bool) -> dict[str, ModeCommand]:
    """The plan's eager and graph commands, each marked verified when this run started exactly it
    (on another port). Pure."""
    served = serve.argv if serve else []
    return {mode: {"text": plan.commands.get(mode, ""),
                   "verified": started and mode in plan.mode_commands
                   and same_options(plan.command(mode).argv(), served)}
            for mode in ("eager", "graph")}


def measured_serve(run: RunData, deploy: Deployment) -> formats.E2EServe:
    """The e2e config's serve settings: those the scores were measured with (dtype, max-model-len, eager
    or not, remote code), on the deployment's devices (tensor parallel, memory share). Pure."""
    inspect, serve = run.inspect, run.serve
    served_len = (serve.engine_facts.get("max_model_len") if serve else None) or inspect.plan.max_model_len
    return {"tensor_parallel_size": deploy.plan.tensor_parallel, "dtype": formats.vllm_dtype(inspect.plan.dtype),
            "max_model_len": served_len, "gpu_memory_utilization": float(deploy.plan.memory_utilization),
            "trust_remote_code": bool(inspect.config.get("custom_code")),
            "enforce_eager": True if serve and serve.mode == "eager" else None}


def measured_on(run: RunData) -> dict[str, str]:
    """Where the run's figures were measured, to name beside each of them."""
    ran = origin.ran_on(run)
    hardware, engine = origin.hardware_of(run), origin.engine_of(run)
    return {"platform": ran, "hardware": hardware, "engine": engine,
            "en": f"{hardware} with {engine}" + ("" if ran == origin.NPU else " (not an NPU)"),
            "zh": f"{hardware}，{engine}" + ("" if ran == origin.NPU else "（非 NPU）")}


def e2e_files(run: RunData, deploy: Deployment, model_id: str, where: dict[str, str]) -> E2EFiles:
    """The e2e config (None without a public task measured) with its report fields, and the tasks left out."""
    ev = run.eval
    rows, left = formats.task_rows(ev) if ev else ([], [])
    if not rows:
        return {"config": None, "rows": [], "left": left, "fields": None}
    # upstream's configs name the series ("Atlas A2 Series"); the chips where their series is not known
    hardware = (origin.npu_series(run) or where["hardware"]) if where["platform"] == origin.NPU else \
        f"{where['hardware']} with {where['engine']} (measured there; the NPU deployment is {deploy.label})"
    config = formats.e2e_config(rows, model_id=model_id, hardware=hardware, serve=measured_serve(run, deploy),
                                limit=ev.settings.get("limit"))
    problems = formats.e2e_problems(config)
    if problems:  # our own output against upstream's format: a bug here, not the user's
        raise AdaptError(f"the e2e config would not run upstream: {'; '.join(problems)}")
    fields = formats.report_fields(config, rows, formats.versions_of(run.environment))
    return {"config": config, "rows": rows, "left": left, "fields": fields}


def context(run: RunData, deploy: Deployment, model_id: str,
            published: PublishedBaseline | None = None) -> ExportContext:
    """Everything the templates show: the run's measurements (each with where it was measured), what weights
    they were measured on, and the NPU deployment (its own, or the plan) with its commands as data."""
    inspect, serve, status = run.inspect, run.serve, run.stages
    where = measured_on(run)
    e2e = e2e_files(run, deploy, model_id, where) if not deploy.planned else {"config": None, "rows": [], "left": [],
                                                                               "fields": None}
    from llm_adapt.judged.verdict import overall_verdict
    from llm_adapt.messages import message
    from llm_adapt.models.provenance import describe
    from llm_adapt.upstream.faq import faq_entries
    from llm_adapt.upstream.samples import samples

    model = safe_name(model_id.split("/")[-1])
    prov = inspect.measured
    weights = describe(prov, model_id) if prov else None
    started = status.get("serve", {}).get("status") == StageStatus.DONE
    checks = checks_of(run)
    table = feature_table.cells(model, deploy.gates.get("features", []), deploy.plan,
                                on_npu=where["platform"] == origin.NPU and not deploy.planned, served=started,
                                remark=deploy.label, hardware=deploy.hardware,
                                quantization=(inspect.inventory or {}).get("quantization"), setting_checks=checks,
                                doc_link=f"[{model}]({model}.md)",
                                tp_checked=message(checks["tp"]["words"], "en") if checks.get("tp") else None)
    return {"run": run, "insp": inspect, "ad": run.adaptation, "serve": serve, "status": status,
            "probes": run.probes, "ep": run.endpoint_accuracy, "acc": run.accuracy,
            "main": run.main_target, "ev": run.eval, "e2e": e2e, "verdict": overall_verdict(run),
            "started": started, "served_mode": serve.mode if serve else None,
            "deploy": deploy, "plan": deploy.plan, "gates": deploy.gates, "where": where, "model_id": model_id,
            "model": model, "paths": paths(model), "weights_reason": weights,
            "support_reason": support_reason(deploy.support), "samples": samples(run, _dummy_run(run)),
            "faq": faq_entries(deploy.caveats, deploy.plan, inspect.config, inspect.operator_gate),
            "baseline": published,
            "baseline_beside": beside_measured(published, list(run.eval.scores)) if published and run.eval else None,
            "layer_matrix": layer_matrix.matrix(inspect, run.layers, run.accuracy, run.main_target,
                                                deploy.caveats, served=started and not deploy.planned),
            "scenarios": deploy.scenarios, "setting_checks": checks, "feature_table": table,
            "feature_legend": [(w, feature_table.LEGEND[w]) for w in feature_table.used_words(table)],
            "settings_command": settings_command(run, model_id, deploy), **shown_commands(run, deploy, model_id, e2e)}


def _dummy_run(run: RunData) -> RunData | None:
    """The dummy stage's results (`run --stages dummy,real` keeps them in a folder of the run)."""
    from llm_adapt import rundir

    folder = Path(run.dir) / rundir.DUMMY_DIR if run.dir else None
    return load_run(folder) if folder and (folder / rundir.STATUS).exists() else None


def support_reason(support: SupportAnswer) -> Reason:
    """The support level in vLLM-Ascend's words: native, the Transformers backend or a port, for the vLLM the
    deployment runs on (the release vLLM-Ascend pins, when planned away from an NPU)."""
    from llm_adapt.messages import reason

    registry = support.get("registry")
    args = getattr(registry, "args", None) or {}
    version, source = args.get("version", "?"), args.get("source", "")
    key = {"native": "tut_native", "transformers-backend": "tut_backend"}.get(support.get("vllm"), "tut_unsupported")
    return reason(key, version=version, source=source)


def shown_commands(run: RunData, deploy: Deployment, model_id: str, e2e: E2EFiles) -> ShownCommands:
    """The commands the tutorial and the runbook show, each against the plan's server as it starts (graph
    mode, vLLM-Ascend's default), and what the run measured with them where it ran on an NPU."""
    from llm_adapt.upstream.samples import chat_request

    server = deploy.servers["graph"]
    probes = {r.get("name"): r for r in (run.probes.rows if run.probes else [])}
    chat_row = probes.get("chat completion") or {}
    request = chat_request(chat_row)
    chat = cmd.curl_chat(server, cmd.chat_request(server, request["messages"], request["max_tokens"]))
    tasks = ",".join(t["name"] for t in e2e["config"]["tasks"]) if e2e["config"] else "gsm8k"
    shots = e2e["config"]["num_fewshot"] if e2e["config"] else None
    trust = bool(run.inspect.config.get("custom_code"))
    workload = bench_workload(run, deploy)
    devices = deploy.plan.tensor_parallel * deploy.plan.pipeline_parallel
    return {"server": server, "served_name": cmd.served_name(server), "port": cmd.port_of(server),
            "docker": {series: cmd.docker_run(series, devices, cmd.port_of(server)) for series in ("A3", "A2")},
            "models": cmd.curl_models(server), "chat": chat, "chat_prompt": request["messages"][-1]["content"],
            "chat_answer": None if deploy.planned else (chat_row.get("detail") or {}).get("text"),
            "lm_eval": cmd.lm_eval(server, model_id, tasks, shots, trust),
            "bench": cmd.bench_serve(server, model_id, workload["input_len"], workload["output_len"],
                                     workload["prompts"], workload["concurrency"]),
            "bench_result": None if deploy.planned else workload.get("result")}


# the benchmark the tutorial shows where the run measured none on an NPU (upstream's tutorials use similar sizes)
BENCH_DEFAULT = {"input_len": 1024, "output_len": 256, "prompts": 64, "concurrency": 8}


def bench_workload(run: RunData, deploy: Deployment) -> BenchWorkload:
    """The workload of section 8's command: an NPU run's throughput benchmark (so its figures are that
    command's), else a default one."""
    bench = run.bench.get("throughput") if not deploy.planned else None
    runs, settings = (bench.runs, bench.settings) if bench else ([], {})
    if not runs or not settings.get("input_len"):
        return dict(BENCH_DEFAULT)
    first, m = runs[0], runs[0].get("metrics") or {}
    sent = first.get("sent") or settings.get("num_prompts")
    return {"input_len": settings["input_len"], "output_len": settings["output_len"], "prompts": sent,
            "concurrency": sent, "result": {"prompts": sent, "input_len": settings["input_len"],
                                            "output_len": settings["output_len"], "concurrency": sent,
                                            "output_throughput": m.get("output_throughput"),
                                            "ttft": m.get("median_ttft_ms"), "tpot": m.get("median_tpot_ms")}}


def remark(row: FeatureRow):
    """A feature row's evidence in the tutorial's words: where it names a command of this tool, what to do on
    the NPU instead."""
    from llm_adapt.messages import reason

    evidence = row.get("evidence")
    if getattr(evidence, "key", None) in ("ev_graph_planned", "ev_graph_eager", "ev_graph_no_engine"):
        evidence = reason("tut_graph_unverified")
    if row.get("setting_check"):  # what a differential run checked of it, on the platform it ran on
        return reason("ev_with_setting_check", check=row["setting_check"], evidence=evidence)
    return evidence


def environment() -> jinja2.Environment:
    from llm_adapt.cells import cell, gib, num, pct
    from llm_adapt.messages import message, messages, probe_words, verdict_reasons

    env = jinja2.Environment(loader=jinja2.PackageLoader("llm_adapt.upstream", "templates"), autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    # in a language: a message (in_lang), a list of them (in_lang_all), a stage's reason (stage_reason), a
    # verdict's reasons (reasons_in)
    env.filters.update(cell=cell, num=num, pct=pct, gib=gib, in_lang=message, in_lang_all=messages, words=layer_matrix.words,
                       stage_reason=lambda body, lang: message(body.get("reason") or "", lang),
                       reasons_in=verdict_reasons, probe_in=probe_words)
    return env


def template_functions(ctx: ExportContext, lang: str) -> TemplateFunctions:
    """What the templates call: the parameter table of a command, a scenario's values, a feature row's
    remark, the deployment's status in words."""
    from llm_adapt.messages import message
    from llm_adapt.platforms import get_platform

    insp, plan = ctx["insp"], ctx["deploy"].plan
    facts = cmd.RangeFacts(max_positions=f"{insp.config.get('max_position_embeddings', 0):,}",
                           heads=insp.config.get("num_heads"), last=plan.tensor_parallel * plan.pipeline_parallel - 1)
    meaning = {n["name"]: n.get(lang) or n.get("en") for n in plan.env_notes}
    planned = ctx["deploy"].planned
    kv_plans = [plan] + [s.plan for s in ctx["scenarios"]]  # every plan whose KV figure a file prints
    status = {"en": ("not yet run on an NPU" if planned else None, "verified in this validation",
                     "not verified in this validation"),
              "zh": ("尚未在 NPU 上运行" if planned else None, "本次验证已运行", "本次验证未运行")}[lang]
    return {"params": lambda shown: cmd.parameters(shown, lang, facts, meaning),
            "batched": lambda s: s.plan.command("graph").get("--max-num-batched-tokens") or "-",
            "option_value": lambda s, option: s.plan.command("graph").get(option) or "-",
            "remark": lambda row: message(remark(row), lang),
            "mode_status": lambda verified: status[0] or (status[1] if verified else status[2]),
            "graph_mode": get_platform("npu").graph_name,
            "weights": message(ctx["weights_reason"], lang) if ctx["weights_reason"] else
            ("not recorded" if lang == "en" else "未记录"),
            "support_words": message(ctx["support_reason"], lang),
            "kv_holds": lambda shown: kv_figures.kv_holds(shown, kv_plans, lang)}


def render_config(e2e: E2EFiles, where: dict[str, str], deploy: Deployment, weights: Any = None,
                  published: PublishedBaseline | None = None) -> str:
    import yaml

    head = [f"# Written by llm-adapt from one run: the metric values are the served model's scores measured on "
            f"{where['en']}."]
    head += [f"# Published baseline: {published.words()}." if published else
             "# Published baseline: not given (export --baseline-file names the published score of this model)."]
    if weights:
        head.append(f"# Weights: {weights}.")
    if deploy.planned:
        head.append(f"# The NPU deployment is {deploy.label}: upstream's test has not run this config on an NPU.")
    head += [f"# Left out: {line}" for line in e2e["left"]]
    return "\n".join(head) + "\n" + yaml.safe_dump(e2e["config"], sort_keys=False, allow_unicode=True)


def run_command(run: RunData, model_id: str) -> str:
    """The `llm-adapt run` that measures the tasks an e2e config needs, on the NPU host."""
    model = run.inspect.model
    name = model.get("given") if model.get("origin") in ("hf", "ms") else f"hf:{model_id}"
    return f"llm-adapt run {name} --platform npu --tasks gsm8k --out runs/{safe_name(model_id.split('/')[-1])}"


def refuse_without_npu(run: RunData, plan_for: str | None) -> None:
    """One line (exit 2) for a run not on an NPU without --plan-for npu: the files describe an NPU deployment."""
    where = origin.ran_on(run)
    if where == origin.NPU:
        return
    if plan_for is None:
        raise UsageError(f"{run.dir}: this run ran on {where.upper()} ({origin.hardware_of(run)}), not on an NPU; "
                         "vLLM-Ascend's files describe an NPU deployment: add --plan-for npu to write the NPU plan, "
                         "labelled planned, not run on an NPU")
    if plan_for not in PLAN_FOR:
        raise UsageError(f"--plan-for {plan_for!r}: use one of {', '.join(PLAN_FOR)}")


def deployment_for(run: RunData, model_id: str) -> Deployment:
    """The NPU deployment to describe: the run's own on an NPU, else the planner's for an NPU; its ACLGraph and
    EP rows carry what a differential run checked of them, where it ran (upstream/setting_checks.py)."""
    from llm_adapt.upstream.setting_checks import with_checks

    if origin.ran_on(run) == origin.NPU:
        started = run.stages.get("serve", {}).get("status") == StageStatus.DONE
        deploy = from_npu_run(run, model_id, commands(run.inspect.plan, run.serve, started))
    else:
        deploy = planned_for_npu(run, model_id)
    deploy.gates["features"] = with_checks(deploy.gates.get("features") or [], checks_of(run))
    return deploy


def checks_of(run: RunData) -> dict[str, SettingCheck]:
    """A differential run's checks per feature (tp, ep, graph), on the platform the run ran on."""
    from llm_adapt.upstream.setting_checks import setting_checks

    return setting_checks(run.settings.rows if run.settings else [], origin.ran_on(run))


def settings_command(run: RunData, model_id: str, deploy: Deployment) -> str:
    """The differential run to repeat on the NPU: the settings this run served, else eager, graph and the
    plan's tensor parallel, or the smallest the model's heads split over (expert parallel too for a MoE model),
    each judged against the fp32 gold; no tensor-parallel setting where no size up to 16 splits them."""
    from llm_adapt.inspect.plan import smallest_split

    rows = run.settings.rows if run.settings else []
    if rows:
        names = [r["setting"]["name"] for r in rows]
    else:
        config = run.inspect.config if run.inspect else {}
        tp = max(int(deploy.plan.tensor_parallel or 1), 2)
        if config.get("num_heads") and config.get("num_kv_heads"):  # 9 heads (SmolLM2-135M) split over 3, not 2
            tp = smallest_split(int(config["num_heads"]), int(config["num_kv_heads"]), at_least=tp)
        moe = any(r.get("feature") == "EP" and r.get("status") != "not-applicable" for r in deploy.gates["features"])
        names = ["eager", "graph"] + ([f"tp{tp}"] + ([f"ep{tp}"] if moe else []) if tp else [])
    model = run.inspect.model if run.inspect else {}
    name = model.get("given") if model.get("origin") in ("hf", "ms") else f"hf:{model_id}"
    return f"llm-adapt run {name} --platform npu --settings {','.join(names)}"


def render_all(ctx: ExportContext, report_lang: str) -> dict[str, str]:
    env = environment()
    files = {"tutorial": env.get_template("tutorial.en.md.j2").render(**ctx, **template_functions(ctx, "en")),
             "report": env.get_template(f"report.{report_lang}.md.j2").render(**ctx, **template_functions(ctx, report_lang)),
             "runbook": env.get_template(f"runbook.{report_lang}.md.j2").render(**ctx, **template_functions(ctx, report_lang)),
             "nav": nav.nav_patch(Path(ctx["paths"]["tutorial"]).name)}
    if ctx["e2e"]["config"]:
        files["config"] = render_config(ctx["e2e"], ctx["where"], ctx["deploy"], ctx["weights_reason"],
                                        ctx["baseline"])
        files["accuracy"] = accuracy_report(ctx["e2e"]["fields"], ctx["where"], ctx["deploy"], ctx["weights_reason"])
    if ctx["ev"] and ctx["ev"].aisbench and not ctx["deploy"].planned:  # a baseline measured on an NPU only
        files["nightly"] = render_nightly(ctx)
    return files


def render_nightly(ctx: ExportContext) -> str:
    """The nightly AISBench case of an eval run through AISBench, its baseline the served accuracy measured."""
    import yaml

    ev, deploy = ctx["ev"], ctx["deploy"]
    ais = ev.aisbench
    config = formats.nightly_config(ais, name=f"{ctx['model']}-acc", model_id=ctx["model_id"],
                                    argv=deploy.plan.command("eager").argv())
    problems = formats.nightly_problems(config)
    if problems:  # our own output against upstream's loader: a bug here
        raise AdaptError(f"the nightly config would not load upstream: {'; '.join(problems)}")
    items = next((r["n"] for r in ev.paired), 0)
    head = [f"# Written by llm-adapt from one run: the baseline is the served model's AISBench accuracy, measured on "
            f"{ctx['where']['en']} over {items} items of {ais['data'] if ais['data'] != 'given' else 'a local copy of the dataset'}"
            f" (greedy: {ais['generation_kwargs']}).",
            f"# threshold {ais['threshold']:g} points: tools/aisbench.py passes baseline - threshold <= acc <= baseline + threshold."]
    if ctx["baseline"]:
        head.append(f"# Published baseline, beside it: {ctx['baseline'].words()}.")
    if deploy.planned:
        head.append(f"# The NPU deployment is {deploy.label}: upstream's nightly has not run this case on an NPU.")
    if ctx.get("weights_reason"):
        head.append(f"# Weights: {ctx['weights_reason']}.")
    return "\n".join(head) + "\n" + yaml.safe_dump(config, sort_keys=False, allow_unicode=True)



def accuracy_report(fields: formats.ReportFields, where: dict[str, str], deploy: Deployment, weights: Any = None) -> str:
    """benchmarks/accuracy/<Model>.md: upstream's report template with jinja2's default options, as its
    test renders it, then where the scores were measured and on what weights."""
    plain = jinja2.Environment(loader=jinja2.PackageLoader("llm_adapt.upstream", "templates"))
    note = (f"Measured by llm-adapt on {where['en']} (lm-evaluation-harness against the served model); "
            f"upstream's test has not run this config{' on an NPU: the NPU deployment is ' + deploy.label if deploy.planned else ''}."
            + (f" Weights: {weights}." if weights else ""))
    return plain.get_template("accuracy.md.j2").render(**fields, note=note) + "\n"


def refuse_interrupted(run) -> None:
    """An interrupted run is not judged: nothing of it goes upstream until `--resume` has finished it."""
    from llm_adapt.judged.verdict import interrupted_by

    stopped = interrupted_by(run.status)
    if stopped:
        model = run.status.model or "MODEL"
        raise UsageError(f"{run.dir} was interrupted ({stopped}) and is not judged; finish it with "
                         f"`llm-adapt run {model} --out {run.dir} --resume` (with the flags it was started with), "
                         "then export it")


def export(run_dir: Path, to: str, out: Path, report_lang: str = "zh", *, plan_for: str | None = None,
           model_id: str | None = None, baseline_file: Path | None = None) -> Exported:
    """Write the files under `out` at their upstream paths. The tutorial is in English, as upstream keeps
    its tutorials; the report and runbook in `report_lang`. Refuses (exit 2, one line) a run not on an
    NPU without `plan_for`, and a model without a hub id without `model_id`."""
    if to not in TARGETS:
        raise UsageError(f"--to {to!r}: use one of {', '.join(TARGETS)}")
    if report_lang not in LANGS:
        raise UsageError(f"--lang {report_lang!r}: use one of {', '.join(LANGS)}")
    run = load_run(run_dir)
    refuse_interrupted(run)
    if not run.inspect or run.adaptation is None:
        raise UsageError(f"{run.dir}: export needs inspect.json and adaptation.json; run `llm-adapt run` "
                         "(this version writes both) and export its directory")
    refuse_without_npu(run, plan_for)
    hub = origin.hub_id(run.inspect.model, model_id)
    published = read_baseline(baseline_file, hub) if baseline_file else None
    deploy = deployment_for(run, hub)
    ctx = context(run, deploy, hub, published)
    files = render_all(ctx, report_lang)
    known = origin.known_local_paths(Path(run_dir), run)
    for kind, text in files.items():
        leaked = origin.local_paths(text, known)
        if leaked:  # a template or a result carried one through: a bug to fix here, never a file to ship
            raise AdaptError(f"the exported {ctx['paths'][kind]} would carry a local path ({leaked[0]}); not written")
    written = []
    for kind, text in files.items():
        path = Path(out) / ctx["paths"][kind]
        write_text_atomic(path, text)
        written.append(path)
    notes = [] if ctx["e2e"]["config"] else [
        "no e2e config or accuracy report written: "
        + ("its values must be measured on an NPU, and this run was not" if deploy.planned else
           "; ".join(ctx["e2e"]["left"]) if ctx["e2e"]["left"] else "the run measured no task (no eval stage)")
        + f"; `{run_command(run, hub)}` measures one"]
    return Exported(written, notes)
