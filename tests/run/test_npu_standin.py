"""The NPU report path end to end without an NPU (#43): a stand-in Ascend host (an `npu-smi` on PATH that
prints recorded output), `run --platform npu` against a vLLM-CPU server standing in for vLLM-Ascend at
`--endpoint`, then `export`. The run and the export say NPU where they should, and name the server they
measured rather than claim the host ran it."""

import json
import os

import pytest

from llm_adapt.cli import main
from tests.fake_npu_smi import write_fake_npu_smi
from tests.report.one_verdict import verdicts_of

pytestmark = pytest.mark.slow

HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"


@pytest.fixture()
def npu_host(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    write_fake_npu_smi(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return tmp_path


def test_an_npu_run_against_a_stand_in_server_reports_and_exports_as_npu(npu_host, vllm_server, tmp_path):
    out = tmp_path / "run"
    code = main(["run", "default", "--platform", "npu", "--endpoint", vllm_server.endpoint.base_url, "--quick",
                 "--skip", "accuracy", "--skip", "bench", "--out", str(out), "--dtype", vllm_server.dtype,
                 "--max-model-len", "2048"])
    found = verdicts_of(out)
    assert code == 0 and len(set(found.values())) == 1 and found["report.md"] in ("PASS", "WARN"), found
    env = json.loads((out / "environment.json").read_text())
    assert any(a["kind"] == "npu" for a in env["accelerators"])  # the stand-in's npu-smi was read
    text = (out / "report.md").read_text()
    title = text.splitlines()[0]
    assert "NPU" in title or "Ascend" in title, title
    # what was measured is named as the server at the endpoint, not as something this host ran
    assert f"the server at {vllm_server.endpoint.base_url}, started outside this run" in text
    exported = tmp_path / "upstream"
    assert main(["export", str(out), "--to", "vllm-ascend", "--model-id", HUB_ID, "--out", str(exported)]) == 0
    files = [p for p in exported.rglob("*") if p.is_file()]
    assert files
    for path in files:
        body = path.read_text().replace("/root/.cache", "")  # the container's cache, which the tutorial mounts
        assert str(tmp_path) not in body and "/root/" not in body and ".venv" not in body, path
    tutorial = next(p for p in files if "tutorials" in p.parts and not p.stem.endswith(("-adaptation-report", "-runbook")))
    body = tutorial.read_text()
    assert f"vllm serve {HUB_ID}" in body
    # the adaptation report's layer-by-layer matrix: the skill's template and a row per decoder layer
    from llm_adapt.upstream.template_rules import layer_matrix_rule

    report = next(p for p in files if p.name.endswith("-adaptation-report.md"))
    layers = json.loads((out / "inspect.json").read_text())["config"]["num_layers"]
    assert layer_matrix_rule(report.read_text(), layers) == []
