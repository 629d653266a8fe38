"""The feature matrix against real servers, and every bad endpoint named in one line."""

import json

import pytest

from llm_adapt.cli import main
from llm_adapt.engines.endpoint import Endpoint
from llm_adapt.probes.features import PROBES
from llm_adapt.probes.run import run_probes


@pytest.mark.slow
def test_vllm_feature_matrix(vllm_server, tmp_path, capsys):
    """`llm-adapt probe --endpoint URL` as a user types it: exit 0 and the whole matrix in probes.json."""
    from llm_adapt.probes.run import ProbesResult

    code, err = run_cli(capsys, "probe", "--endpoint", vllm_server.endpoint.base_url, "--out", str(tmp_path))
    assert code == 0, err
    result = ProbesResult.load(tmp_path / "probes.json")
    rows = {row["name"]: row for row in result.rows}
    assert list(rows) == list(PROBES) and result.complete
    for name in ("health", "chat completion", "streaming", "logprobs / top_logprobs", "prompt_logprobs", "echo",
                 "fixed output length (ignore_eos / min_tokens)", "over-long prompt rejected (400, still healthy)",
                 "/tokenize", "/metrics", "structured output (JSON schema)", "greedy determinism"):
        assert rows[name]["status"] == "supported", rows[name]
    assert rows["models"]["detail"]["max_model_len"] == 2048
    saved = json.loads((tmp_path / "probes.json").read_text())
    assert saved["kind"] == "probes" and len(saved["rows"]) == len(PROBES)


@pytest.mark.slow
def test_transformers_serve_ignores_logprobs(transformers_server, tmp_path):
    endpoint = Endpoint(transformers_server.endpoint.base_url, model=transformers_server.spec.served_model)
    result = run_probes(endpoint, tmp_path, only=["chat completion", "logprobs / top_logprobs", "models"])
    rows = {row["name"]: row for row in result.rows}
    assert rows["chat completion"]["status"] == "supported"
    assert rows["logprobs / top_logprobs"]["status"] == "unsupported"
    assert "silently ignored" in rows["logprobs / top_logprobs"]["evidence"]


def run_cli(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    return code, capsys.readouterr().err.strip().splitlines()


def test_unreachable_endpoint(capsys, tmp_path):
    from llm_adapt.engines.server import free_port

    code, err = run_cli(capsys, "probe", "--endpoint", f"http://127.0.0.1:{free_port()}/v1", "--out", str(tmp_path))
    assert code == 2 and "connection refused" in err[-1]  # nothing listens at the address the user gave


def test_not_openai_compatible(capsys, stub_server, tmp_path):
    url, routes = stub_server
    code, err = run_cli(capsys, "probe", "--endpoint", url, "--out", str(tmp_path))
    assert code == 2 and "not an OpenAI-compatible server" in err[-1]
    routes["/v1/models"] = (200, "text/html", "<html>hello</html>")
    code, err = run_cli(capsys, "probe", "--endpoint", url, "--out", str(tmp_path))
    assert code == 2 and "OpenAI-style JSON" in err[-1]


def test_wrong_key_and_wrong_model(capsys, stub_server, tmp_path):
    url, routes = stub_server
    routes["/v1/models"] = (401, "application/json", '{"error": "unauthorized"}')
    code, err = run_cli(capsys, "probe", "--endpoint", url, "--api-key", "wrong", "--out", str(tmp_path))
    assert code == 2 and "API key" in err[-1]
    routes["/v1/models"] = (200, "application/json", json.dumps({"data": [{"id": "served-one"}]}))
    code, err = run_cli(capsys, "probe", "--endpoint", url, "--model", "other", "--out", str(tmp_path))
    assert code == 2 and "not served" in err[-1] and "served-one" in err[-1]


def test_bad_url_and_both_sources(capsys, tmp_path):
    code, err = run_cli(capsys, "probe", "--endpoint", "ftp://x", "--out", str(tmp_path))
    assert code == 2 and "not an http(s) URL" in err[-1]
    code, err = run_cli(capsys, "probe", "default", "--endpoint", "http://127.0.0.1:1/v1")
    assert code == 2 and "either MODEL" in err[-1]


def test_key_never_reaches_results(tmp_path, stub_server):
    url, routes = stub_server
    routes["/v1/models"] = (200, "application/json", json.dumps({"data": [{"id": "m"}]}))
    routes["/health"] = (200, "application/json", "{}")
    result = run_probes(Endpoint(url + "/v1", api_key="sk-secret-123"), tmp_path, only=["health"])
    assert result.endpoint["api_key"] == "set"
    assert "sk-secret-123" not in (tmp_path / "probes.json").read_text()


class _Ctx:
    """Just what the timeout rule reads: the timeout and /health."""

    timeout_s = 120.0

    def __init__(self, healthy: bool):
        self.healthy = healthy

    def get(self, path):
        import httpx

        if not self.healthy:
            raise httpx.ConnectError("refused")
        return httpx.Response(200)


def _slow_probe(ctx):
    import httpx

    raise httpx.ReadTimeout("timed out")


def test_a_timeout_on_a_healthy_server_is_not_run_not_an_error():
    from llm_adapt.probes.context import ERROR, NOT_RUN
    from llm_adapt.probes.run import _run_one

    outcome, _ = _run_one(_slow_probe, _Ctx(healthy=True))
    assert outcome.status == NOT_RUN and "too slow on this machine" in outcome.evidence
    outcome, _ = _run_one(_slow_probe, _Ctx(healthy=False))
    assert outcome.status == ERROR and "no longer answers" in outcome.evidence
