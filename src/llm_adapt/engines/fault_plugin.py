"""For tests only: a fault planted inside a served vLLM engine, where real adaptations break (its
kernels, its positions, its prefill and decode paths), with the checkpoint and the config untouched.

A vLLM general plugin like capture_plugin.py, loaded in every engine process and off unless
LLM_ADAPT_ENGINE_FAULT names a fault, or LLM_ADAPT_ENGINE_FAULT_FILE names a file that names one
(switched while the engine runs; serve with prefix caching off); never set either on a deployment.
Faults:

  decode-only:L:S      decoder layer L's MLP output (the branch before the residual add) times S, on
                       decode tokens only (a layer without an MLP: its branch output)
  prefill-only:L:S     the same on prompt (prefill) tokens only
  scaled:L:S           the same on every token, every step
  attention-scale:L:S  layer L's attention softmax scale times S
  long-prompt:L:S:N    layer L's MLP output times S on the prompt tokens of requests longer than N tokens
                       only (a length class, as a kernel's tiling that breaks past a size)
  nth-request:L:S:N    the same on the prompt tokens of every Nth request the engine starts (its 1st,
                       N+1th, ...: a fault that hits a few requests whatever they hold)
  block-aligned:L:S:B  the same on the prompt tokens of requests whose prompt is a multiple of B tokens long
                       (as vLLM-Ascend #8908: lengths on a block multiple)
  batched:L:S:N        the same on the prompt tokens of a step that prefills N or more requests at once (a
                       batch-variant kernel: a request prefilled alone is never hit)
  rope-beyond:P        every position past P rotated as if 16 positions further on (all layers)
  foreign-kv:L:M       layer L's attention writes and reads layer M's KV cache instead of its own,
                       as layers that share another's KV cache did in vLLM-Ascend's Gemma4 bug
  graph-only:L:S       layer L's MLP output times S inside the compiled graph only: the hook adds it
                       while torch.compile traces the model, so the graph mode's code carries it and
                       an eager engine (--enforce-eager) never does, as a fusion pass or a captured
                       graph's bug would; it must be named at start-up (a compiled graph does not
                       read the fault file again)
  double-reduce:L      layer L's MLP output all-reduced once more over the tensor-parallel group, as
                       vLLM-Ascend's MoE output reduced twice under TP>1 (#10466): N times the output
                       at TP=N, nothing at TP=1 (an all-reduce over one rank is the identity)
  moe-top-k:L:K        layer L's MoE router keeps the weights of its K heaviest experts only (the rest
                       weigh 0; renormalized where the layer renormalizes): top-k changed
  moe-no-renorm:L      layer L's MoE router leaves its chosen experts' weights unrenormalized (their
                       softmax probabilities), on a layer that renormalizes them
  moe-router-bf16:L    layer L's MoE router computes its routing from logits rounded to bf16, in a model
                       whose code computes them in its own dtype: the router at a lower precision than
                       the model asks for (experts chosen and weighed off bf16 logits)
                       (all three in the router's own routing computation, so the weights the experts
                       are combined with, and the capture's record of them, carry the fault)

Any fault may end in @tp, @ep or @graph: it then acts only in that setting (tensor parallel over two
ranks or more; expert parallelism on; inside the compiled graph), as a bug in a path only that setting
takes: 'moe-top-k:1:1@tp'. Every rank runs the plugin; at TP>1 switch a fault file only while the
engine is idle (the ranks read it at their next forward, and a reduction one rank adds and another does
not would hang them).

A named fault turns vLLM's compile cache off in the engine: the cache's key does not see the fault,
so a graph compiled with one would serve a clean run later, or the reverse.

Prefill against decode: V1 packs every scheduled request's tokens into one flat batch whose
positions run up by one within a request. A run of one or two consecutive positions is a decode
token (a request's next token), a longer run a prompt chunk. Two decode requests whose positions
happen to be consecutive would read as a two-token run, still decode; a one- or two-token prompt
chunk would read as decode: the suites' prompts are longer than that.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV_FAULT = "LLM_ADAPT_ENGINE_FAULT"
ENV_FAULT_FILE = "LLM_ADAPT_ENGINE_FAULT_FILE"  # a file naming the fault (empty: none), read as it changes
KINDS = ("decode-only", "prefill-only", "scaled", "attention-scale", "rope-beyond", "foreign-kv", "graph-only",
         "double-reduce", "moe-top-k", "moe-no-renorm", "moe-router-bf16", "long-prompt", "nth-request",
         "block-aligned", "batched")
SPARSE = ("long-prompt", "nth-request", "block-aligned", "batched")  # the faults that hit some requests' prompts only
SCALED = ("scaled", "decode-only", "prefill-only", "graph-only", *SPARSE)  # the faults that scale the MLP's output
ROUTING = ("moe-top-k", "moe-no-renorm", "moe-router-bf16")  # the faults in a MoE layer's router
ONLY = ("tp", "ep", "graph")  # the settings a fault may be confined to (its "@" suffix)
ROPE_SHIFT = 16
DECODE_RUN = 2  # runs of consecutive positions up to this long are decode tokens


@dataclass(frozen=True)
class EngineFault:
    kind: str
    layer: int | None
    value: float
    only: str | None = None  # "tp", "ep" or "graph": the setting it acts in (None: every setting)
    every: int = 0  # long-prompt: the length past which a request is hit; nth-request: N; block-aligned: B;
    # batched: the prompts prefilled in one step from which they are hit

    @property
    def label(self) -> str:
        base = f"{self.kind}:{self.layer}" if self.layer is not None else self.kind
        if self.kind not in LAYER_ONLY:
            base += f":{self.value:g}"
        if self.kind in SPARSE:
            base += f":{self.every}"
        return base + (f"@{self.only}" if self.only else "")


FORMS = {"rope-beyond": "rope-beyond:POSITION", "long-prompt": "long-prompt:LAYER:FACTOR:TOKENS",
         "nth-request": "nth-request:LAYER:FACTOR:N", "block-aligned": "block-aligned:LAYER:FACTOR:BLOCK",
         "batched": "batched:LAYER:FACTOR:REQUESTS",
         "foreign-kv": "foreign-kv:LAYER:OTHER_LAYER",
         "double-reduce": "double-reduce:LAYER", "moe-no-renorm": "moe-no-renorm:LAYER", "moe-top-k": "moe-top-k:LAYER:K",
         "moe-router-bf16": "moe-router-bf16:LAYER"}
LAYER_ONLY = ("double-reduce", "moe-no-renorm", "moe-router-bf16")  # faults named by their layer alone


def parse_fault(text: str) -> EngineFault:
    """'decode-only:5:1.5' -> EngineFault, 'moe-top-k:1:1@tp' one confined to a setting; ValueError naming
    the expected form. Pure."""
    body, _, only = text.partition("@")
    parts = body.split(":")
    kind = parts[0]
    if kind not in KINDS:
        raise ValueError(f"{ENV_FAULT}={text!r}: the kind must be one of {', '.join(KINDS)}")
    if only and only not in ONLY:
        raise ValueError(f"{ENV_FAULT}={text!r}: after '@' give one of {', '.join(ONLY)}")
    fault = _parsed(kind, parts)
    if fault is None:
        raise ValueError(f"{ENV_FAULT}={text!r}: expected {FORMS.get(kind, f'{kind}:LAYER:FACTOR')}[@tp|@ep|@graph]")
    return EngineFault(fault.kind, fault.layer, fault.value, only or None, fault.every)


def _parsed(kind: str, parts: list[str]) -> EngineFault | None:
    try:
        if kind in SPARSE and len(parts) == 4 and int(parts[3]) >= 1:
            return EngineFault(kind, int(parts[1]), float(parts[2]), every=int(parts[3]))
        if kind in SPARSE:
            return None
        if kind == "rope-beyond" and len(parts) == 2:
            return EngineFault(kind, None, float(int(parts[1])))
        if kind in LAYER_ONLY and len(parts) == 2:
            return EngineFault(kind, int(parts[1]), 0.0)
        if kind in ("foreign-kv", "moe-top-k") and len(parts) == 3 and int(parts[2]) >= (1 if kind == "moe-top-k" else 0):
            return EngineFault(kind, int(parts[1]), float(int(parts[2])))
        if kind not in ("rope-beyond", "foreign-kv", "moe-top-k", *LAYER_ONLY) and len(parts) == 3:
            return EngineFault(kind, int(parts[1]), float(parts[2]))
    except ValueError:
        pass
    return None


def routing_fault(fault: EngineFault, weights, ids, logits, renormalize: bool):
    """The routing weights [T, k] a MoE router's fault leaves (ids [T, k], logits [T, E] as it computed them):
    moe-top-k keeps the fault.value heaviest experts' weights and zeroes the rest (an expert of weight 0
    adds nothing: top-K routing), renormalized where the layer renormalizes; moe-no-renorm gives each chosen
    expert its softmax probability over all experts. Pure."""
    import torch

    if fault.kind == "moe-no-renorm":
        return torch.softmax(logits.float(), dim=-1).gather(-1, ids.long()).to(weights.dtype)
    keep = min(int(fault.value), weights.shape[-1])
    heaviest = weights.topk(keep, dim=-1).indices
    mask = torch.zeros_like(weights, dtype=torch.bool).scatter(-1, heaviest, True)
    kept = torch.where(mask, weights, torch.zeros_like(weights))
    return kept / kept.sum(-1, keepdim=True).clamp_min(1e-30) if renormalize else kept


def bf16_rounded(tensor):
    """`tensor` rounded to bf16 and back to its own dtype: a computation at bf16's precision. Pure."""
    import torch

    return tensor.to(torch.bfloat16).to(tensor.dtype)


