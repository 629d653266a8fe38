"""Does vLLM serve each pre-quantized layout with the command the plan writes for it?

Writes a tiny random Llama (SmolLM2's tokenizer), quantizes it into each layout with the test
writers (tests/models/quant_layouts.py), plans it with `inspect` for this machine's platform and
starts the planned eager command (no --quantization flag unless the plan adds one). Prints, per
layout, whether the server started and answered a 4-token completion, the seconds it took, and the
linear kernel vLLM logged. Not a performance measurement: a check of the plan and of the layouts.
Each start is a heavy command: run it when nothing else loads the cores.

Run: .venv/bin/python benchmarks/serve_quantized.py [LAYOUT ...]
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from llm_adapt.engines.server import ManagedServer, free_port
from llm_adapt.engines.vllm import vllm_launch
from llm_adapt.errors import AdaptError
from llm_adapt.inspect.plan import PlanOptions
from llm_adapt.inspect.stage import run_inspect
from llm_adapt.models.source import resolve_model
from llm_adapt.models.synthetic import write_tiny_llama
from tests.models import quant_layouts

KERNEL = re.compile(r"Selected (\w+) for (\w+)")


def complete(base_url: str) -> str:
    body = json.dumps({"model": "q", "prompt": "Hello there", "max_tokens": 4, "temperature": 0}).encode()
    request = urllib.request.Request(base_url + "/completions", data=body, headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(request, timeout=60).read())["choices"][0]["text"]


def check(layout: str, src: Path, root: Path) -> dict:
    model = quant_layouts.LAYOUTS[layout](src, root / layout)
    options = PlanOptions(model_path=str(model), served_model_name="q", kv_cache_space_gib=1, max_model_len=512)
    plan = run_inspect(resolve_model(str(model)), options).plan
    log = root / f"{layout}.log"
    started = time.monotonic()
    row = {"layout": layout, "flag": "--quantization" in plan["argv"]["eager"],
           "plan_warnings": [w for w in plan["warnings"] if "checkpoint" in w]}
    try:
        with ManagedServer(vllm_launch(plan, port=free_port()), log) as server:
            row.update(served=True, text=complete(server.endpoint.base_url))
    except AdaptError as exc:
        row.update(served=False, error=str(exc).splitlines()[0][:240])
    row["seconds"] = round(time.monotonic() - started, 1)
    row["kernels"] = sorted({" for ".join(m) for m in KERNEL.findall(log.read_text())}) if log.exists() else []
    return row


def main(layouts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = write_tiny_llama(root / "float", tokenizer_from=resolve_model("default").path)
        for layout in layouts or list(quant_layouts.LAYOUTS):
            print(json.dumps(check(layout, src, root)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
