"""Before anything is measured against an endpoint: a server whose /v1/models answers while every request fails
is refused in one line (exit 2), at the pre-check, before a gold is computed or a file is written."""

import json

import pytest

from llm_adapt.cli import main
from llm_adapt.engines.endpoint import endpoint_from_url
from llm_adapt.engines.preflight import gist, refused_answers, require_answers
from llm_adapt.errors import UsageError

PAGE_501 = "<html><body><h1>Error response</h1><p>Error code: 501</p><p>Message: Unsupported method ('POST').</p></body></html>"


def test_an_html_error_page_is_said_in_a_few_words():
    assert gist(PAGE_501) == "Error response Error code: 501 Message: Unsupported method ('POST')."
    assert gist("") == "no body" and gist("x" * 200).endswith("...") and len(gist("x" * 200)) == 83


def test_every_first_request_refused_is_one_line_naming_each():
    line = refused_answers([("chat/completions", 501, PAGE_501), ("completions", 501, PAGE_501)], "http://h:1/v1")
    assert "\n" not in line and "lists its models but serves no request" in line
    assert "POST /v1/chat/completions answered 501" in line and "POST /v1/completions answered 501" in line


def test_one_answered_request_is_enough():
    assert refused_answers([("chat/completions", 400, "no chat template"), ("completions", 200, "{}")], "u") is None
    assert refused_answers([], "u") is None


@pytest.fixture
def failing(stub_server):
    url, routes = stub_server
    routes["/v1/models"] = (200, "application/json", json.dumps({"data": [{"id": "served"}]}))
    routes["/v1/chat/completions"] = routes["/v1/completions"] = (501, "text/html", PAGE_501)
    return url + "/v1", routes


def test_a_server_whose_posts_fail_is_refused(failing):
    url, _ = failing
    with pytest.raises(UsageError, match="serves no request"):
        require_answers(endpoint_from_url(url))


def test_a_server_without_chat_that_completes_passes(failing):
    url, routes = failing
    routes["/v1/completions"] = (200, "application/json", json.dumps({"choices": [{"text": "x"}]}))
    assert require_answers(endpoint_from_url(url)) == "served"


@pytest.mark.parametrize("argv", [["compare", "default"], ["probe"], ["run", "default"]])
def test_compare_probe_and_run_stop_at_the_pre_check(argv, failing, default_model, tmp_path, monkeypatch, capsys):
    """compare --endpoint stops before its gold (the session's default model: seconds, not the gold's minutes),
    probe before its first probe; neither leaves a file or a runs/."""
    url, _ = failing
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--endpoint", url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "serves no request" in err[0] and "Traceback" not in err[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("complete,statuses,code", [
    (True, {"chat completion": "supported", "streaming": "supported", "logprobs": "unsupported"}, 0),
    (True, {"chat completion": "error", "streaming": "supported"}, 1),
    (True, {"chat completion": "supported", "streaming": "unsupported"}, 1),
    (False, {"chat completion": "supported", "streaming": "supported"}, 1),
    (True, {"logprobs": "supported"}, 0),  # --only logprobs: the core rows were not asked for
])
def test_probe_exits_1_when_a_core_feature_or_the_server_fails(complete, statuses, code):
    from llm_adapt.commands.serving_cmds import probe_exit_code

    assert probe_exit_code(complete, {name: {"status": status} for name, status in statuses.items()}) == code
