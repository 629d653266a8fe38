"""Shared fixtures: an isolated cache, the real default model, and tiny random Llamas."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"

# `make test` runs the suite in pytest-xdist workers, one per core: each worker's torch and each engine it starts
# take one thread, not every core (set before anything imports torch).
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1) > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))))


def pytest_collection_modifyitems(config, items):
    """Modules with a test marked `first` lead, then those with slow tests, each keeping its order: under
    `--dist loadfile` a worker takes the next module in this order when it is free, so no long module starts
    last beside an idle worker, and AISBench (marked `first`) starts while the workers' memory is low."""
    def rank(module):
        marks = {mark.name for item in by_module[module] for mark in item.iter_markers()}
        return ("first" not in marks, "slow" not in marks)

    by_module: dict[str, list] = {}
    for item in items:
        by_module.setdefault(item.nodeid.split("::")[0], []).append(item)
    items[:] = [item for module in sorted(by_module, key=rank) for item in by_module[module]]


# Perplexity on the first 256 tokens of each corpus text (the whole corpus is 2,427 tokens): served by
# vLLM-CPU in bf16 on a CPU without native bf16 each token of prompt_logprobs costs about 15 ms.
CORPUS_TOKENS = 256


@pytest.fixture(scope="session", autouse=True)
def adapt_home(tmp_path_factory) -> Path:
    """One LLM_ADAPT_HOME per test run, never the user's cache. Under make test's workers it is one for all of
    them: the default model is converted once (the second worker waits on the conversion's lock), and a gold or
    a floor one worker measured is read back by the other (the cache writes an entry whole, then renames it)."""
    home = Path(os.environ.get("LLM_ADAPT_TEST_HOME") or _run_home(tmp_path_factory))
    os.environ["LLM_ADAPT_HOME"] = str(home)
    return home


def _run_home(tmp_path_factory) -> Path:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return tmp_path_factory.mktemp("adapt-home")
    home = tmp_path_factory.getbasetemp().parent / "adapt-home"  # the workers' basetemps share this parent
    home.mkdir(exist_ok=True)
    return home


# vLLM-CPU starts three processes, each importing vLLM (about 20 s apiece here): the API server, the
# engine core and its executor's worker. With VLLM_ENABLE_V1_MULTIPROCESSING at 0 the worker runs
# inside the engine core: one import less, about 25 s less per engine start. The test-only plugin
# engines/fork_core_plugin.py forks the engine core from the API server instead of spawning it (the
# CPU platform forces spawn): another import less, 50 s -> 30 s per start. Both layouts gave the same
# prompt and sampled log-probs to the last bit (measured side by side on the default model, fp32 and
# bf16). The engines the tests start use them; a test marked `product_layout` starts engines in the
# layout `serve` and `run` use.
# And each API server is forked from a warm process that imported vLLM once (engines/warm_start.py, one
# per set of load-time variables such as LD_PRELOAD), not executed afresh: 27.3 s -> 9.7 s to ready on the
# default model (benchmarks/engine_start.py).
FAST_ENGINE_LAYOUT = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "LLM_ADAPT_FORK_ENGINE_CORE": "1"}
WARM_VLLM = "LLM_ADAPT_WARM_VLLM"


@pytest.fixture(scope="session", autouse=True)
def engines_in_the_fast_layout():
    import signal
    import tempfile

    for key, value in FAST_ENGINE_LAYOUT.items():
        os.environ.setdefault(key, value)
    warm_dir = tempfile.mkdtemp(prefix="llm-adapt-warm-")  # short: a unix socket path has 107 bytes
    os.environ.setdefault(WARM_VLLM, warm_dir)
    yield
    stop_warm_processes(warm_dir, signal.SIGTERM)


def stop_warm_processes(directory: str, sig: int) -> None:
    """Signal the warm processes started in `directory` (their servers die with them), then remove it."""
    import shutil

    for pid_file in Path(directory).glob("*.pid"):
        try:
            os.kill(int(pid_file.read_text()), sig)
        except ProcessLookupError:
            pass
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(autouse=True)
def product_layout(request, monkeypatch):
    if request.node.get_closest_marker("product_layout"):
        for key in [*FAST_ENGINE_LAYOUT, WARM_VLLM]:
            monkeypatch.delenv(key, raising=False)


@pytest.fixture(scope="session")
def default_model(adapt_home):
    from llm_adapt.models.source import resolve_model

    return resolve_model("default")


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory, default_model) -> Path:
    """A 2-layer random Llama with SmolLM2's tokenizer and chat template."""
    from llm_adapt.models.synthetic import write_tiny_llama

    return write_tiny_llama(tmp_path_factory.mktemp("tiny") / "tiny-llama", tokenizer_from=default_model.path)


@contextmanager
def scratch(tmp_path_factory, name: str):
    """A directory for model copies that goes when the block ends, pass or fail: they are rebuilt from code,
    and a module's copies of the default model add up to GBs on the disk the whole session shares."""
    root = tmp_path_factory.mktemp(name)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def table_stage(name: str, **changes):
    """The run's stage `name` as run/table.py declares it, with `changes` (run=... runs something else)."""
    from dataclasses import replace

    from llm_adapt.run.table import TABLE

    return replace(next(s for s in TABLE if s.name == name), **changes)