def acts_here(fault: EngineFault | None, setting: dict) -> bool:
    """Whether a fault confined to a setting acts in this engine now: @tp at TP>1, @ep with expert
    parallelism, @graph while torch.compile traces (graph-only always is). `setting`: {"tp", "ep"}."""
    if fault is None:
        return False
    only = "graph" if fault.kind == "graph-only" else fault.only
    if only == "graph":
        import torch

        return bool(torch.compiler.is_compiling())
    if only == "tp":
        return setting.get("tp", 1) > 1
    if only == "ep":
        return bool(setting.get("ep"))
    return True


def decode_mask(positions):
    """True for the tokens of a flat V1 batch that are decode tokens (see above)."""
    import torch

    n = positions.shape[0]
    if n == 0:
        return torch.zeros(0, dtype=torch.bool, device=positions.device)
    breaks = torch.ones(n, dtype=torch.bool, device=positions.device)
    breaks[1:] = positions[1:] != positions[:-1] + 1  # a new run starts here
    run_id = torch.cumsum(breaks.long(), 0) - 1
    lengths = torch.bincount(run_id)
    return lengths[run_id] <= DECODE_RUN


def prompt_runs(positions) -> list[tuple[int, int]]:
    """The [start, end) token ranges of a flat V1 batch that are prompt chunks (runs longer than DECODE_RUN), in
    batch order."""
    import torch

    n = positions.shape[0]
    if n == 0:
        return []
    breaks = torch.ones(n, dtype=torch.bool, device=positions.device)
    breaks[1:] = positions[1:] != positions[:-1] + 1
    starts = torch.nonzero(breaks).flatten().tolist() + [n]
    return [(a, b) for a, b in zip(starts, starts[1:]) if b - a > DECODE_RUN]


