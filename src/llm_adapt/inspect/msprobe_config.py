"""The msprobe dump_config for layer capture inside vLLM-Ascend, and the opt-in command that uses it.

How vLLM-Ascend takes it (vLLM-Ascend 0.23.0.post1, SOURCE): `--additional-config` with either
`{"dump_config": {...}}` (the config inline; vLLM-Ascend writes it to a file itself) or
`{"dump_config_path": "<file>"}` (the older form); the model runner then wraps every engine step
in msprobe's `start(model) -> forward -> stop -> step`. It builds a PrecisionDebugger only when
CUDA-graph capture is off (otherwise an AclGraphDumper, which needs msprobe built from source), and
the guide's troubleshooting says "Please enforce eager mode": so the capture runs the eager command.

The config: task "tensor" (the tensors themselves, not statistics), level "L0" (module inputs and
outputs), and a `list` of name substrings that keeps the embedding, every decoder layer and the
final norm, nothing inside them (msprobe 26.2.0 filters L0 module names by substring when `scope`
is empty). "step" stays empty: vLLM-Ascend's warm-up runs and any other request also count steps,
so the prompts' step numbers are not known in advance; `llm-adapt layers --msprobe-dump` finds each
prompt's prefill by its token ids instead. msprobe also writes each listed module's parameters
(the embedding table too) once per step: keep the run to the suite's prompts.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_adapt.command import Command

SOURCE = ("vLLM-Ascend 0.23.0.post1: docs/source/developer_guide/performance_and_debug/msprobe_guide.md "
          "(dump_config fields, --additional-config, dump layout), docs/source/user_guide/configuration/"
          "additional_config.md (dump_config, dump_config_path), vllm_ascend/worker/model_runner_v1.py "
          "(PrecisionDebugger when cudagraph_mode is NONE); mindstudio-probe 26.2.0 (L0 list filter)")
MODULE_LIST = ["Module.model.embed_tokens.", "DecoderLayer.forward.", "Module.model.norm."]
DEFAULT_DUMP_PATH = "./msprobe_dump"


def dump_config(dump_path: str = DEFAULT_DUMP_PATH, steps: list[int] | None = None) -> dict[str, Any]:
    """msprobe's dump_config: the tensors of the embedding, decoder layers and final norm, every rank."""
    return {"task": "tensor", "dump_path": dump_path, "rank": [], "step": list(steps or []), "level": "L0",
            "async_dump": False, "tensor": {"scope": [], "list": list(MODULE_LIST), "data_mode": ["forward"]}}


def capture_command(eager: "Command", config: dict[str, Any]) -> "Command":
    """The eager server command with the dump_config passed inline."""
    return eager.with_option("--additional-config", json.dumps({"dump_config": config}, separators=(",", ":")))


def plan_entry(eager: "Command", env: dict[str, str], dump_path: str = DEFAULT_DUMP_PATH) -> dict[str, Any]:
    """The plan's opt-in layer capture on Ascend: the config, the command, what to run next, the source."""
    config = dump_config(dump_path)
    command = capture_command(eager, config)

    def flag(name: str) -> str:  # the option's value, or a placeholder the user fills in
        return command.get(name) or name.lstrip("-").upper()

    return {"tool": "msprobe (pip install mindstudio-probe)", "config": config, "argv": command.argv(),
            "command": command.shell(env), "mode": "eager",
            "then": f"llm-adapt layers {flag('--model')} --endpoint http://{flag('--host')}:{flag('--port')}/v1 "
                    f"--msprobe-dump {dump_path}",
            "source": SOURCE}
