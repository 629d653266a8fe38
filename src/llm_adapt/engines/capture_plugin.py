"""Layer capture inside a served vLLM engine: a vLLM general plugin, off unless asked for.

Why a general plugin (entry point `vllm.general_plugins`) and not dev-mode `collective_rpc`:
- vLLM 0.32 loads general plugins in every process it starts, the engine core and each worker
  included (`WorkerWrapperBase.init_worker` calls `load_general_plugins()` before it resolves the
  worker class), so the hooks live where the model lives without a custom worker class and
  without editing vLLM's files;
- `collective_rpc` needs `VLLM_SERVER_DEV_MODE=1`, which opens development endpoints to anyone
  who reaches the server, and would ship every layer's tensors back through the engine's IPC;
- the engine is otherwise the one being deployed: same argv, same kernels, same scheduler.

Off by default: without `LLM_ADAPT_CAPTURE_DIR` in the environment `register()` returns at once,
nothing is patched and no hook exists, so a normal server pays nothing.

With it: `BaseModelLoader.load_model` is wrapped so that each loaded model gets forward hooks on
`model.model.embed_tokens`, every `model.model.layers[i]` and `model.model.norm`. Hooks record only
while the directory holds the file `armed` (written by the client for its capture), and a record is
written only for a forward that starts at position 0: one request's prefill. V1 packs the tokens of
all scheduled requests into one flat batch, so the client sends one prompt at a time, with
max_tokens=1 and a fresh cache_salt (no prefix-cache hit may shorten the prefill), and keeps the
tokens of its own prompt (the prefix of the record).

Residual fusion: vLLM's Llama-style layers return (hidden, residual) and fold the residual into the
next layer's fused add-norm, so a layer's true output is hidden + residual. That sum is taken inside
the hook, at once: the next fused add-norm may overwrite both tensors in place.

Parts: when the armed file names layers (`{"parts": [5]}`), those layers' attention and MLP
(`self_attn`, `mlp`) also record their input and output (`layer 5:attention:in`, ...), so the client
can run the reference's same part on the engine's own input (accuracy/parts_served.py). The input is
copied before the part runs: the fused add-norm that made it works in place.

Routing: in a MoE layer whose parts are armed, the router's choice is recorded too (`layer 5:router:ids`
and `layer 5:router:weights`, [T, k]): the experts and the weights the engine combined them with, as its
router's select_experts returned them (accuracy/routing.served_routing compares them with the gold's).
Only rank 0 records, like the rest: at tensor parallel every rank routes the same replicated tokens.

Eager only: under torch.compile or CUDA graphs the hooks would be traced into a graph or skipped by
a replay. The plugin then refuses (refused.json says why) and attaches nothing.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

ENV_DIR = "LLM_ADAPT_CAPTURE_DIR"
ARMED = "armed"  # the client's switch: records are written only while this file exists
READY = "ready.json"  # written once hooks are attached: the plugin did load in the engine
REFUSED = "refused.json"  # written instead when the engine runs compiled
ERROR = "error.json"  # a hook that failed (the engine itself goes on serving)
RECORD_GLOB = "capture-*.pt"

_LAYER = re.compile(r"^model\.layers\.(\d+)$")
# (the name the report uses, the attribute of vLLM's decoder layer): the parts the capture can record
PARTS = (("attention", "self_attn"), ("MLP", "mlp"))


def part_key(layer: int, part: str, end: str) -> str:
    """The record's key of a part's input ("in") or output ("out"): 'layer 5:attention:out'."""
    return f"layer {layer}:{part}:{end}"


def armed_parts(text: str) -> set[int]:
    """The layers whose parts an armed file asks for ('{"parts": [5]}'); none for '1' or anything else. Pure."""
    try:
        data = json.loads(text)
    except ValueError:
        return set()
    return {int(i) for i in data.get("parts", [])} if isinstance(data, dict) else set()


def register() -> bool:
    """The entry point vLLM calls in each of its processes. True when the loader was wrapped."""
    directory = os.environ.get(ENV_DIR)
    if not directory:
        return False  # off: nothing imported, nothing patched
    after_model_load("_llm_adapt_capture",
                     lambda model, vllm_config: attach(model, Path(directory), compile_refusal(vllm_config)))
    return True


def after_model_load(marker: str, hook) -> None:
    """Wrap vLLM's model loader so that `hook(model, vllm_config)` runs on every model it loads in
    this process; `marker` keeps a plugin that loads twice from wrapping twice."""
    from vllm.model_executor.model_loader.base_loader import BaseModelLoader

    original = BaseModelLoader.load_model
    if getattr(original, marker, False):
        return  # plugins may load more than once per process

    def load_model(self, vllm_config, model_config, prefix: str = ""):
        model = original(self, vllm_config, model_config, prefix)
        hook(model, vllm_config)
        return model

    setattr(load_model, marker, True)
    BaseModelLoader.load_model = load_model


def compile_refusal(vllm_config) -> str | None:
    """Why hooks cannot see this engine's forward (None when it runs eagerly)."""
    from vllm.config import CompilationMode, CUDAGraphMode

    comp = vllm_config.compilation_config
    if comp.mode != CompilationMode.NONE:
        return f"the engine compiles its model (compilation mode {comp.mode.name}); start it with --enforce-eager"
    if comp.cudagraph_mode not in (None, CUDAGraphMode.NONE):
        return f"the engine replays CUDA graphs ({comp.cudagraph_mode.name}); start it with --enforce-eager"
    return None