def sparse_rows(fault: EngineFault, positions, counter: dict):
    """The tokens a sparse fault hits in this batch: the prompt chunks of requests longer than fault.every tokens
    (long-prompt), of requests a multiple of fault.every tokens long (block-aligned), of steps that prefill
    fault.every requests or more at once (batched), or of every fault.every-th request started (nth-request: a chunk from position 0 starts one;
    `counter` keeps the count across forwards)."""
    import torch

    rows = torch.zeros(positions.shape[0], dtype=torch.bool, device=positions.device)
    runs = prompt_runs(positions)
    if fault.kind == "batched":  # every prompt of a step that prefills that many at once, none of a lone one
        for start, end in runs if len(runs) >= fault.every else ():
            rows[start:end] = True
        return rows
    for start, end in runs:
        if fault.kind == "long-prompt":
            hit = int(positions[end - 1]) + 1 > fault.every
        elif fault.kind == "block-aligned":  # the chunk that ends the prompt ends at its length
            hit = (int(positions[end - 1]) + 1) % fault.every == 0
        else:
            if int(positions[start]) == 0:
                counter["requests"] = counter.get("requests", 0) + 1
            hit = (counter.get("requests", 1) - 1) % fault.every == 0
        rows[start:end] = hit
    return rows


def register() -> bool:
    """The entry point vLLM calls in each of its processes. True when a fault was planted, or made
    switchable through a file."""
    text, path = os.environ.get(ENV_FAULT), os.environ.get(ENV_FAULT_FILE)
    if not text and not path:
        return False
    os.environ["VLLM_DISABLE_COMPILE_CACHE"] = "1"
    source = FaultFile(path) if path else FixedFault(parse_fault(text))
    from llm_adapt.engines.capture_plugin import after_model_load

    after_model_load("_llm_adapt_fault", lambda model, vllm_config: plant(model, source, engine_setting(vllm_config)))
    return True


