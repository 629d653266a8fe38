"""Multi-node deployment commands, in the two forms the vendors' guides use.

- data parallel: every node runs `vllm serve`; node 0 holds the API server and DP ranks
  0..L-1, the others run `--headless` with `--data-parallel-start-rank`. Each DP rank is a whole
  model replica (TP inside a node), so this form needs a model that fits one node.
  (vLLM v0.32.0 documentation, 'Data Parallel Deployment', internal load balancing; vLLM-Ascend
  v0.23.0.post1 tutorial 'GLM4.x', multi-node deployment.)
- Ray: the interface variables are exported on every node before `ray start`; only the head runs
  `vllm serve ... --distributed-executor-backend ray`, with TP = cards per node and PP = nodes.
  (vLLM 'Parallelism and Scaling'; vLLM-Ascend tutorial 'Ray Distributed (Qwen3-235B-A22B)'.)

Pure: the plan's own serve command and layout in, per-node environment and commands out. The
addresses and interface names the user must fill in stay as placeholders (<HEAD_IP>, ...) and are
listed in the result.
"""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass

from llm_adapt.command import Command
from llm_adapt.inspect import platform_env as penv
from llm_adapt.messages import Reason, reason

DP_RPC_PORT = 13345  # vLLM's Data Parallel Deployment example; any free port all nodes can reach
RAY_PORT = 6379  # Ray's default GCS port, as both guides start it
# Options the forms set themselves; the plan's single-node command may carry its own values of them.
PARALLEL_FLAGS = ("--model", "--tensor-parallel-size", "--pipeline-parallel-size", "--distributed-executor-backend",
                  "--enforce-eager")
SERVER_FLAGS = ("--host", "--port")  # headless nodes start no API server

PLACEHOLDERS = {
    penv.HEAD_IP: ("address of node 0 (the head) that every node can reach",
                   "节点 0（头节点）的 IP，所有节点都能访问"),
    penv.NODE_IP: ("this node's own address on that network (node 0's commands already use the head address)",
                   "本节点在该网络上的 IP（节点 0 的命令已使用头节点地址）"),
    penv.IFNAME: ("name of the network interface that carries that address (see `ip addr`)",
                  "承载该 IP 的网卡名（见 `ip addr`）"),
}


@dataclass(frozen=True)
class Topology:
    """What the forms need to know about the plan."""

    platform: str
    nodes: int
    devices_per_node: int
    tp: int  # the plan's TP: one data-parallel replica
    pp: int  # the plan's PP: > 1 means one replica spans nodes
    ray_tp: int  # TP of the Ray form: the largest that fits a node and divides the heads
    num_layers: int
    forms: tuple[str, ...] = ("data_parallel", "ray")  # the platform's (Platform.multinode_forms)
    carried_env: tuple[tuple[str, str], ...] = ()  # the plan's own variables every node exports too (CPU: KV space, ...)


@dataclass
class NodeCommands:
    nodes: list[int]  # node indices that run exactly these commands
    role: str  # "head" or "worker"
    env: dict[str, str]
    ray_start: str | None  # the `ray start` line, where this form needs one
    serve_argv: list[str] | None  # None: this node runs no `vllm serve` (a Ray worker)
    shell: str  # exports, `ray start`, `vllm serve`: what to paste on the node


@dataclass
class Form:
    name: str  # "data_parallel" or "ray"
    available: bool
    reason: str  # why not, when not available ("" when it is); a Reason
    parallel: dict[str, int]
    nodes: list[NodeCommands]


def serve_command(base: Command) -> Command:
    """The plan's command as `vllm serve MODEL ...`: the form multi-node guides use (`--headless` and the
    data-parallel start rank are options of `vllm serve`, not of the API-server module)."""
    return base.without(*PARALLEL_FLAGS).with_program("vllm", "serve", base.model or "")


def plan_multinode(topo: Topology, plan_command: Command) -> dict:
    """Both forms for `topo.nodes` nodes, the placeholders to fill, and each variable explained."""
    serve = serve_command(plan_command)
    forms = [build(topo, serve) for name, build in (("data_parallel", _data_parallel), ("ray", _ray))
             if name in topo.forms]
    values: dict[str, list[str]] = {}  # each variable's distinct values over forms and nodes
    for form in forms:
        for node in form.nodes:
            for name, value in node.env.items():
                values.setdefault(name, [])
                values[name] += [value] if value not in values[name] else []
    used = {p for form in forms for node in form.nodes for p in PLACEHOLDERS if p in node.shell}
    return {
        "nodes": topo.nodes,
        "forms": [asdict(f) for f in forms],
        "placeholders": [{"name": p, "en": en, "zh": zh} for p, (en, zh) in PLACEHOLDERS.items() if p in used],
        "env_notes": penv.explain(topo.platform, {k: " or ".join(v) for k, v in values.items()}),
    }


