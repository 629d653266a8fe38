"""A failed engine start: its cause appears once, in the verdict; the notes refer to it."""

from pathlib import Path

from llm_adapt.judged.verdict import overall_verdict
from llm_adapt.report.findings import notes
from tests.records import run_data

CAUSE = ("vllm exited with code 1 during start-up: ValueError: To serve at least one request with the model's max "
         "seq len (37376), ... the estimated maximum model length is 37248. (full log: /runs/x/engine.log)")


def run_with(stages):
    return run_data(Path("/runs/x"), status={"stages": stages})


def failed_start():
    # as a status.json from before stage reasons kept their keys: read by their words
    blocked = {"status": "not run", "reason": f"no endpoint: the engine failed ({CAUSE})"}
    return run_with({"inspect": {"status": "done"}, "accuracy": {"status": "done"},
                     "serve": {"status": "failed", "reason": CAUSE}, "probes": blocked,
                     "endpoint_accuracy": blocked, "bench": blocked, "report": {"status": "running"}})


def test_the_cause_is_in_the_verdict_once_and_nowhere_in_the_notes():
    run = failed_start()
    verdict = overall_verdict(run)
    assert verdict["status"] == "FAIL"
    assert sum(reason.count("estimated maximum model length is 37248") for reason in verdict["reasons"]) == 1
    text = notes(run)
    assert not any("37248" in n for n in text)
    assert text[0] == ("Stage serve failed; probes, endpoint_accuracy, bench not run: the engine did not start "
                       "(its cause and log are in the summary).")


def test_an_old_multiline_reason_gives_its_first_line_only():
    run = run_with({"serve": {"status": "failed", "reason": "vllm exited with code 1; log x, last lines:\nTraceback\n  a"}})
    assert overall_verdict(run)["reasons"][0] == "the engine did not start: vllm exited with code 1; log x, last lines:"


def test_other_failures_keep_their_own_reason():
    run = run_with({"serve": {"status": "done"}, "probes": {"status": "failed", "reason": "the server stopped answering"}})
    assert notes(run) == ["Stage probes failed: the server stopped answering."]