def engine_setting(vllm_config) -> dict:
    """{"tp", "ep"}: the tensor-parallel size and whether expert parallelism is on, from vLLM's config."""
    parallel = vllm_config.parallel_config
    return {"tp": int(getattr(parallel, "tensor_parallel_size", 1) or 1),
            "ep": bool(getattr(parallel, "enable_expert_parallel", False))}


class FixedFault:
    """The fault named at start-up, for the engine's whole life."""

    def __init__(self, fault: EngineFault):
        self.fault = fault

    def current(self) -> EngineFault | None:
        return self.fault


class FaultFile:
    """The fault named in a file, read again before every model forward (a few bytes): one engine
    serves several faults in turn, and none while the file is empty or absent. Serve it with prefix
    caching off, so no KV block computed under one fault serves a request under another."""

    def __init__(self, path: str):
        self.path, self.text, self.fault = path, "", None

    def current(self) -> EngineFault | None:
        try:
            with open(self.path) as f:
                text = f.read().strip()
        except FileNotFoundError:
            text = ""
        if text != self.text:
            self.text, self.fault = text, parse_fault(text) if text else None
        return self.fault


def plant(model, source, setting: dict | None = None) -> None:
    """Hooks on vLLM's own modules that make the source's current fault happen in every forward: the
    fault is read once per forward, and each hook acts only where the fault names its layer (and, for a
    fault confined to a setting, only in that setting: `setting` is {"tp", "ep"} of this engine)."""
    import sys

    inner = model.model
    state = {"fault": None, "setting": setting or {"tp": 1, "ep": False}}

    def refresh(module, args, kwargs):
        fault = source.current()
        if fault != state["fault"] and fault is not None:
            print(f"llm-adapt: engine fault planted: {fault.label}", file=sys.stderr, flush=True)  # the tests look for it
        state["fault"] = fault

    # read once per forward, before the first layer: the model's own forward may not run nn.Module's
    # hooks (vLLM wraps it for torch.compile), its layers do
    inner.layers[0].register_forward_pre_hook(refresh, with_kwargs=True)
    attentions = [layer.self_attn.attn for layer in inner.layers]
    for index, layer in enumerate(inner.layers):
        _hook_layer(index, layer, state)
        _hook_kv_cache(index, layer.self_attn, attentions, state)
        _hook_router(index, layer, state)
    refresh(None, (), {})  # a fixed fault is announced at load