def config_fixture(name: str) -> dict:
    import json

    return json.loads((FIXTURES / "configs" / f"{name}.json").read_text())


def _vllm_session_server(default_model, tmp_path_factory, dtype: str):
    from llm_adapt.engines.server import ManagedServer, free_port
    from llm_adapt.engines.vllm import vllm_launch
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect

    options = PlanOptions(model_path=str(default_model.path), served_model_name=default_model.name,
                          kv_cache_space_gib=1, max_model_len=2048, dtype=dtype)
    inspected = run_inspect(default_model, options, "cpu")
    log = tmp_path_factory.mktemp(f"vllm-{dtype}") / "engine.log"
    spec = vllm_launch(inspected.plan, port=free_port())
    capture_dir = tmp_path_factory.mktemp("capture")  # layer capture: hooks idle unless a test arms it
    spec.env["LLM_ADAPT_CAPTURE_DIR"] = str(capture_dir)
    with ManagedServer(spec, log) as server:
        server.inspect, server.capture_dir, server.dtype = inspected, capture_dir, dtype
        yield server


@pytest.fixture(scope="session")
def vllm_server(default_model, tmp_path_factory):
    """One real vLLM-CPU server on the default model for the whole test session (eager, 1 GiB KV, layer
    capture plugin loaded but idle), in the dtype `run` serves in on this machine (--dtype auto: fp32
    on a CPU without native bf16, else bf16); its `dtype` says which."""
    from llm_adapt.platforms import default_serving_dtype

    yield from _vllm_session_server(default_model, tmp_path_factory, default_serving_dtype("cpu")[0])


@pytest.fixture(scope="session")
def vllm_bf16_server(request, default_model, tmp_path_factory):
    """A bf16 vLLM-CPU server, for the tests that judge bf16 served numerics against the bf16 floor: the
    session server where that is bf16, else one more (started only when such a test runs)."""
    from llm_adapt.platforms import default_serving_dtype

    if default_serving_dtype("cpu")[0] == "bf16":
        yield request.getfixturevalue("vllm_server")
        return
    yield from _vllm_session_server(default_model, tmp_path_factory, "bf16")


@pytest.fixture(scope="module")
def transformers_server(default_model, tmp_path_factory):
    """A real `transformers serve` on the default model, the lighter second engine, in the dtype `run`
    serves in on this machine (its `dtype`). One per module that uses it (three use it, one test each): a
    session's would stay with its worker to the end, about 1 GiB beside the other worker's engines."""
    from llm_adapt.engines.server import ManagedServer, free_port
    from llm_adapt.engines.transformers_serve import transformers_launch
    from llm_adapt.platforms import default_serving_dtype

    dtype = default_serving_dtype("cpu")[0]
    spec = transformers_launch(default_model.path, port=free_port(), dtype=dtype)
    with ManagedServer(spec, tmp_path_factory.mktemp("tserve") / "engine.log") as server:
        server.dtype = dtype
        yield server


@pytest.fixture()
def stub_server():
    """A loopback HTTP server answering canned (status, content-type, body) per path; for bad-input tests."""
    import http.server
    import threading

    routes: dict[str, tuple[int, str, str]] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            status, ctype, body = routes.get(self.path, (404, "text/html", "<html>not found</html>"))
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.end_headers()
            self.wfile.write(body.encode())

        do_GET = do_POST = _answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", routes
    server.shutdown()
    server.server_close()


def start_mock(tmp_path, *flags):
    """A real `llm-adapt mock-server` process on a free port (stop it with .stop() or `with`)."""
    import sys

    from llm_adapt.engines.server import LaunchSpec, ManagedServer, free_port

    port = free_port()
    argv = [sys.executable, "-m", "llm_adapt.cli", "mock-server", "--port", str(port), *flags]
    spec = LaunchSpec(engine="mock", argv=argv, env={}, host="127.0.0.1", port=port, served_model="mock",
                      startup_timeout_s=60)
    return ManagedServer(spec, tmp_path / f"mock-{port}.log")


@pytest.fixture(scope="module")
def tokenizer(default_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(default_model.path)


def bench(endpoint, tokenizer, tmp_path, as_ids=True, model="mock", **opts):
    """One benchmark through the library, as the CLI runs it."""
    from llm_adapt.bench.modes import BenchOptions, Workload, run_bench

    return run_bench(endpoint, model, Workload(tokenizer, as_ids), BenchOptions(**opts), tmp_path)



# Two prompts, one chat and one plain: enough rows for the tables and the identical-copy checks, not for statistics.
TWO_PROMPTS = [{"id": "a", "category": "knowledge", "messages": [{"role": "user", "content": "What is the capital of France?"}]},
               {"id": "b", "category": "greeting", "prompt": "Hello there, how are"}]


def write_two_prompts(directory) -> str:
    """TWO_PROMPTS as a JSONL suite in `directory`; its path."""
    import json

    path = Path(directory) / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in TWO_PROMPTS))
    return str(path)
