"""`llm-adapt export RUN_DIR --to vllm-ascend --out DIR`: the files vLLM-Ascend's model-adapter skill
delivers upstream, written from one run directory's JSON and nothing else.

- docs/source/tutorials/models/<Model>.md                     the tutorial (en by default)
- docs/source/tutorials/models/<Model>-adaptation-report.md   the adaptation report (zh by default)
- docs/source/tutorials/models/<Model>-runbook.md             the runbook (zh by default)
- tests/e2e/models/configs/<Model>.yaml                       the lm-eval accuracy config
- benchmarks/accuracy/<Model>.md                              the accuracy report, in report_template_v2's layout

Rules: every number is one the run measured or planned (its JSON); what the run did not measure is
written as not measured; a command is "verified in this run" only when this run started it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2

from llm_adapt.errors import UsageError
from llm_adapt.report.data import RunData, load_run
from llm_adapt.results import write_text_atomic

TARGETS = ("vllm-ascend",)
LANGS = ("en", "zh")
BUILTIN_PREFIX = "builtin-"


def paths(model: str) -> dict[str, str]:
    """Where each file lives in a vLLM-Ascend checkout."""
    docs = "docs/source/tutorials/models"
    return {"tutorial": f"{docs}/{model}.md", "report": f"{docs}/{model}-adaptation-report.md",
            "runbook": f"{docs}/{model}-runbook.md", "config": f"tests/e2e/models/configs/{model}.yaml",
            "accuracy": f"benchmarks/accuracy/{model}.md"}


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


def same_options(planned: list[str], started: list[str]) -> bool:
    """Whether a started command ran the planned one: the same options, whatever the port (a started
    engine takes a free one) and the program's spelling. Pure."""
    from llm_adapt.engines.command import Command

    def options(argv: list[str]) -> tuple:
        return Command.from_argv(argv).without("--port").options

    return bool(planned) and bool(started) and options(planned) == options(started)


def port_of(argv: list[str], default: int = 8000) -> int:
    from llm_adapt.engines.command import Command

    value = Command.from_argv(argv).get("--port") if argv else None
    return int(value) if value and value.isdigit() else default


def commands(plan: dict[str, Any], serve: dict[str, Any] | None, started: bool) -> dict[str, dict[str, Any]]:
    """The plan's eager and graph commands, each marked verified when this run started exactly it
    (on another port). Pure."""
    served = (serve or {}).get("argv") or []
    return {mode: {"text": plan.get("commands", {}).get(mode, ""),
                   "verified": started and same_options(plan.get("argv", {}).get(mode, []), served)}
            for mode in ("eager", "graph")}


def e2e_config(run: RunData) -> dict[str, Any]:
    """tests/e2e/models/configs/<Model>.yaml as a dict: the keys test_lm_eval_correctness.py reads,
    the values this run's `eval` stage measured on the served model (None for metrics: not measured)."""
    inspect, ev = run.get("inspect") or {}, run.get("eval") or {}
    plan = inspect.get("plan", {})
    tasks: dict[str, list[dict[str, Any]]] = {}
    for score in ev.get("scores", []):
        if score.get("served") is not None:
            tasks.setdefault(score["task"], []).append({"name": score["metric"], "value": round(score["served"], 4)})
    settings = ev.get("settings", {})
    return {
        "model_name": inspect.get("model", {}).get("name"),
        "model_type": "vllm",
        "hardware": hardware_of(run),
        "serve": {"tensor_parallel_size": plan.get("tensor_parallel", 1), "dtype": plan.get("dtype"),
                  "max_model_len": plan.get("max_model_len"),
                  "trust_remote_code": bool(inspect.get("config", {}).get("custom_code"))},
        "tasks": [{"name": name, "metrics": metrics} for name, metrics in tasks.items()],
        "num_fewshot": settings.get("num_fewshot"),
        "limit": settings.get("limit"),
    }


def hardware_of(run: RunData) -> str:
    env = run.get("environment") or {}
    devices = [a.get("name") for a in env.get("accelerators", []) if a.get("name")]
    if devices:
        return ", ".join(dict.fromkeys(devices))
    return f"CPU: {env.get('cpu', {}).get('model', 'unknown')} ({env.get('cpu', {}).get('cores', '?')} cores)"


