"""Every command an exported file shows, as data: the container (`docker run`), the server (`vllm serve`, the
plan's), its checks (`curl`), accuracy (`lm_eval`) and performance (`vllm bench serve`). Each is a Command
with its variables, rendered to shell text at the edge, and carries the parameter table that goes under
it (meaning, value range, unit: messages/upstream.PARAMETERS). The client commands name the model as the
server command serves it (its --served-model-name), so each runs against that server as written; the tests
parse every one with its own tool's parser and run the lm_eval and curl lines against a vLLM server. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypedDict

from llm_adapt.command import Command
from llm_adapt.messages.upstream import PARAMETERS

# the placeholder vLLM-Ascend's docs substitute with the release (mkdocs.yml `extra`; template-supplement.md §4)
ASCEND_VERSION = "{{ vllm_ascend_version }}"
IMAGE_REPO = "quay.io/ascend/vllm-ascend"
# the model cache vllm serve downloads into inside the container (upstream's tutorials mount the same)
MODEL_CACHE = "/root/.cache"
DRIVER_MOUNTS = ("/usr/local/dcmi:/usr/local/dcmi", "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi",
                 "/usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/",
                 "/usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info",
                 "/etc/ascend_install.info:/etc/ascend_install.info")
DRIVER_DEVICES = ("/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc")


@dataclass(frozen=True)
class Shown:
    """One command as a file shows it: its exported variables, the command, and words after its options
    (docker's image and shell)."""

    tool: str  # "docker run" | "vllm serve" | "curl" | "lm_eval" | "vllm bench serve"
    command: Command
    env: dict[str, str] = field(default_factory=dict)
    trailing: tuple[str, ...] = ()
    raw_env: tuple[str, ...] = ()  # variables written unquoted (a docs placeholder inside)

    def argv(self) -> list[str]:
        return self.command.argv() + list(self.trailing)

    def text(self) -> str:
        """Shell text: one `export` per variable, then the command with one option per line."""
        quoted = {k: v for k, v in self.env.items() if k not in self.raw_env}
        lines = [f"export {k}={v}" for k, v in self.env.items() if k in self.raw_env]
        body = self.command.shell(quoted)
        return "\n".join([*lines, body + "".join(f" {word}" for word in self.trailing)])


def docker_run(series: str, devices: int, port: int) -> Shown:
    """The container for one hardware series ("A3" or "A2"): its NPUs, the driver, the model cache mounted;
    the host's network, so the server's port is reachable as it is."""
    tag = f"{ASCEND_VERSION}-a3" if series == "A3" else ASCEND_VERSION
    options: list[tuple[str, str | None]] = [("--rm", None), ("--name", "vllm-ascend"), ("--shm-size", "1g"),
                                             ("--net", "host")]
    options += [("--device", f"/dev/davinci{i}") for i in range(devices)]
    options += [("--device", d) for d in DRIVER_DEVICES]
    options += [("-v", m) for m in DRIVER_MOUNTS] + [("-v", f"{MODEL_CACHE}:{MODEL_CACHE}"), ("-it", None)]
    return Shown("docker run", Command(("docker", "run"), tuple(options)), {"IMAGE": f"{IMAGE_REPO}:{tag}"},
                 trailing=("$IMAGE", "bash"), raw_env=("IMAGE",))


def serve(argv: list[str], env: dict[str, str], model_id: str) -> Shown:
    """The plan's server command as upstream's tutorials write it: `vllm serve ORG/NAME` and its options."""
    command = Command.from_argv(argv).without("--model").with_program("vllm", "serve", model_id)
    return Shown("vllm serve", command, dict(env))


def served_name(server: Shown) -> str:
    """The name clients send in `model`: the server's --served-model-name, else its model argument."""
    return server.command.get("--served-model-name") or server.command.program[-1]


def port_of(server: Shown) -> int:
    value = server.command.get("--port")
    return int(value) if value and value.isdigit() else 8000


def chat_request(server: Shown, messages: list[dict[str, str]], max_tokens: int) -> dict[str, Any]:
    """The chat request the functional check sends: greedy, so the answer it shows is the one to expect."""
    return {"model": served_name(server), "messages": messages, "temperature": 0, "max_tokens": max_tokens}


def curl_chat(server: Shown, request: dict[str, Any], host: str = "127.0.0.1") -> Shown:
    url = f"http://{host}:{port_of(server)}/v1/chat/completions"
    return Shown("curl", Command(("curl", url), (("-H", "Content-Type: application/json"),
                                                 ("-d", json.dumps(request, ensure_ascii=False)))))


def curl_models(server: Shown, host: str = "127.0.0.1") -> Shown:
    return Shown("curl", Command(("curl", f"http://{host}:{port_of(server)}/v1/models"), ()))


def lm_eval(server: Shown, tokenizer: str, tasks: str, num_fewshot: int | None, trust_remote_code: bool,
            host: str = "127.0.0.1") -> Shown:
    """lm-evaluation-harness against the running server: `model` is the served name (what vLLM answers to),
    `tokenizer` the hub id the harness loads its tokenizer from (it would otherwise look up the served
    name as a hub id)."""
    args = {"model": served_name(server), "tokenizer": tokenizer,
            "base_url": f"http://{host}:{port_of(server)}/v1/completions", "tokenized_requests": "False"}
    if trust_remote_code:
        args["trust_remote_code"] = "True"
    options: list[tuple[str, str | None]] = [("--model", "local-completions"),
                                             ("--model_args", ",".join(f"{k}={v}" for k, v in args.items())),
                                             ("--tasks", tasks)]
    if num_fewshot is not None:
        options.append(("--num_fewshot", str(num_fewshot)))
    options.append(("--output_path", "./"))
    return Shown("lm_eval", Command(("lm_eval",), tuple(options)))


def bench_serve(server: Shown, tokenizer: str, input_len: int, output_len: int, prompts: int, concurrency: int,
                host: str = "127.0.0.1") -> Shown:
    """`vllm bench serve` with the workload the figures are for: fixed lengths (--ignore-eos)."""
    options = (("--backend", "openai"), ("--base-url", f"http://{host}:{port_of(server)}"),
               ("--endpoint", "/v1/completions"), ("--model", tokenizer), ("--served-model-name", served_name(server)),
               ("--dataset-name", "random"), ("--random-input-len", str(input_len)),
               ("--random-output-len", str(output_len)), ("--num-prompts", str(prompts)),
               ("--max-concurrency", str(concurrency)), ("--ignore-eos", None))
    return Shown("vllm bench serve", Command(("vllm", "bench", "serve"), options))


@dataclass(frozen=True)
class Parameter:
    name: str  # the option or variable as written
    value: str  # its value in the command ("-" for a flag)
    meaning: str
    range: str
    unit: str


class RangeFacts(TypedDict):
    """What fills a parameter's range in its words (PARAMETERS): the model's positions (formatted), its
    attention heads, and the last rank of the deployment."""
    max_positions: str
    heads: int | None
    last: int


def parameters(shown: Shown, lang: str, facts: RangeFacts,
               env_meaning: dict[str, str] | None = None) -> list[Parameter]:
    """The table under a command: each variable, the model argument of `vllm serve`, and each option once
    (a repeated one with its values joined by commas). `facts` fills the ranges ({max_positions}, {heads},
    {last}); `env_meaning`: the plan's own note on each variable. Raises KeyError for an option
    without words: a command the export writes must explain all of them."""
    rows = [_row(name, value, lang, facts, (env_meaning or {}).get(name)) for name, value in shown.env.items()]
    if shown.tool == "vllm serve":
        rows.append(_row("MODEL", shown.command.program[-1], lang, facts))
    values: dict[str, list[str]] = {}
    for flag, value in shown.command.options:
        values.setdefault(flag, []).append("-" if value is None else value)
    for flag, given in values.items():
        key = f"{flag}@bench" if shown.tool == "vllm bench serve" and f"{flag}@bench" in PARAMETERS else flag
        rows.append(_row(key, ", ".join(given), lang, facts))
    return rows


def _row(key: str, value: str, lang: str, facts: RangeFacts, meaning: str | None = None) -> Parameter:
    words, range_, unit = PARAMETERS[key][lang]
    return Parameter(key.split("@")[0], value, meaning or words, range_.format(**facts), unit)
