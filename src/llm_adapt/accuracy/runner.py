"""A runner: one model on one torch device at one dtype (optionally int8 weights), with the
three things the comparison needs: greedy generation, a teacher-forced pass that captures every
layer, and "shadow" calls of single layers on inputs from elsewhere.
"""

from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import torch

from llm_adapt.accuracy.layout import find_layout
from llm_adapt.errors import UsageError

TORCH_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
OTHER_DEVICES = ("xpu", "mps", "auto")  # torch devices of no platform here; auto: accelerate's big-model placement


def devices() -> tuple[str, ...]:
    """The devices a runner takes: every platform's torch devices (platforms/*.py), then OTHER_DEVICES."""
    from llm_adapt.platforms import PLATFORMS

    return (*dict.fromkeys(d for p in PLATFORMS.values() for d in p.torch_devices), *OTHER_DEVICES)
AUTO_MAX_MEMORY_ENV = "LLM_ADAPT_AUTO_MAX_MEMORY"  # e.g. "cuda:0=70GiB,cpu=200GiB": caps for --reference auto:fp32


@dataclass(frozen=True)
class RunnerSpec:
    device: str  # "cpu", "cuda", "cuda:1", "npu", ...
    dtype: str  # fp32 | bf16 | fp16
    quant: str | None = None  # int8-tensor | int8-channel
    model_path: Path | None = None  # another checkpoint of the same architecture
    kernel: str | None = None  # VARIANT_KERNEL: another kernel path, to measure a floor's own spread
    emulated: bool = False  # bf16 numerics with fp32 matmuls (bf16_emulation.py): a floor on a CPU without bf16

    @property
    def label(self) -> str:
        text = f"{self.device}:{self.dtype}" + (f"+{self.quant}" if self.quant else "")
        text += f" [{self.kernel}]" if self.kernel else ""
        text += f" ({EMULATED_LABEL})" if self.emulated else ""
        return text + (f" ({Path(self.model_path).name})" if self.model_path else "")


# The floor's kernel-spread rerun: eager attention (matmul, softmax, matmul) instead of the fused SDPA kernel.
# It once also ran on one thread: on an AVX2 EPYC (2 cores) one thread and two gave bit-identical outputs
# in fp32 and in emulated bf16 (the GEMMs split rows among threads, not the sums), at 1.4-1.8x the time.
VARIANT_KERNEL = "eager-attention"
EMULATED_LABEL = "bf16 emulated in fp32"
BF16_ENV = "LLM_ADAPT_BF16"  # native | emulated | auto (default): how a bf16 floor runs on the CPU


def default_target(platform: str | None = None) -> RunnerSpec:
    """The in-process target when none is named: this machine's device at bf16. On a CPU without
    native bf16 it is emulated (labelled so): torch's converted bf16 kernels are not the path a
    served engine takes there either, and they would take most of the run. Name `--target cpu:bf16`
    to measure them natively."""
    from llm_adapt.platforms import detect_platform

    return floor_numerics(RunnerSpec(platform or detect_platform(), "bf16"))


def floor_numerics(spec: RunnerSpec) -> RunnerSpec:
    """A noise floor as it should run here: bf16 on a CPU without native bf16 is emulated (its
    numbers, at fp32 speed); everything else, and every target the user names, runs natively."""
    import os

    from llm_adapt.platforms import cpu_has_native_bf16

    if spec.dtype != "bf16" or spec.device.split(":")[0] != "cpu" or spec.emulated:
        return spec
    choice = os.environ.get(BF16_ENV, "auto")
    if choice not in ("native", "emulated", "auto"):
        raise UsageError(f"{BF16_ENV}={choice!r}: use native, emulated or auto")
    emulate = choice == "emulated" or (choice == "auto" and not cpu_has_native_bf16())
    return replace(spec, emulated=True) if emulate else spec


def floor_for(target: RunnerSpec, reference: RunnerSpec, explicit: RunnerSpec | None,
              targets: tuple[RunnerSpec, ...] = ()) -> RunnerSpec | None:
    """The runner whose error vs the gold is this target's noise floor.

    Default: the reference's device at the target's dtype and quantization (so quantization error
    is separated from backend error); for a target already on the reference's device, the
    unquantized version of it; None when the target itself is that floor. A derived floor runs with
    the numerics a floor uses here (bf16 emulated on a CPU without bf16), unless it is one of the
    `targets` anyway, measured as asked.
    """
    if explicit is not None:
        return explicit
    floor = replace(target, device=reference.device, model_path=None)
    if floor == target and target.quant:
        floor = replace(target, quant=None)
    elif floor == target:
        floor = host_floor(target)
    if floor is None or floor == reference:
        return None
    return floor if floor in targets else floor_numerics(floor)


