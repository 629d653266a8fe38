"""The AISBench config file for one eval, written as text: the served model's config in the form vLLM-Ascend's
tutorials write `vllm_api_general_chat` (host_ip, host_port, model, max_out_len, batch_size,
generation_kwargs), AISBench's own dataset config with its path pointed at a local copy, and its example
summarizer. Pure: the text is built from plain values and tested as text.

AISBench reads it as an mmengine config with `read_base()` (its imports stay lazy, so AISBench can print the
config back): the dataset config is named as vLLM-Ascend's nightly names it (`gsm8k/
gsm8k_gen_0_shot_cot_chat_prompt`) and its `*_datasets` list imported; AISBench's config check requires
models, datasets and a summarizer."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urlparse

from llm_adapt.errors import UsageError

DEFAULT_DATASET = "gsm8k/gsm8k_gen_0_shot_cot_chat_prompt"  # vLLM-Ascend's nightly accuracy case
SERVED_ABBR = "served"  # the results/<abbr>/ folder of each side
GOLD_ABBR = "gold"
# the served model's request classes: chat completions (vllm_api_general_chat) or completions (vllm_api_general)
API_CLASSES = {"chat": "VLLMCustomAPIChat", "completions": "VLLMCustomAPI"}
REQUEST_CONF = {"chat": "vllm_api_general_chat", "completions": "vllm_api_general"}
# greedy on both sides, so each item pairs with the gold's greedy answer; vLLM-Ascend's nightly sends
# temperature 0.6 (tools/aisbench.py), where items would differ by sampling alone
GREEDY = {"temperature": 0, "ignore_eos": False}
_DATASET = re.compile(r"^([A-Za-z0-9_]+)/([A-Za-z0-9_]+)$")


@dataclass(frozen=True)
class Served:
    base_url: str  # ends with /v1
    model: str  # the served model name
    api: str = "chat"  # chat | completions
    max_out_len: int = 512
    batch_size: int = 4  # concurrent requests
    api_key: str | None = None
    generation_kwargs: dict = field(default_factory=lambda: dict(GREEDY))


def dataset_module(conf: str) -> tuple[str, str]:
    """('gsm8k', 'ais_bench.benchmark.configs.datasets.gsm8k.gsm8k_gen_0_shot_cot_chat_prompt') of an upstream
    `dataset_conf` (FAMILY/NAME); a malformed one is one line naming the form."""
    found = _DATASET.match(conf.strip())
    if not found:
        raise UsageError(f"--aisbench-dataset {conf!r}: give AISBench's dataset config as FAMILY/NAME, "
                         f"e.g. {DEFAULT_DATASET}")
    family, name = found.groups()
    return family, f"ais_bench.benchmark.configs.datasets.{family}.{name}"


def model_entry(s: Served) -> dict:
    """The served model's config, field by field as vLLM-Ascend's tutorials write it."""
    url = urlparse(s.base_url)
    prefix = url.path.removesuffix("/").removesuffix("/v1")
    entry = {"attr": "service", "type": API_CLASSES[s.api], "abbr": SERVED_ABBR, "path": "", "model": s.model,
             "stream": False, "request_rate": 0, "retry": 2, "api_key": s.api_key or "",
             "host_ip": url.hostname or "localhost", "host_port": url.port or (443 if url.scheme == "https" else 80),
             "url": f"{url.scheme}://{url.netloc}{prefix}/" if prefix else "",  # a server under a path prefix
             "max_out_len": s.max_out_len, "batch_size": s.batch_size, "trust_remote_code": False,
             "generation_kwargs": dict(s.generation_kwargs)}
    if url.scheme == "https":
        entry["enable_ssl"] = True
    return entry


def datasets_variable(text: str) -> str:
    """The `*_datasets` list a dataset config module defines (gsm8k_datasets), from its source text."""
    found = re.findall(r"^([A-Za-z_][A-Za-z0-9_]*_datasets)\s*=", text, re.M)
    if not found:
        raise UsageError("the AISBench dataset config defines no *_datasets list")
    return found[-1]


def render(s: Served, dataset: str = DEFAULT_DATASET, data_dir: str | None = None, with_gold: bool = False,
           variable: str | None = None) -> str:
    """The config file's text. `data_dir`: the dataset's folder (absolute); None: AISBench's own folder.
    `with_gold`: a second model entry under the gold's abbr, for the eval pass that scores the gold's
    predictions written in process (AISBench's eval mode reads predictions/<abbr>/ and calls no model).
    `variable`: the dataset module's list (datasets_variable); default `<family>_datasets`."""
    family, module = dataset_module(dataset)
    variable = variable or f"{family}_datasets"
    model = model_entry(s)
    lines = ["# Written by llm-adapt for one eval: the served model, AISBench's dataset config and summarizer.",
             "from mmengine.config import read_base",
             f"from ais_bench.benchmark.models import {model['type']}",
             "",
             "with read_base():",
             f"    from {module} import {variable}",
             "    from ais_bench.benchmark.configs.summarizers.example import summarizer",
             "",
             f"datasets = [dict(d{'' if data_dir is None else f', path={data_dir!r}'}) for d in {variable}]"]
    entries = [model] + ([model | {"abbr": GOLD_ABBR}] if with_gold else [])
    lines.append("models = [")
    for entry in entries:
        fields = ",\n".join(f"        {k}={v if k == 'type' else repr(v)}" for k, v in entry.items())
        lines += ["    dict(", fields, "    ),"]
    return "\n".join(lines + ["]"]) + "\n"
