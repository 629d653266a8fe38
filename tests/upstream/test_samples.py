"""Each answer an exported file quotes is tied to the request that produced it: the chat check keeps its
request beside its answer, a greedy transcript's prompt is found by its id in the suite it was run with,
and the curl a file shows sends the request whose answer it quotes."""

import json
import re
import shlex
import shutil

from llm_adapt.probes import features
from llm_adapt.prompts import load_prompts
from llm_adapt.upstream.samples import chat_request, greedy_samples, samples
from tests.records import run_data

from .test_export import DOCS, NPU_CHAT, exported, npu_run

ASKED = {"messages": [{"role": "user", "content": "Say yes."}], "max_tokens": 4, "temperature": 0}


def chat_row(text, request=None):
    detail = {"text": text} | ({"request": request} if request else {})
    return {"name": "chat completion", "status": "supported", "evidence": f"answer: {text}", "detail": detail}


def test_the_chat_probe_sends_the_request_it_records_and_an_older_record_falls_back_to_it(monkeypatch):
    sent = {}

    class Reply:
        choices = [type("C", (), {"message": type("M", (), {"content": "4"})()})()]
        usage = None

    def fake_chat(ctx, messages=features.HELLO, **kw):
        sent.update(messages=messages, **kw)
        return Reply()

    monkeypatch.setattr(features, "_chat", fake_chat)
    outcome = features.chat(None)
    assert outcome.detail["request"] == sent and outcome.detail["text"] == "4"
    assert chat_request({"detail": {"text": "4"}}) == sent  # probes.json of an older run: the probe's fixed request


def test_each_sample_is_its_answer_beside_its_own_request():
    ep = {"settings": {"prompts": "quick", "max_new_tokens": 12},
          "sections": {"greedy": {"status": "done", "rows": [{"id": "knowledge-1", "target_text": "L'Etoile", "ref_text": "Paris."},
                                           {"id": "no-such-id", "target_text": "x", "ref_text": "y"}]}}}
    run = run_data(probes={"rows": [chat_row("Yes.", ASKED),
                                    {"name": "legacy completions", "status": "supported", "evidence": "text: Paris",
                                     "detail": {"text": " Paris", "request": {"prompt": "The capital of France is"}}}]},
                   endpoint_accuracy=ep)
    dummy = run_data(probes={"rows": [chat_row("@@ random @@", ASKED)]})
    rows = samples(run, dummy)
    assert [(s.stage, s.check) for s in rows] == [("dummy", "chat completion"), ("real", "chat completion"),
                                                   ("real", "knowledge-1"), ("feature", "legacy completions")]
    assert rows[3].status == "supported" and rows[1].status is None
    assert rows[0].prompt == rows[1].prompt == "Say yes." and rows[0].answer == "@@ random @@"
    suite = {p.id: p for p in load_prompts("quick")}
    assert rows[2].prompt == suite["knowledge-1"].as_messages()[-1]["content"] and rows[2].reference == "Paris."
    assert rows[2].request["max_tokens"] == 12 and rows[3].prompt == "The capital of France is"
    # a suite that cannot be read again gives no transcript rather than one under another prompt
    gone = run_data(endpoint_accuracy=ep | {"settings": {"prompts": "/gone/prompts.jsonl"}}).endpoint_accuracy
    assert greedy_samples(gone) == []


def test_the_curl_of_each_file_sends_the_request_whose_answer_it_quotes(model, tmp_path):
    files = exported(npu_run(tmp_path / "run", shutil.copytree(model, tmp_path / "m2")), tmp_path / "up", "--lang", "en")
    asked = NPU_CHAT["detail"]["request"]
    for name in (f"{DOCS}/tiny-llama.md", f"{DOCS}/tiny-llama-runbook.md"):
        text = files[name]
        block = next(b for b in re.findall(r"```bash\n(.*?)```", text, re.S) if "/v1/chat/completions" in b)
        words = shlex.split(block.split("curl http://127.0.0.1:8000/v1/chat", 1)[1].replace("\\\n", " "))
        body = json.loads(words[words.index("-d") + 1])
        assert {k: body[k] for k in asked} == asked, name
        assert '"2 + 2 = 4."' in text, name  # the answer to that request, and no other