def host_floor(target: RunnerSpec) -> RunnerSpec | None:
    """A target on the gold's own accelerator (cuda:fp32 gold, cuda:bf16 target) still gets a measured floor:
    its dtype on the host CPU, as the reference reports measure theirs. Without it the target was judged on
    absolute budgets, which a clean bf16 model with flat logits missed on the H200 (same top-1 0.945). On a
    CPU host the target is that floor itself: None, and the rules without a floor judge it (decisive
    positions, the contraction-length basis)."""
    if target.device.split(":")[0] in ("cpu", "auto"):
        return None
    return replace(target, device="cpu", model_path=None)


def parse_runner(text: str) -> RunnerSpec:
    """'cpu:fp32', 'cuda:0:bf16', 'npu:bf16' -> RunnerSpec."""
    device, sep, dtype = text.rpartition(":")
    if not sep or dtype not in TORCH_DTYPES or device.split(":")[0] not in devices():
        raise UsageError(f"{text!r}: expected DEVICE:DTYPE with DEVICE in {', '.join(devices())} "
                         f"(optionally with an index, cuda:1) and DTYPE in fp32, bf16, fp16")
    return RunnerSpec(device=device, dtype=dtype)


def auto_max_memory(text: str | None = None) -> dict[int | str, str] | None:
    """accelerate's max_memory from "cuda:0=70GiB,cpu=200GiB" (LLM_ADAPT_AUTO_MAX_MEMORY); None: its
    own balance over every visible device and the host. Pure on its argument."""
    import os

    text = os.environ.get(AUTO_MAX_MEMORY_ENV) if text is None else text
    if not text:
        return None
    caps: dict[int | str, str] = {}
    for part in text.split(","):
        name, sep, size = part.strip().partition("=")
        if not sep or not size:
            raise UsageError(f"{AUTO_MAX_MEMORY_ENV}={text!r}: expected DEVICE=SIZE pairs, e.g. cuda:0=70GiB,cpu=200GiB")
        _, _, index = name.partition(":")
        caps[int(index) if index.isdigit() else name] = size  # an accelerator by its index, as accelerate keys it
    return caps


def check_device(device: str) -> None:
    """One clear line when the device's backend is missing or sees no device: a platform's own torch
    extension first (torch_npu for npu), then torch.<module>.is_available()."""
    from llm_adapt.platforms import PLATFORMS

    kind = device.split(":")[0]
    if kind in ("auto", "cpu"):
        return  # auto: placed by accelerate over whatever is visible, the host included
    platform = next((p for p in PLATFORMS.values() if p.torch_module == kind), None)
    if platform is not None and platform.torch_extension is not None:
        module, install = platform.torch_extension
        if importlib.util.find_spec(module) is None:
            raise UsageError(f"device {kind} needs {module}: {install}")
        importlib.import_module(module)  # registers torch.<module>
    backend = torch.backends.mps if kind == "mps" else getattr(torch, kind, None)
    if backend is None or not backend.is_available():
        raise UsageError(f"device {kind} is not available to torch here; pick another --target/--reference device")


def quantize_int8_(model: torch.nn.Module, per_channel: bool) -> int:
    """Weight-only symmetric int8 on every Linear (lm_head included), dequantized for compute.

    Per tensor: scale = max|W| / 127 (the reports' scheme); per channel: one scale per output row.
    Tied embeddings are untied first so the embedding itself stays unquantized.
    """
    if getattr(model.config, "tie_word_embeddings", False) and hasattr(model, "lm_head"):
        model.lm_head.weight = torch.nn.Parameter(model.lm_head.weight.detach().clone())
    count = 0
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, torch.nn.Linear):
                w = module.weight.float()
                amax = w.abs().amax(dim=1, keepdim=True) if per_channel else w.abs().max()
                scale = (amax / 127).clamp_min(1e-12)
                module.weight.copy_((torch.round(w / scale).clamp(-127, 127) * scale).to(module.weight.dtype))
                count += 1
    return count


