"""`llm-adapt export RUN_DIR --to vllm-ascend --out DIR`: the files vLLM-Ascend's model-adapter skill
delivers upstream, in the formats on vLLM-Ascend's main branch (upstream/formats.py), written from one run
directory's JSON.

- docs/source/tutorials/models/<Model>.md                     the tutorial, in the ten-section template (en)
- docs/source/tutorials/models/<Model>-adaptation-report.md   the adaptation report (zh by default)
- docs/source/tutorials/models/<Model>-runbook.md             the runbook (zh by default)
- tests/e2e/models/configs/<Model>.yaml                       the e2e accuracy config (only from public tasks)
- benchmarks/accuracy/<Model>.md                              the accuracy report, in report_template.md's layout

Rules: the files describe an NPU deployment. A run on an NPU exports its own; a run elsewhere exports only
with `--plan-for npu`, which writes the NPU plan labelled "planned, not run on an NPU", while each figure
the run measured keeps the platform it was measured on, named beside it. Every number is one the run
measured or a plan computed; what the run did not measure is written as not measured; models are named by
their hub id; no file carries a path of this machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from llm_adapt.errors import AdaptError, UsageError
from llm_adapt.report.data import RunData, load_run
from llm_adapt.results import write_text_atomic
from llm_adapt.upstream import formats, origin
from llm_adapt.upstream.deployment import Deployment, from_npu_run, planned_for_npu

TARGETS = ("vllm-ascend",)
LANGS = ("en", "zh")
PLAN_FOR = ("npu",)


@dataclass
class Exported:
    written: list[Path]
    notes: list[str] = field(default_factory=list)  # what was not written, and the command that would write it


def paths(model: str) -> dict[str, str]:
    """Where each file lives in a vLLM-Ascend checkout (the accuracy report where upstream's test writes it)."""
    docs = "docs/source/tutorials/models"
    return {"tutorial": f"{docs}/{model}.md", "report": f"{docs}/{model}-adaptation-report.md",
            "runbook": f"{docs}/{model}-runbook.md", "config": f"tests/e2e/models/configs/{model}.yaml",
            "accuracy": f"benchmarks/accuracy/{model}.md"}


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


def same_options(planned: list[str], started: list[str]) -> bool:
    """Whether a started command ran the planned one: the same options, whatever the port (a started
    engine takes a free one) and the program's spelling. Pure."""
    from llm_adapt.command import Command

    def options(argv: list[str]) -> tuple:
        return Command.from_argv(argv).without("--port").options

    return bool(planned) and bool(started) and options(planned) == options(started)


def port_of(argv: list[str], default: int = 8000) -> int:
    from llm_adapt.command import Command

    value = Command.from_argv(argv).get("--port") if argv else None
    return int(value) if value and value.isdigit() else default


def commands(plan: dict[str, Any], serve: dict[str, Any] | None, started: bool) -> dict[str, dict[str, Any]]:
    """The plan's eager and graph commands, each marked verified when this run started exactly it
    (on another port). Pure."""
    served = (serve or {}).get("argv") or []
    return {mode: {"text": plan.get("commands", {}).get(mode, ""),
                   "verified": started and same_options(plan.get("argv", {}).get(mode, []), served)}
            for mode in ("eager", "graph")}


def measured_serve(run: RunData, deploy: Deployment) -> dict[str, Any]:
    """The e2e config's serve settings: those the scores were measured with (dtype, max-model-len, eager
    or not, remote code), on the deployment's devices (tensor parallel, memory share). Pure."""
    inspect, serve = run.get("inspect") or {}, run.get("serve") or {}
    plan = inspect.get("plan", {})
    served_len = ((serve.get("engine_facts") or {}).get("max_model_len")) or plan.get("max_model_len")
    return {"tensor_parallel_size": deploy.plan["tensor_parallel"], "dtype": formats.vllm_dtype(plan["dtype"]),
            "max_model_len": served_len, "gpu_memory_utilization": float(deploy.plan["memory_utilization"]),
            "trust_remote_code": bool(inspect.get("config", {}).get("custom_code")),
            "enforce_eager": True if serve.get("mode") == "eager" else None}


def measured_on(run: RunData) -> dict[str, str]:
    """Where the run's figures were measured, to name beside each of them."""
    ran = origin.ran_on(run.parts)
    hardware, engine = origin.hardware_of(run.parts), origin.engine_of(run.parts)
    return {"platform": ran, "hardware": hardware, "engine": engine,
            "en": f"{hardware} with {engine}" + ("" if ran == origin.NPU else " (not an NPU)"),
            "zh": f"{hardware}，{engine}" + ("" if ran == origin.NPU else "（非 NPU）")}


def e2e_files(run: RunData, deploy: Deployment, model_id: str, where: dict[str, str]) -> dict[str, Any]:
    """The e2e config (None without a public task measured) with its report fields, and the tasks left out."""
    ev = run.get("eval") or {}
    rows, left = formats.task_rows(ev)
    if not rows:
        return {"config": None, "rows": [], "left": left, "fields": None}
    # upstream's configs name the series ("Atlas A2 Series"); the chips where their series is not known
    hardware = (origin.npu_series(run.parts) or where["hardware"]) if where["platform"] == origin.NPU else \
        f"{where['hardware']} with {where['engine']} (measured there; the NPU deployment is {deploy.label})"
    config = formats.e2e_config(rows, model_id=model_id, hardware=hardware, serve=measured_serve(run, deploy),
                                limit=(ev.get("settings") or {}).get("limit"))
    problems = formats.e2e_problems(config)
    if problems:  # our own output against upstream's format: a bug here, not the user's
        raise AdaptError(f"the e2e config would not run upstream: {'; '.join(problems)}")
    fields = formats.report_fields(config, rows, formats.versions_of(run.get("environment") or {}))
    return {"config": config, "rows": rows, "left": left, "fields": fields}


def context(run: RunData, deploy: Deployment, model_id: str) -> dict[str, Any]:
    """Everything the templates show: the run's measurements (each with where it was measured) and the
    NPU deployment (its own, or the plan)."""
    inspect, ad = run.get("inspect") or {}, run.get("adaptation") or {}
    serve, ev = run.get("serve") or {}, run.get("eval") or {}
    status = (run.get("status") or {}).get("stages", {})
    where = measured_on(run)
    e2e = e2e_files(run, deploy, model_id, where)
    from llm_adapt.report.findings import main_target, overall_verdict

    model = safe_name(model_id.split("/")[-1])
    devices = deploy.plan["tensor_parallel"] * deploy.plan["pipeline_parallel"]
    return {"run": run, "bench": run.bench, "insp": inspect, "ad": ad, "serve": serve, "status": status,
            "env": {"packages": {}, "builds": {}, "cann": None, "accelerators": [], "cpu": {}} | (run.get("environment") or {}),
            "probes": run.get("probes"), "ep": run.get("endpoint_accuracy"), "acc": run.get("accuracy"),
            "main": main_target(run.get("accuracy")), "ev": ev, "e2e": e2e, "verdict": overall_verdict(run),
            "started": status.get("serve", {}).get("status") == "done", "served_mode": serve.get("mode"),
            "deploy": deploy, "plan": deploy.plan, "gates": deploy.gates, "where": where, "model_id": model_id,
            "davinci": " ".join(f"--device /dev/davinci{i}" for i in range(devices)),  # the container's NPUs
            "served_name": served_name(deploy.plan) or model, "port": port_of(deploy.plan["argv"]["eager"]),
            "model": model, "paths": paths(model), "weights": weights_line(inspect.get("parameters") or {})}


def served_name(plan: dict[str, Any]) -> str | None:
    from llm_adapt.command import Command

    return Command.from_argv(plan["argv"]["eager"]).get("--served-model-name")


def weights_line(parameters: dict[str, Any]) -> str:
    """The checkpoint's parameters by dtype in words ("134,515,008 in fp32"), or "not measured". Pure."""
    by_dtype = parameters.get("weights_by_dtype") or {}
    if not by_dtype:
        return "not measured (no weights read)"
    return ", ".join(f"{count:,} in {dtype}" for dtype, count in by_dtype.items())


def environment() -> jinja2.Environment:
    from llm_adapt.messages import message, messages, verdict_reasons
    from llm_adapt.report.render import cell, gib, num, pct

    env = jinja2.Environment(loader=jinja2.PackageLoader("llm_adapt.upstream", "templates"), autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    # in a language: a message (in_lang), a list of them (in_lang_all), a stage's reason (stage_reason), a
    # verdict's reasons (reasons_in)
    env.filters.update(cell=cell, num=num, pct=pct, gib=gib, in_lang=message, in_lang_all=messages,
                       stage_reason=lambda body, lang: message(body.get("reason") or "", lang),
                       reasons_in=verdict_reasons)
    return env


def render_config(e2e: dict[str, Any], where: dict[str, str], deploy: Deployment) -> str:
    import yaml

    head = [f"# Written by llm-adapt from one run: the metric values are the served model's scores measured on "
            f"{where['en']}."]
    if deploy.planned:
        head.append(f"# The NPU deployment is {deploy.label}: upstream's test has not run this config on an NPU.")
    head += [f"# Left out: {line}" for line in e2e["left"]]
    return "\n".join(head) + "\n" + yaml.safe_dump(e2e["config"], sort_keys=False, allow_unicode=True)


def run_command(run: RunData, model_id: str) -> str:
    """The `llm-adapt run` that measures the tasks an e2e config needs, on the NPU host."""
    model = (run.get("inspect") or {}).get("model", {})
    name = model.get("given") if model.get("origin") in ("hf", "ms") else f"hf:{model_id}"
    return f"llm-adapt run {name} --platform npu --tasks gsm8k --out runs/{safe_name(model_id.split('/')[-1])}"


def refuse_without_npu(run: RunData, plan_for: str | None) -> None:
    """One line (exit 2) for a run not on an NPU without --plan-for npu: the files describe an NPU deployment."""
    where = origin.ran_on(run.parts)
    if where == origin.NPU:
        return
    if plan_for is None:
        raise UsageError(f"{run.dir}: this run ran on {where.upper()} ({origin.hardware_of(run.parts)}), not on an NPU; "
                         "vLLM-Ascend's files describe an NPU deployment: add --plan-for npu to write the NPU plan, "
                         "labelled planned, not run on an NPU")
    if plan_for not in PLAN_FOR:
        raise UsageError(f"--plan-for {plan_for!r}: use one of {', '.join(PLAN_FOR)}")


def deployment_for(run: RunData, model_id: str) -> Deployment:
    """The NPU deployment to describe: the run's own on an NPU, else the planner's for an NPU."""
    if origin.ran_on(run.parts) == origin.NPU:
        inspect, serve = run.get("inspect") or {}, run.get("serve") or {}
        started = ((run.get("status") or {}).get("stages", {}).get("serve", {}).get("status")) == "done"
        return from_npu_run(run.parts, model_id, commands(inspect["plan"], serve, started))
    return planned_for_npu(run.parts, model_id)


def render_all(ctx: dict[str, Any], report_lang: str) -> dict[str, str]:
    env = environment()
    files = {"tutorial": env.get_template("tutorial.en.md.j2").render(**ctx),
             "report": env.get_template(f"report.{report_lang}.md.j2").render(**ctx),
             "runbook": env.get_template(f"runbook.{report_lang}.md.j2").render(**ctx)}
    if ctx["e2e"]["config"]:
        files["config"] = render_config(ctx["e2e"], ctx["where"], ctx["deploy"])
        files["accuracy"] = accuracy_report(ctx["e2e"]["fields"], ctx["where"], ctx["deploy"])
    return files


def accuracy_report(fields: dict[str, Any], where: dict[str, str], deploy: Deployment) -> str:
    """benchmarks/accuracy/<Model>.md: upstream's report template with jinja2's default options, as its
    test renders it, then where the scores were measured."""
    plain = jinja2.Environment(loader=jinja2.PackageLoader("llm_adapt.upstream", "templates"))
    note = (f"Measured by llm-adapt on {where['en']} (lm-evaluation-harness against the served model); "
            f"upstream's test has not run this config{' on an NPU: the NPU deployment is ' + deploy.label if deploy.planned else ''}.")
    return plain.get_template("accuracy.md.j2").render(**fields, note=note) + "\n"


def export(run_dir: Path, to: str, out: Path, report_lang: str = "zh", *, plan_for: str | None = None,
           model_id: str | None = None) -> Exported:
    """Write the files under `out` at their upstream paths. The tutorial is in English, as upstream keeps
    its tutorials; the report and runbook in `report_lang`. Refuses (exit 2, one line) a run not on an
    NPU without `plan_for`, and a model without a hub id without `model_id`."""
    if to not in TARGETS:
        raise UsageError(f"--to {to!r}: use one of {', '.join(TARGETS)}")
    if report_lang not in LANGS:
        raise UsageError(f"--lang {report_lang!r}: use one of {', '.join(LANGS)}")
    run = load_run(run_dir)
    if not run.get("inspect") or run.get("adaptation") is None:
        raise UsageError(f"{run.dir}: export needs inspect.json and adaptation.json; run `llm-adapt run` "
                         "(this version writes both) and export its directory")
    refuse_without_npu(run, plan_for)
    hub = origin.hub_id(run.get("inspect")["model"], model_id)
    deploy = deployment_for(run, hub)
    ctx = context(run, deploy, hub)
    files = render_all(ctx, report_lang)
    known = origin.known_local_paths(Path(run_dir), run.parts)
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
        + ("; ".join(ctx["e2e"]["left"]) if ctx["e2e"]["left"] else "the run measured no task (no eval stage)")
        + f"; `{run_command(run, hub)}` measures one"]
    return Exported(written, notes)