def gold_name(module_path: str) -> str | None:
    """vLLM module path -> the gold's tensor name ('embeddings', 'layer i', 'final norm'); None for others."""
    if module_path == "model.embed_tokens":
        return "embeddings"
    if module_path == "model.norm":
        return "final norm"
    match = _LAYER.match(module_path)
    return f"layer {match[1]}" if match else None


def unfused(name: str, output: Any):
    """A module's true output as a fresh float32 tensor [T, D].

    Decoder layers return (hidden, residual) with the residual still to be added (fused into the
    next norm): their output is hidden + residual. The final norm called with a residual returns
    (normed, new residual): its output is the first. A copy always, since vLLM reuses buffers in place."""
    import torch

    if isinstance(output, (tuple, list)):
        hidden = output[0]
        residual = output[1] if len(output) > 1 and name.startswith("layer ") else None
        if residual is not None:
            return hidden.to(torch.float32) + residual.to(torch.float32)
        output = hidden
    return output.detach().to(torch.float32, copy=True)


def capture_targets(model) -> list[tuple[str, Any]]:
    """(gold name, module) for the embedding, every decoder layer and the final norm, in forward order."""
    found = [(gold_name(path), module) for path, module in model.named_modules()]
    return sorted([(name, module) for name, module in found if name], key=lambda item: _forward_order(item[0]))


def _forward_order(name: str) -> int:
    return -1 if name == "embeddings" else 1 << 30 if name == "final norm" else int(name.split()[1])


class Recorder:
    """One forward's tensors, written as one record (atomically) when the capture is armed.

    The decoder's own hooks cannot be used: vLLM's compile decorator calls its `forward` directly,
    bypassing nn.Module hooks. So the embedding's hook opens a record (its input is the token ids),
    the first layer's gives the positions, the final norm's closes it."""

    def __init__(self, directory: Path, names: list[str]):
        self.directory, self.names = directory, names
        self.current: dict[str, Any] | None = None
        self.count = 0
        self.parts: set[int] = set()  # layers whose parts this forward records

    def on_embed(self, input_ids, output) -> None:
        self.current = None
        armed = self.directory / ARMED
        if armed.exists() and input_ids is not None:
            self.parts = armed_parts(armed.read_text())
            self.current = {"input_ids": input_ids.detach().cpu().reshape(-1).clone(), "positions": None,
                            "tensors": {}}
            self.add("embeddings", output)

    def on_first_layer(self, positions) -> None:
        if positions is not None and positions.dim() > 1:
            positions = positions[0]  # M-RoPE's [3, T]: the text positions
        if self.current is not None and not is_prefill_chunk(positions):
            self.current = None  # a decode step: copy nothing more
        elif self.current is not None:
            self.current["positions"] = positions.detach().cpu().reshape(-1).clone()

    def add(self, name: str, output: Any) -> None:
        if self.current is not None:
            self.current["tensors"][name] = unfused(name, output).cpu()

    def add_part(self, layer: int, key: str, tensor: Any) -> None:
        if self.current is not None and layer in self.parts and tensor is not None:
            self.current["tensors"][key] = tensor.detach().to("cpu", copy=True).float()

    def finish(self) -> None:
        record, self.current = self.current, None
        if record is None or not is_prefill_chunk(record["positions"]) or not set(self.names) <= set(record["tensors"]):
            return
        import torch

        self.count += 1
        path = self.directory / f"capture-{os.getpid()}-{self.count:06d}.pt"
        tmp = path.with_suffix(".tmp")
        torch.save(record, tmp)
        os.replace(tmp, path)  # the client never reads half a record


def is_prefill(positions) -> bool:
    """A forward that starts at position 0: a request's prefill (decode steps start further on)."""
    return positions is not None and positions.numel() > 0 and int(positions[0]) == 0


def is_prefill_chunk(positions) -> bool:
    """A forward that opens with a prefill or with a later chunk of one (chunked prefill: two or more
    consecutive positions); a decode step holds one position per request."""
    if is_prefill(positions):
        return True
    return positions is not None and positions.numel() > 1 and int(positions[1]) == int(positions[0]) + 1