GREEDY_BATCH = 16
PADDING_BUDGET = 0.25  # a batch may add this share of padding to its prompts' own tokens ...
# ... or, when more, the prefill a decode loop costs: one decode step of a batch costs about what
# prefilling this many tokens does (94 ms against 3.6 ms a token, SmolLM2-135M in fp32 on 2 cores),
# so one batch fewer saves max_new_tokens steps of it.
STEP_TOKENS = 24


def length_batches(lengths: list[int], batch_size: int = GREEDY_BATCH, padding_budget: float = PADDING_BUDGET,
                   new_tokens: int = 0) -> list[list[int]]:
    """Prompt indices grouped by length: at most `batch_size` each, and left padding to the longest
    costing at most `padding_budget` of the batch's own tokens, or STEP_TOKENS x `new_tokens` padding
    tokens where that is more (the decode steps a separate batch would repeat). Pure."""
    batches: list[list[int]] = []
    for k in sorted(range(len(lengths)), key=lambda i: lengths[i]):
        current = batches[-1] if batches else None
        if current and len(current) < batch_size:
            width = max(lengths[k], *(lengths[j] for j in current))  # sorted: lengths[k]
            own = lengths[k] + sum(lengths[j] for j in current)
            if width * (len(current) + 1) - own <= max(padding_budget * own, STEP_TOKENS * new_tokens):
                current.append(k)
                continue
        batches.append([k])
    return batches


def cut_at_stop(tokens: list[int], eos_ids: list[int]) -> list[int]:
    """A batched continuation up to and including its first stop token (the rest is padding). Pure."""
    for i, token in enumerate(tokens):
        if token in eos_ids:
            return tokens[: i + 1]
    return tokens