def _hook_layer(index: int, layer, state: dict) -> None:
    attn = layer.self_attn
    base_scale = float(attn.attn.impl.scale)

    def before_attention(module, args, kwargs):
        fault = state["fault"] if acts_here(state["fault"], state["setting"]) else None
        attn.attn.impl.scale = base_scale * (fault.value if fault and fault.kind == "attention-scale"
                                             and fault.layer == index else 1.0)
        if not (fault and fault.kind == "rope-beyond"):
            return None
        positions = kwargs.get("positions", args[0] if args else None)  # forward(positions, hidden_states)
        if positions is None:
            return None
        moved = positions + ROPE_SHIFT * (positions > int(fault.value)).to(positions.dtype)
        if "positions" in kwargs:
            return args, {**kwargs, "positions": moved}
        return (moved, *args[1:]), kwargs

    def remember_positions(module, args, kwargs):
        state[("positions", index)] = kwargs.get("positions", args[0] if args else None)  # layer(positions, ...)

    def scale_output(module, args, kwargs, output):
        fault = state["fault"]
        if not (fault and fault.layer == index and fault.kind in (*SCALED, "double-reduce")):
            return None
        if not acts_here(fault, state["setting"]):
            return None
        positions = state.get(("positions", index))
        hidden, residual = output if isinstance(output, tuple) else (output, None)
        if fault.kind == "double-reduce":
            from vllm.distributed import tensor_model_parallel_all_reduce

            hidden = tensor_model_parallel_all_reduce(hidden)
        elif fault.kind in SPARSE and positions is not None:
            hidden = hidden * torch_where(sparse_rows(fault, positions, state.setdefault("counter", {})),
                                          fault.value, hidden)
        elif fault.kind in ("scaled", "graph-only") or positions is None:
            hidden = hidden * fault.value
        else:
            rows = decode_mask(positions)
            if fault.kind == "prefill-only":
                rows = ~rows
            hidden = hidden * torch_where(rows, fault.value, hidden)
        return (hidden, residual) if isinstance(output, tuple) else hidden

    attn.register_forward_pre_hook(before_attention, with_kwargs=True)
    layer.register_forward_pre_hook(remember_positions, with_kwargs=True)
    # inside the MLP, where the served part pass must find it (vLLM's Llama-style layers return the MLP's
    # output as their branch); first among the hooks: the layer capture (capture_plugin.py) records the
    # faulty output
    import torch

    branch = layer.mlp if isinstance(getattr(layer, "mlp", None), torch.nn.Module) else layer
    branch.register_forward_hook(scale_output, with_kwargs=True, prepend=True)


def _hook_kv_cache(index: int, attn_block, attentions: list, state: dict) -> None:
    """foreign-kv: for the attention call of layer `index` only, its KV cache is another layer's
    (vLLM's attention reads `kv_cache` off the Attention module at call time); its own comes back
    after the call, so the other layer keeps running on the entries this one wrote over."""
    own = attentions[index]
    kept = {}

    def swap(module, args, kwargs):
        fault = state["fault"]
        if fault and fault.kind == "foreign-kv" and fault.layer == index and acts_here(fault, state["setting"]):
            kept["cache"] = own.kv_cache
            own.kv_cache = attentions[int(fault.value)].kv_cache

    def restore(module, args, kwargs, output):
        if "cache" in kept:
            own.kv_cache = kept.pop("cache")

    attn_block.register_forward_pre_hook(swap, with_kwargs=True)
    attn_block.register_forward_hook(restore, with_kwargs=True)


def _hook_router(index: int, layer, state: dict) -> None:
    """moe-top-k / moe-no-renorm: the router's own routing computation wrapped on this layer's router
    instance (select_experts calls it), so the experts combine with the faulty weights."""
    from llm_adapt.engines.capture_plugin import moe_router

    router = moe_router(layer)
    if router is None:
        return
    original = router._compute_routing
    renormalize = bool(getattr(router, "renormalize", True))

    def compute_routing(hidden_states, router_logits, *args, **kwargs):
        fault = state["fault"]
        planted = bool(fault and fault.kind in ROUTING and fault.layer == index and acts_here(fault, state["setting"]))
        if planted and fault.kind == "moe-router-bf16":
            return original(hidden_states, bf16_rounded(router_logits), *args, **kwargs)
        weights, ids = original(hidden_states, router_logits, *args, **kwargs)
        if planted:
            weights = routing_fault(fault, weights, ids, router_logits, renormalize)
        return weights, ids

    router._compute_routing = compute_routing


def torch_where(rows, value: float, like):
    """A [tokens, 1] factor: `value` on the chosen rows, 1 elsewhere."""
    import torch

    return torch.where(rows.unsqueeze(-1), torch.tensor(value, dtype=like.dtype, device=like.device),
                       torch.tensor(1.0, dtype=like.dtype, device=like.device))
