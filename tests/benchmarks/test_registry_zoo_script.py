"""benchmarks/registry_zoo.py's served column on plain rows (zoo.run_clean's shape): a family the engine refuses at
start-up is "not served" with the engine's line and no folder of this machine; a FAIL naming the head the engine's
class never reads is the right verdict; any other FAIL is not; a clean PASS is."""

from tests.benchmarks.scripts import load_script


def row(verdict, *reasons, flat=False):
    return {"verdict": verdict, "exit": 1 if verdict == "FAIL" else 0, "seconds": 60, "flat": flat,
            "reasons": list(reasons), "error": ""}


def test_the_served_column_of_each_kind_of_run():
    zoo = load_script("registry_zoo")
    refused = zoo.served_verdict(row("FAIL", "the engine did not start: vllm exited with code 1 during start-up: "
                                             "Command '['/home/u/.venv/bin/python', '-m'] failed (full log: /tmp/r/engine.log)"))
    assert refused["verdict"] == zoo.NOT_SERVED and refused["ok"] is None
    assert "/home" not in refused["note"] and "full log" not in refused["note"] and "'python'" in refused["note"]
    head = zoo.served_verdict(row("FAIL", "likely cause, the output head: CohereForCausalLM never reads lm_head"))
    assert head["ok"] is True and head["note"].startswith("FAIL as it should")
    wrong = zoo.served_verdict(row("FAIL", "false-ready: the server starts and answers 200, but its output is wrong"))
    assert wrong["ok"] is False and "false-ready" in wrong["note"]
    assert zoo.served_verdict(row("PASS"))["ok"] is True
    assert zoo.served_verdict(row("WARN", "the gold's logits are flat", flat=True))["ok"] is True
    assert zoo.served_verdict(row("WARN", "in-process cpu:bf16: WARN"))["ok"] is False
    died = zoo.served_verdict(row("FAIL", "core features not working: chat completion, streaming"),
                              "RuntimeError: Unexpected head dim size, 32")
    assert died["verdict"] == zoo.NOT_SERVED and died["note"].endswith("Unexpected head dim size, 32")
    assert zoo.served_verdict(row("FAIL", "core features not working: chat completion"))["ok"] is False  # no cause
