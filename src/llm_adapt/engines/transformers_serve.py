"""`transformers serve` as a second, lighter OpenAI-compatible engine."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from llm_adapt.engines.server import LaunchSpec

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def transformers_launch(model_dir: Path, *, port: int, host: str = "127.0.0.1", dtype: str = "bf16",
                        device: str = "cpu", startup_timeout_s: float = 300.0) -> LaunchSpec:
    exe = shutil.which("transformers", path=str(Path(sys.executable).parent))
    prefix = [exe] if exe else [sys.executable, "-c", "import sys; from transformers.cli.transformers import main; sys.exit(main())"]
    argv = prefix + ["serve", str(model_dir), "--host", host, "--port", str(port), "--dtype", DTYPES[dtype],
                     "--device", device]
    # transformers echoes the model id as "<path>@main"; its /v1/models scans the hub cache.
    return LaunchSpec(engine="transformers", argv=argv, env={"HF_HUB_OFFLINE": "1"}, host=host, port=port,
                      served_model=str(model_dir), ready_paths=("/health",), startup_timeout_s=startup_timeout_s)