def context(run: RunData) -> dict[str, Any]:
    """Everything the templates show, taken from the run's results."""
    inspect = run.get("inspect") or {}
    ad = run.get("adaptation")
    if not inspect or ad is None:
        raise UsageError(f"{run.dir}: export needs inspect.json and adaptation.json; run `llm-adapt run` "
                         "(this version writes both) and export its directory")
    serve, ev = run.get("serve") or {}, run.get("eval") or {}
    status = (run.get("status") or {}).get("stages", {})
    config = e2e_config(run)
    builtin = [t["name"] for t in config["tasks"] if t["name"].startswith(BUILTIN_PREFIX)]
    started = status.get("serve", {}).get("status") == "done"
    from llm_adapt.report.findings import main_target, overall_verdict

    return {"run": run, "p": run.parts, "bench": run.bench, "insp": inspect, "plan": inspect.get("plan", {}),
            "ad": ad, "serve": serve, "status": status,
            "env": {"packages": {}, "builds": {}, "cann": None, "accelerators": [], "cpu": {}} | (run.get("environment") or {}),
            "probes": run.get("probes"), "ep": run.get("endpoint_accuracy"), "acc": run.get("accuracy"),
            "main": main_target(run.get("accuracy")), "ev": ev, "config": config, "builtin": builtin,
            "started": started, "served_mode": serve.get("mode"), "verdict": overall_verdict(run),
            "commands": commands(inspect.get("plan", {}), serve, started),
            "port": port_of(inspect.get("plan", {}).get("argv", {}).get("eager", [])),
            "model": safe_name(inspect["model"]["name"]), "paths": paths(safe_name(inspect["model"]["name"])),
            "hardware": hardware_of(run)}


def environment() -> jinja2.Environment:
    from llm_adapt.messages import in_lang, in_lang_all, rendered, verdict_reasons
    from llm_adapt.report.render import cell, gib, num, pct

    env = jinja2.Environment(loader=jinja2.PackageLoader("llm_adapt.upstream", "templates"), autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True)
    # in a language: a keyed text (in_lang), texts beside their keys (in_lang_all), a stage's reason (stage_reason),
    # a verdict's reasons (reasons_in)
    env.filters.update(cell=cell, num=num, pct=pct, gib=gib, in_lang=in_lang, in_lang_all=in_lang_all,
                       stage_reason=rendered, reasons_in=verdict_reasons)
    return env


def render_config(config: dict[str, Any], builtin: list[str]) -> str:
    import yaml

    head = ["# Written by llm-adapt from one measured run: the values are the served model's scores there."]
    if builtin:
        head.append(f"# {', '.join(builtin)}: llm-adapt's built-in task (no public dataset was run offline); "
                    "replace it with a public task (gsm8k) measured on the device before proposing this file.")
    if not config["tasks"]:
        head.append("# tasks: not measured in this run (run it with --tasks to fill them).")
    body = {k: v for k, v in config.items() if v is not None}
    return "\n".join(head) + "\n" + yaml.safe_dump(body, sort_keys=False, allow_unicode=True)


def export(run_dir: Path, to: str, out: Path, report_lang: str = "zh") -> list[Path]:
    """Write the five files under `out` at their upstream paths; returns them. The tutorial is in
    English, as upstream keeps its tutorials; the report and runbook in `report_lang`."""
    if to not in TARGETS:
        raise UsageError(f"--to {to!r}: use one of {', '.join(TARGETS)}")
    if report_lang not in LANGS:
        raise UsageError(f"--lang {report_lang!r}: use one of {', '.join(LANGS)}")
    ctx = context(load_run(run_dir))
    env = environment()
    rendered = {
        "tutorial": env.get_template("tutorial.en.md.j2").render(**ctx),
        "report": env.get_template(f"report.{report_lang}.md.j2").render(**ctx),
        "runbook": env.get_template(f"runbook.{report_lang}.md.j2").render(**ctx),
        "config": render_config(ctx["config"], ctx["builtin"]),
        "accuracy": env.get_template("accuracy_v2.md.j2").render(**ctx),
    }
    written = []
    for kind, text in rendered.items():
        path = Path(out) / ctx["paths"][kind]
        write_text_atomic(path, text)
        written.append(path)
    return written