def _data_parallel(topo: Topology, serve: Command) -> Form:
    if topo.pp > 1:
        return _unavailable("data_parallel", reason("dp_needs_pp", pp=topo.pp))
    local = topo.devices_per_node // topo.tp
    size = local * topo.nodes
    parallel = {"data_parallel_size": size, "data_parallel_size_local": local, "tensor_parallel_size": topo.tp}
    common = serve.with_option("--data-parallel-size", str(size)).with_option("--data-parallel-size-local", str(local))
    if topo.tp > 1:
        common = common.with_option("--tensor-parallel-size", str(topo.tp))
    common = (common.with_option("--data-parallel-address", penv.HEAD_IP)
              .with_option("--data-parallel-rpc-port", str(DP_RPC_PORT)))
    # Node 0 gets no --data-parallel-start-rank: vLLM 0.32 reads a start rank on a node that serves the API
    # as hybrid load balancing (and, with one local rank, as external balancing, which it refuses for dense models).
    nodes = [_node(topo, "data_parallel", 0, local * topo.tp, common, None)]
    for i in range(1, topo.nodes):
        worker = (common.without(*SERVER_FLAGS).with_option("--headless")
                  .with_option("--data-parallel-start-rank", str(i * local)))
        nodes.append(_node(topo, "data_parallel", i, local * topo.tp, worker, None))
    return Form("data_parallel", True, "", parallel, nodes)


def _ray(topo: Topology, serve: Command) -> Form:
    if topo.nodes > topo.num_layers:
        return _unavailable("ray", reason("ray_pp_over_layers", pp=topo.nodes, layers=topo.num_layers))
    parallel = {"tensor_parallel_size": topo.ray_tp, "pipeline_parallel_size": topo.nodes}
    head_serve = serve.with_option("--tensor-parallel-size", str(topo.ray_tp)) if topo.ray_tp > 1 else serve
    head_serve = (head_serve.with_option("--pipeline-parallel-size", str(topo.nodes))
                  .with_option("--distributed-executor-backend", "ray"))
    head_start = Command(("ray", "start"), (("--head", None), ("--node-ip-address", penv.HEAD_IP),
                                            ("--port", str(RAY_PORT))))
    worker_start = Command(("ray", "start"), (("--address", f"{penv.HEAD_IP}:{RAY_PORT}"),
                                              ("--node-ip-address", penv.NODE_IP)))
    nodes = [_node(topo, "ray", 0, topo.ray_tp, head_serve, head_start),
             _node(topo, "ray", 1, topo.ray_tp, None, worker_start, list(range(1, topo.nodes)))]
    return Form("ray", True, "", parallel, nodes)


def _unavailable(name: str, why: Reason) -> Form:
    return Form(name, False, why, {}, [])


def _node(topo: Topology, form: str, index: int, devices: int, serve: Command | None, ray_start: Command | None,
          indices: list[int] | None = None) -> NodeCommands:
    node_ip = penv.HEAD_IP if index == 0 else penv.NODE_IP
    env = dict(topo.carried_env) | penv.env_for(topo.platform, penv.EnvContext(devices=devices, nodes=topo.nodes,
                                                                               form=form, node_ip=node_ip))
    return NodeCommands(nodes=indices or [index], role="head" if index == 0 else "worker", env=env,
                        ray_start=shlex.join(ray_start.argv()) if ray_start else None,
                        serve_argv=serve.argv() if serve else None, shell=_shell(env, ray_start, serve))


def _shell(env: dict[str, str], ray_start: Command | None, serve: Command | None) -> str:
    """Exports first (Ray reads them when it starts), then `ray start`, then `vllm serve`."""
    first, then = (ray_start, serve) if ray_start else (serve, None)
    assert first is not None, "a node runs `ray start`, `vllm serve` or both"
    return first.shell(env) + (f"\n{then.shell()}" if then else "")


def summary_lines(multinode: dict, known: set[str] = frozenset()) -> list[str]:
    """The multi-node section for a terminal: each form, each node's commands, the placeholders, and the
    variables not already explained (`known`)."""
    lines = [f"Multi-node, {multinode['nodes']} nodes (fill in: "
             + "; ".join(f"{p['name']} = {p['en']}" for p in multinode["placeholders"]) + ")"]
    for form in multinode["forms"]:
        title = "data parallel" if form["name"] == "data_parallel" else "Ray"
        if not form["available"]:
            lines.append(f"\n{title}: not available: {form['reason']}")
            continue
        lines.append(f"\n{title}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in form["parallel"].items()))
        for node in form["nodes"]:
            lines.append(f"# node {', '.join(map(str, node['nodes']))} ({node['role']})\n{node['shell']}")
    new = [n for n in multinode["env_notes"] if n["name"] not in known]
    return lines + (["\nVariables of the multi-node forms:", *penv.note_lines(new)] if new else [])
