"""The environment a deployment exports, as rows: each with its rule, a one-line explanation in English
and Chinese, and the document it comes from. Each platform module keeps its own rows (`Platform.env_rows`);
inspect/platform_env.py applies them to a plan and explains them.

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


def ascend_docs(*pages: str) -> str:
    return f"{ASCEND_DOCS}: " + "; ".join(pages)


def vllm_docs(*pages: str) -> str:
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


def visible_devices(c: EnvContext) -> str:
    return ",".join(str(i) for i in range(c.devices))


def const(value: str) -> Callable[[EnvContext], str]:
    return lambda c: value


def node_ip(c: EnvContext) -> str:
    return c.node_ip
