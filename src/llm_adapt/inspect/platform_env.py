"""The environment a deployment plan exports: one table per platform, each row with its rule,
a one-line explanation in English and Chinese, and the document it comes from.

The plan's `env` on Ascend and CUDA is generated from these tables (`env_for`), and `explain`
turns any plan environment into rows the report prints in its language. CPU keeps its own rules
in plan.py (cores to bind, KV space, preloads); its rows here only explain what plan.py set.

Every Ascend and CUDA row is from the vendors' documentation, read in these versions (the
documentation sources inside the published sdists), and has not run on a device in this project.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

ASCEND_DOCS = "vLLM-Ascend v0.23.0.post1 docs"
VLLM_DOCS = "vLLM v0.32.0 docs"
# Pages, cited by title as each documentation set names them.
TUNING = "developer guide 'Optimization and Tuning'"
HCCL_TUNING = "developer guide 'Optimization and Tuning', 3.1 HCCL Optimization"
QWEN3_DENSE = "tutorial 'Qwen3-Dense' (single node)"
QWEN3_MOE = "tutorial 'Qwen3-235B-A22B' (single node)"
MULTINODE_DP = "tutorial 'GLM4.x' (multi-node, data parallel)"
ASCEND_RAY = "tutorial 'Ray Distributed (Qwen3-235B-A22B)'"
KIMI_TABLE = "tutorial 'Kimi-K2-Thinking' (table of validated environment variables)"
NIC_BINDING = "tutorial 'Qwen3.5-397B-A17B' (multi-node: the variables that bind HCCL, Gloo and TP to one NIC)"
NETWORK = "'Troubleshooting', Incorrect network setup"
VLLM_RAY = "'Parallelism and Scaling', Ray cluster setup with containers"
VLLM_DP = "'Data Parallel Deployment' (its examples pin CUDA_VISIBLE_DEVICES per rank)"
VLLM_CPU = "installation guide 'CPU'"


def _ascend(*pages: str) -> str:
    return f"{ASCEND_DOCS}: " + "; ".join(pages)


def _vllm(*pages: str) -> str:
    return f"{VLLM_DOCS}: " + "; ".join(pages)


FROM_DOCS = "from the vendor's documentation"
ON_CI = "verified on this project's CI (CPU)"

# Placeholders the user fills in on each node; multinode.py lists them in the plan.
NODE_IP = "<NODE_IP>"
HEAD_IP = "<HEAD_IP>"
IFNAME = "<IFNAME>"

FORMS = ("single", "data_parallel", "ray")


@dataclass(frozen=True)
class EnvContext:
    """What the rules look at, for one node of one deployment form."""

    devices: int  # devices this node's vLLM processes use
    nodes: int = 1
    form: str = "single"  # one of FORMS
    node_ip: str = NODE_IP  # this node's address (the head's is HEAD_IP)

    @property
    def communicating(self) -> bool:
        """More than one device takes part, so collectives run (TP, PP or DP > 1, or several nodes)."""
        return self.devices > 1 or self.nodes > 1


@dataclass(frozen=True)
class Rule:
    holds: Callable[[EnvContext], bool]
    en: str
    zh: str


RULES: dict[str, Rule] = {
    "always": Rule(lambda c: True, "always", "始终设置"),
    "communicating": Rule(lambda c: c.communicating,
                          "when more than one device takes part (TP, PP or DP > 1, or several nodes)",
                          "多于一张卡参与时（TP、PP 或 DP > 1，或多节点）"),
    "multinode": Rule(lambda c: c.nodes > 1, "on every node of a multi-node deployment", "多节点部署的每个节点"),
    "data_parallel": Rule(lambda c: c.nodes > 1 and c.form == "data_parallel",
                          "on every node of a multi-node data-parallel deployment", "多节点数据并行部署的每个节点"),
    "ray": Rule(lambda c: c.nodes > 1 and c.form == "ray",
                "on every node of a Ray cluster, before `ray start`", "Ray 集群的每个节点，在 `ray start` 之前"),
    "cpu_plan": Rule(lambda c: False, "set by the CPU plan's own rules", "由 CPU 部署规则设置"),
}


@dataclass(frozen=True)
class EnvRow:
    name: str
    value: Callable[[EnvContext], str] | None  # None: set elsewhere (the CPU plan)
    rule: str  # key of RULES
    en: str
    zh: str
    source: str
    verified: str = FROM_DOCS


def _devices(c: EnvContext) -> str:
    return ",".join(str(i) for i in range(c.devices))


def _const(value: str) -> Callable[[EnvContext], str]:
    return lambda c: value


def _node_ip(c: EnvContext) -> str:
    return c.node_ip


ASCEND: tuple[EnvRow, ...] = (
    EnvRow("ASCEND_RT_VISIBLE_DEVICES", _devices, "always",
           "the NPUs this node's vLLM processes use (the plan's TP x local DP cards)",
           "本节点 vLLM 进程使用的 NPU（按 TP × 本地 DP 的卡数）",
           _ascend(QWEN3_DENSE, ASCEND_RAY)),
    EnvRow("PYTORCH_NPU_ALLOC_CONF", _const("expandable_segments:True"), "always",
           "torch_npu's caching allocator grows segments instead of splitting fixed blocks: less fragmentation",
           "torch_npu 缓存分配器使用可扩展段而非切分固定块，减少 NPU 内存碎片",
           _ascend(TUNING, QWEN3_DENSE, KIMI_TABLE)),
    EnvRow("TASK_QUEUE_ENABLE", _const("1"), "always",
           "torch_npu dispatches operators through its task queue; the tuning guide's level 2 saves more host time "
           "but raises the memory peak",
           "torch_npu 通过任务队列下发算子；调优指南中的 2 级可进一步节省主机时间，但会提高内存峰值",
           _ascend(QWEN3_DENSE, TUNING, KIMI_TABLE)),
    EnvRow("OMP_PROC_BIND", _const("false"), "always",
           "OpenMP threads are not pinned to cores (avoids overly strict CPU binding of the worker processes)",
           "不把 OpenMP 线程绑定到固定核（避免 worker 进程的 CPU 绑定过严）",
           _ascend(QWEN3_MOE, MULTINODE_DP, KIMI_TABLE)),
    EnvRow("OMP_NUM_THREADS", _const("1"), "always",
           "one OpenMP thread per process: the NPU computes, so the workers' host threads need not compete for cores",
           "每个进程一个 OpenMP 线程：计算在 NPU 上，worker 的主机线程无需争抢 CPU 核",
           _ascend(QWEN3_MOE, MULTINODE_DP)),
    EnvRow("HCCL_OP_EXPANSION_MODE", _const("AIV"), "communicating",
           "HCCL schedules collectives on the AI Vector cores instead of the AI CPU (the AIV communication path)",
           "HCCL 集合通信由 AI Vector 核调度而非 AI CPU（AIV 通信路径）",
           _ascend(HCCL_TUNING, QWEN3_DENSE, KIMI_TABLE)),
    EnvRow("HCCL_BUFFSIZE", _const("1024"), "communicating",
           "MB of HCCL buffer for data shared between two NPUs; 1024 as in the guides' TP=2 dense example",
           "两张 NPU 间共享数据的 HCCL 缓冲区大小（MB）；取 1024，与指南中 TP=2 稠密模型及已验证的示例一致",
           _ascend(QWEN3_DENSE, HCCL_TUNING, KIMI_TABLE)),
    EnvRow("HCCL_IF_IP", _node_ip, "multinode",
           "this node's own address, on which HCCL sets up its cross-node communicators",
           "本节点自身的 IP，HCCL 在此地址上建立跨节点通信域",
           _ascend(ASCEND_RAY, MULTINODE_DP, NIC_BINDING)),
    EnvRow("GLOO_SOCKET_IFNAME", _const(IFNAME), "multinode",
           "network interface of torch's Gloo (host-side) process groups",
           "torch Gloo（主机侧）进程组使用的网卡",
           _ascend(ASCEND_RAY, MULTINODE_DP, NIC_BINDING)),
    EnvRow("TP_SOCKET_IFNAME", _const(IFNAME), "multinode",
           "network interface of the TP (TensorPipe) sockets",
           "TP（TensorPipe）通信套接字使用的网卡",
           _ascend(ASCEND_RAY, MULTINODE_DP, NIC_BINDING)),
    EnvRow("HCCL_SOCKET_IFNAME", _const(IFNAME), "data_parallel",
           "network interface HCCL uses for its host-side socket exchange between nodes",
           "HCCL 节点间主机侧套接字通信使用的网卡",
           _ascend(MULTINODE_DP, NIC_BINDING)),
    EnvRow("RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES", _const("1"), "ray",
           "stops Ray (> 2.1) from rewriting ASCEND_RT_VISIBLE_DEVICES, so vLLM-Ascend sees the NPUs set above",
           "阻止 Ray（> 2.1）改写 ASCEND_RT_VISIBLE_DEVICES，使 vLLM-Ascend 看到上面设置的 NPU",
           _ascend(ASCEND_RAY)),
)

CUDA: tuple[EnvRow, ...] = (
    EnvRow("CUDA_VISIBLE_DEVICES", _devices, "always",
           "the GPUs this node's vLLM processes use (the plan's TP x local DP cards)",
           "本节点 vLLM 进程使用的 GPU（按 TP × 本地 DP 的卡数）",
           _vllm(VLLM_DP)),
    EnvRow("NCCL_SOCKET_IFNAME", _const(IFNAME), "multinode",
           "network interface NCCL uses for the node's address (bootstrap, and transfers without InfiniBand)",
           "NCCL 使用的网卡（建链；无 InfiniBand 时也用于传输）",
           _vllm(NETWORK)),
    EnvRow("GLOO_SOCKET_IFNAME", _const(IFNAME), "multinode",
           "network interface of torch's Gloo (host-side) process groups",
           "torch Gloo（主机侧）进程组使用的网卡",
           _vllm(NETWORK)),
    EnvRow("VLLM_HOST_IP", _node_ip, "ray",
           "this node's own address, so that vLLM and Ray agree on it (a different value on each node)",
           "本节点自身的 IP，使 vLLM 与 Ray 使用同一地址（每个节点不同）",
           _vllm(VLLM_RAY, NETWORK)),
)

CPU: tuple[EnvRow, ...] = (
    EnvRow("VLLM_CPU_KVCACHE_SPACE", None, "cpu_plan",
           "GiB of host memory vLLM-CPU reserves for the KV cache (the plan's pool, sized from the memory free now)",
           "vLLM-CPU 为 KV Cache 预留的主机内存（GiB，按当前可用内存规划）",
           _vllm(VLLM_CPU), ON_CI),
    EnvRow("VLLM_CPU_OMP_THREADS_BIND", None, "cpu_plan",
           "cores the worker's OpenMP threads are bound to: all (the default 'auto' leaves one to the frontend)",
           "worker 的 OpenMP 线程绑定的 CPU 核：全部核（默认 auto 会留一个给前端）",
           _vllm(VLLM_CPU), ON_CI),
    EnvRow("LD_PRELOAD", None, "cpu_plan",
           "tcmalloc (and Intel OpenMP on x86) loaded first, as vLLM's CPU installation guide does",
           "预加载 tcmalloc（x86 上还有 Intel OpenMP），与 vLLM CPU 安装指南一致",
           _vllm(VLLM_CPU), ON_CI),
)

TABLES: dict[str, tuple[EnvRow, ...]] = {"npu": ASCEND, "cuda": CUDA, "cpu": CPU}


def table(platform: str) -> tuple[EnvRow, ...]:
    return TABLES.get(platform, ())


def env_for(platform: str, ctx: EnvContext) -> dict[str, str]:
    """The variables whose rule holds for this node, in table order."""
    return {row.name: row.value(ctx) for row in table(platform)
            if row.value is not None and RULES[row.rule].holds(ctx)}


def explain(platform: str, env: dict[str, str]) -> list[dict[str, str]]:
    """One row per variable of `env`: its value, rule, explanation (en, zh), source and how it was checked.
    A variable no table knows gets empty text, which the plan's tests forbid."""
    rows = {row.name: row for row in table(platform)}
    out = []
    for name, value in env.items():
        row = rows.get(name)
        rule = RULES[row.rule] if row else None
        out.append({"name": name, "value": value,
                    "rule_en": rule.en if rule else "", "rule_zh": rule.zh if rule else "",
                    "en": row.en if row else "", "zh": row.zh if row else "",
                    "source": row.source if row else "", "verified": row.verified if row else ""})
    return out


def note_lines(notes: list[dict[str, str]], lang: str = "en") -> list[str]:
    """One line per variable for a terminal: name=value, what it does, when it is set, where it comes from."""
    return [f"  {n['name']}={n['value']}: {n[lang] or '?'} ({n[f'rule_{lang}'] or '?'}; {n['source'] or 'no source'})"
            for n in notes]