class Runner:
    """A loaded model plus its capture hooks."""

    def __init__(self, spec: RunnerSpec, default_path: Path):
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging as hf_logging

        from llm_adapt.accuracy.routing import moe_gates

        hf_logging.disable_progress_bar()  # our own progress bar covers loading
        check_device(spec.device)
        self.spec = spec
        path = Path(spec.model_path or default_path)
        extra = {"attn_implementation": "eager"} if spec.kernel == VARIANT_KERNEL else {}
        self._weight_copies = None
        if spec.emulated and spec.dtype != "bf16":
            raise UsageError(f"{spec.label}: only bf16 can be emulated")
        self._offload = None
        if spec.device == "auto":  # across every visible accelerator and the host, the rest on disk
            import tempfile

            self._offload = tempfile.mkdtemp(prefix="llm-adapt-offload-")
            self.model = AutoModelForCausalLM.from_pretrained(path, dtype=TORCH_DTYPES[spec.dtype], device_map="auto",
                                                              max_memory=auto_max_memory(), offload_folder=self._offload,
                                                              **extra)
            self.model.eval()
        else:
            self.model = AutoModelForCausalLM.from_pretrained(path, dtype=TORCH_DTYPES[spec.dtype], **extra)
            self.model.eval().to(spec.device)
        self.input_device = self.model.get_input_embeddings().weight.device
        if self.input_device.type == "meta":  # offloaded to disk: accelerate's hooks bring it in
            self.input_device = torch.device("cpu")
        self.model.generation_config.pad_token_id = self.model.generation_config.pad_token_id or 0
        self.quantized_linears = quantize_int8_(self.model, spec.quant == "int8-channel") if spec.quant else 0
        layout = find_layout(self.model)  # found on the model: GPT-J's transformer.h as Llama's model.layers
        self.layers, self.norm = layout.layers, layout.norm
        self.gates = moe_gates(self.layers)  # {layer index: expert router}, found once (accuracy/routing.py)

    @property
    def placement(self) -> dict[str, str] | None:
        """Where accelerate put each module (auto only): {module: device}."""
        return {k: str(v) for k, v in getattr(self.model, "hf_device_map", {}).items()} if self._offload else None

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()  # on an error too: an offload folder never outlives its runner

    def close(self) -> None:
        del self.model, self.layers, self.norm, self.gates
        self._weight_copies = None
        if self._offload:
            import shutil

            shutil.rmtree(self._offload, ignore_errors=True)

    @contextlib.contextmanager
    def numerics(self):
        """The runner's numerics: bf16 emulation when the spec asks for it (one fp32 copy of each weight
        for the runner's life)."""
        from llm_adapt.accuracy.bf16_emulation import Bf16Emulation, WeightCopies, default_budget

        if self.spec.emulated and self._weight_copies is None:
            self._weight_copies = WeightCopies(default_budget())
        with Bf16Emulation(self._weight_copies) if self.spec.emulated else contextlib.nullcontext():
            yield

    @torch.no_grad()
    def generate(self, input_ids: list[int], max_new_tokens: int, eos_ids: list[int]) -> list[int]:
        ids = torch.tensor([input_ids], device=self.input_device)
        with self.numerics():
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                                      max_new_tokens=max_new_tokens, eos_token_id=eos_ids, temperature=None,
                                      top_p=None, top_k=None)
        return out[0, len(input_ids):].tolist()

    @torch.no_grad()
    def generate_all(self, prompts: list[list[int]], max_new_tokens: int, eos_ids: list[int],
                     batch_size: int = GREEDY_BATCH, progress: Callable[[int, int], None] | None = None) -> list[list[int]]:
        """Greedy continuations of every prompt, several prompts per forward (left-padded, KV-cached):
        each decode step reads the weights once for the whole batch instead of once per prompt.

        Prompts of similar length share a batch (padding_budget), so one long prompt does not pad the
        rest to its length. Each continuation ends at its first stop token, as `generate` does alone.
        `progress(done, total)` advances once per decode step of every batch."""
        out: list[list[int]] = [[] for _ in prompts]
        batches = length_batches([len(p) for p in prompts], batch_size, new_tokens=max_new_tokens)
        steps = _StepCounter(progress, len(batches) * max_new_tokens)
        for batch in batches:
            width = max(len(prompts[k]) for k in batch)
            pad = self.model.generation_config.pad_token_id
            ids = torch.tensor([[pad] * (width - len(prompts[k])) + prompts[k] for k in batch], device=self.input_device)
            mask = torch.tensor([[0] * (width - len(prompts[k])) + [1] * len(prompts[k]) for k in batch],
                                device=self.input_device)
            with self.numerics():
                gen = self.model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=max_new_tokens,
                                          eos_token_id=eos_ids, temperature=None, top_p=None, top_k=None,
                                          stopping_criteria=steps.criteria())
            steps.finish_batch(max_new_tokens)
            for row, k in enumerate(batch):
                out[k] = cut_at_stop(gen[row, width:].tolist(), eos_ids)
        return out

    @torch.no_grad()
    def capture(self, input_ids: list[int], keep_kwargs: bool = False, gates: bool = False) -> "Capture":
        """One teacher-forced forward: embeddings, every layer's output, final norm, logits (on CPU, fp32);
        `gates`: each expert router's view too (accuracy/routing.py), where the model has routers."""
        from llm_adapt.accuracy.routing import record_gates

        outputs: list[torch.Tensor] = []
        arrived: list[torch.Tensor | None] = []  # each layer's and the final norm's actual input, in order
        kwargs: list[dict] = []
        routed: dict = {}
        hooks = [self.model.get_input_embeddings().register_forward_hook(lambda m, a, o: outputs.append(_cpu(o)))]
        if gates:
            hooks += record_gates(self.gates, routed)
        for layer in self.layers:
            hooks.append(layer.register_forward_hook(lambda m, a, o: outputs.append(_cpu(o))))
            hooks.append(layer.register_forward_pre_hook(
                lambda m, a, kw: arrived.append(_input_of(a, kw)), with_kwargs=True))
            if keep_kwargs:
                hooks.append(layer.register_forward_pre_hook(
                    lambda m, a, kw: kwargs.append({k: v for k, v in kw.items() if k != "hidden_states"}),
                    with_kwargs=True))
        hooks.append(self.norm.register_forward_pre_hook(lambda m, a, kw: arrived.append(_input_of(a, kw)),
                                                         with_kwargs=True))
        hooks.append(self.norm.register_forward_hook(lambda m, a, o: outputs.append(_cpu(o))))
        try:
            ids = torch.tensor([input_ids], device=self.input_device)
            with self.numerics():
                logits = self.model(ids, use_cache=False).logits
        finally:
            for hook in hooks:
                hook.remove()
        return Capture(hidden=outputs, logits=_cpu(logits)[0], layer_kwargs=kwargs, gates=routed,
                       inputs=computed_between(outputs, arrived))

    @torch.no_grad()
    def shadow(self, capture: "Capture", reference_hidden: list[torch.Tensor],
               gates_into: dict | None = None, reference_inputs: dict[int, torch.Tensor] | None = None
               ) -> list[torch.Tensor]:
        """Each layer (and the final norm) run on the reference's actual input to it: each one's own error.

        The input to layer i is the reference's output of the module before it, except where the model
        computes something between the two (`reference_inputs`, Capture.inputs: Granite's embedding
        multiplier before layer 0, say), found by the reference's own forward, never assumed.
        `capture` must come from this runner with keep_kwargs=True (its own position embeddings
        and mask, so a wrong rope_theta in this model still shows up locally). `gates_into`: a dict that
        receives each expert router's view on that input (accuracy/routing.py).
        """
        from llm_adapt.accuracy.routing import record_gates

        dtype = TORCH_DTYPES[self.spec.dtype]
        given = reference_inputs or {}
        outs = []
        hooks = record_gates(self.gates, gates_into) if gates_into is not None else []
        try:
            with self.numerics():
                for i, layer in enumerate(self.layers):
                    x = given.get(i, reference_hidden[i]).to(self.input_device, dtype)
                    out = layer(x, **capture.layer_kwargs[i])  # (auto: accelerate's hooks move it to the layer)
                    outs.append(_cpu(out))
                last = len(self.layers)
                outs.append(_cpu(self.norm(given.get(last, reference_hidden[last]).to(self.input_device, dtype))))
        finally:
            for hook in hooks:
                hook.remove()
        return outs