def attach(model, directory: Path, refusal: str | None) -> list:
    """Hooks on the model's embedding, layers and final norm (none when `refusal`); writes
    ready.json, or refused.json with the reason."""
    directory.mkdir(parents=True, exist_ok=True)
    if not _first_rank():
        return []
    targets = capture_targets(model)
    names = [name for name, _ in targets]
    if refusal is None and not ("embeddings" in names and "final norm" in names and "layer 0" in names):
        refusal = f"{type(model).__name__} has no model.embed_tokens / model.layers / model.norm to hook"
    if refusal:
        _write_json(directory / REFUSED, {"reason": refusal, "pid": os.getpid()})
        return []
    recorder = Recorder(directory, names)
    handles = [module.register_forward_hook(_hook(recorder, name), with_kwargs=True) for name, module in targets]
    handles += _part_hooks(recorder, targets)
    _write_json(directory / READY, {"pid": os.getpid(), "mode": "eager", "names": names,
                                    "model": type(model).__name__})
    return handles


def _hook(recorder: Recorder, name: str):
    """The forward hook of one module. It returns None: a hook's return value would replace the output."""
    def hook(module, args: tuple, kwargs: dict, output) -> None:
        try:
            if name == "embeddings":
                recorder.on_embed(kwargs.get("input_", args[0] if args else None), output)
                return
            if name == "layer 0":  # layer(positions, hidden_states, residual)
                recorder.on_first_layer(kwargs.get("positions", args[0] if args else None))
            recorder.add(name, output)
            if name == "final norm":
                recorder.finish()
        except Exception as exc:  # a capture bug must never take the served model down
            recorder.current = None
            _write_json(recorder.directory / ERROR, {"module": name, "error": f"{type(exc).__name__}: {exc}"})
    return hook


def _part_hooks(recorder: Recorder, targets: list[tuple[str, Any]]) -> list:
    """Each decoder layer's attention and MLP: a pre-hook keeps the input, a hook the output (idle unless
    the armed file names the layer)."""
    handles = []
    for name, layer in targets:
        if not name.startswith("layer "):
            continue
        index = int(name.split()[1])
        if (router := moe_router(layer)) is not None:
            _router_hook(recorder, index, router)
        for part, attr in PARTS:
            module = getattr(layer, attr, None)
            if module is None or not hasattr(module, "register_forward_hook"):
                continue
            handles.append(module.register_forward_pre_hook(
                _part_hook(recorder, index, part_key(index, part, "in"), lambda a, kw, o: _part_input(a, kw)),
                with_kwargs=True))
            handles.append(module.register_forward_hook(
                _part_hook(recorder, index, part_key(index, part, "out"), lambda a, kw, o: _main(o)), with_kwargs=True))
    return handles


def moe_router(layer):
    """The router object of a vLLM MoE layer (its MoE runner's `router`: select_experts gives each token's
    weights and experts, through its _compute_routing), or None for a dense layer."""
    runner = getattr(getattr(layer, "mlp", None), "experts", None)
    router = getattr(runner, "router", None)
    return router if callable(getattr(router, "_compute_routing", None)) else None


def router_keys(layer: int) -> tuple[str, str]:
    """The record's keys of a MoE layer's routing: its experts and their weights."""
    return f"layer {layer}:router:ids", f"layer {layer}:router:weights"


def _router_hook(recorder: Recorder, index: int, router) -> None:
    """Wrap this router instance's select_experts: what it returns is recorded while the layer is armed."""
    original = router.select_experts
    ids_key, weights_key = router_keys(index)

    def select_experts(*args, **kwargs):
        weights, ids = original(*args, **kwargs)
        try:
            recorder.add_part(index, ids_key, ids)
            recorder.add_part(index, weights_key, weights)
        except Exception as exc:  # a capture bug must never take the served model down
            _write_json(recorder.directory / ERROR, {"module": ids_key, "error": f"{type(exc).__name__}: {exc}"})
        return weights, ids

    router.select_experts = select_experts


def _part_input(args: tuple, kwargs: dict):
    """The hidden states a part is called with: vLLM's attention takes (positions, hidden_states), its MLP (x)."""
    if "hidden_states" in kwargs:
        return kwargs["hidden_states"]
    tensors = [a for a in args if hasattr(a, "is_floating_point") and a.is_floating_point()]
    return tensors[0] if tensors else next((v for v in kwargs.values() if hasattr(v, "is_floating_point")), None)


def _main(output):
    return output[0] if isinstance(output, (tuple, list)) else output


def _part_hook(recorder: Recorder, index: int, key: str, pick):
    """A pre-hook (3 arguments) or hook (4) recording `pick(args, kwargs, output)` under `key`; never raises."""
    def hook(module, args, kwargs, output=None):
        try:
            recorder.add_part(index, key, pick(args, kwargs, output))
        except Exception as exc:  # a capture bug must never take the served model down
            _write_json(recorder.directory / ERROR, {"module": key, "error": f"{type(exc).__name__}: {exc}"})
        return None
    return hook


def _first_rank() -> bool:
    """Only tensor-parallel rank 0 writes: every rank holds the same (all-reduced) hidden states."""
    try:
        from vllm.distributed import get_tensor_model_parallel_rank

        return get_tensor_model_parallel_rank() == 0
    except (ImportError, AssertionError, RuntimeError):
        return True


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