class _StepCounter:
    """Reports decode steps over all batches as one (done, total); a batch that stops early jumps
    to its end, so the bar reaches its total."""

    def __init__(self, progress: Callable[[int, int], None] | None, total: int):
        self.progress, self.total, self.done, self.batch_start = progress, total, 0, 0
        if progress:
            progress(0, total)

    def criteria(self):
        from transformers import StoppingCriteria, StoppingCriteriaList

        counter = self

        class Report(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                counter.done += 1
                if counter.progress:
                    counter.progress(min(counter.done, counter.total), counter.total)
                return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

        return StoppingCriteriaList([Report()])

    def finish_batch(self, steps: int) -> None:
        self.batch_start += steps
        self.done = self.batch_start
        if self.progress:
            self.progress(self.done, self.total)


@dataclass
class Capture:
    hidden: list[torch.Tensor]  # [embeddings, layer 0 .. layer L-1, final norm], each [1, T, D]
    logits: torch.Tensor  # [T, V]
    layer_kwargs: list[dict]
    gates: dict = field(default_factory=dict)  # layer index -> routing.GateRecord, where asked for
    # module index (layer i, or L for the final norm) -> its actual input, only where the model computed it
    # between modules (not the output before it)
    inputs: dict[int, torch.Tensor] = field(default_factory=dict)


def _input_of(args: tuple, kwargs: dict) -> torch.Tensor | None:
    """A decoder layer's or norm's hidden-state input, positional or by name, on the CPU in fp32."""
    tensor = args[0] if args else kwargs.get("hidden_states", kwargs.get("x"))
    return _cpu(tensor) if isinstance(tensor, torch.Tensor) else None


def computed_between(outputs: list[torch.Tensor], arrived: list[torch.Tensor | None]) -> dict[int, torch.Tensor]:
    """The modules whose actual input is not the output of the module before them (outputs: [embeddings, layer 0
    .. layer L-1, final norm]; arrived: the inputs of layer 0 .. L-1 and the final norm): what the model computes
    between modules (a scaled embedding, a residual multiplier), by index. Pure."""
    return {i: x for i, x in enumerate(arrived)
            if x is not None and i < len(outputs) and not (x.shape == outputs[i].shape and torch.equal(x, outputs[i]))}


def _cpu(out) -> torch.Tensor:
    tensor = out[0] if isinstance(out, tuple) else out
    return tensor.detach().to("cpu", torch.float32)


def tensor_names(num_layers: int) -> list[str]:
    return ["embeddings"] + [f"layer {i}" for i in range(num_layers)] + ["final norm"]
