"""Misbehaving servers during a benchmark: every failure becomes a counted record, nothing is lost."""

import json
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import bench, start_mock


def test_injected_errors_are_counted_and_nothing_is_lost(tmp_path, tokenizer):
    with start_mock(tmp_path, "--error-rate", "0.05", "--seed", "7") as server:
        result = bench(server.endpoint, tokenizer, tmp_path, mode="serve", num_prompts=400, max_concurrency=32,
                       output_len=4, warmup=0)
    m, run = result.runs[0]["metrics"], result.runs[0]
    assert m["completed"] + m["failed"] == run["sent"] == 400
    assert 0 < m["errors"]["http_500"] < 60
    lines = open(run["records"]).read().splitlines()
    assert len(lines) == 400 and {json.loads(l)["index"] for l in lines} == set(range(400))


@pytest.mark.parametrize("fault,kind", [("malformed", "malformed_stream"), ("truncate", "truncated_stream"),
                                        ("reset", "connection")])
def test_broken_streams_become_records(tmp_path, tokenizer, fault, kind):
    with start_mock(tmp_path, "--fault", fault, "--fault-rate", "0.5", "--seed", "1") as server:
        result = bench(server.endpoint, tokenizer, tmp_path, mode="throughput", num_prompts=20, output_len=8, warmup=0)
    m = result.runs[0]["metrics"]
    assert m["completed"] + m["failed"] == 20 and m["errors"].get(kind, 0) > 0, m["errors"]


def test_stalled_stream_times_out(tmp_path, tokenizer):
    with start_mock(tmp_path, "--fault", "stall", "--fault-rate", "1") as server:
        result = bench(server.endpoint, tokenizer, tmp_path, mode="throughput", num_prompts=3, output_len=8, warmup=0,
                       timeout_s=2)
    assert result.runs[0]["metrics"]["errors"] == {"timeout": 3}


def test_ctrl_c_keeps_the_requests_so_far(tmp_path):
    with start_mock(tmp_path, "--itl-ms", "50") as server:
        out = tmp_path / "run"
        proc = subprocess.Popen([sys.executable, "-m", "llm_adapt.cli", "bench", "--endpoint", server.endpoint.base_url,
                                 "--mode", "serve", "--num-prompts", "200", "--max-concurrency", "2", "--output-len", "20",
                                 "--warmup", "0", "--out", str(out)], stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            records = out / "bench-serve-serve.jsonl"
            if records.exists() and len(records.read_text().splitlines()) >= 4:
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err
    data = json.loads((out / "bench.json").read_text())
    assert data["interrupted"] and data["runs"][0]["partial"] and data["runs"][0]["metrics"]["completed"] >= 4




def test_load_2000_requests_with_errors_keeps_memory_flat(tmp_path, tokenizer):
    def rss_kib():
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

    with start_mock(tmp_path, "--error-rate", "0.05", "--seed", "3") as server:
        bench(server.endpoint, tokenizer, tmp_path, mode="serve", num_prompts=100, max_concurrency=64, output_len=4,
              warmup=0)  # warm the imports and the allocator
        before = rss_kib()
        result = bench(server.endpoint, tokenizer, tmp_path, mode="serve", num_prompts=2000, max_concurrency=64,
                       output_len=8, warmup=0)
        after = rss_kib()
    m, run = result.runs[0]["metrics"], result.runs[0]
    assert m["completed"] + m["failed"] == run["sent"] == 2000
    assert 40 < m["errors"]["http_500"] < 180
    assert after - before < 64 * 1024, f"client RSS grew by {(after - before) / 1024:.0f} MiB"


def test_server_killed_mid_bench(tmp_path):
    with start_mock(tmp_path, "--itl-ms", "40") as server:
        out = tmp_path / "run"
        proc = subprocess.Popen([sys.executable, "-m", "llm_adapt.cli", "bench", "--endpoint", server.endpoint.base_url,
                                 "--mode", "serve", "--num-prompts", "40", "--max-concurrency", "4", "--output-len", "20",
                                 "--warmup", "0", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        records = out / "bench-serve-serve.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (records.exists() and records.read_text().count("\n") >= 4):
            time.sleep(0.2)
        server.stop(grace_s=0.1)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "Traceback" not in err
    data = json.loads((out / "bench.json").read_text())
    m = data["runs"][0]["metrics"]
    assert m["completed"] >= 4 and m["failed"] > 0 and m["completed"] + m["failed"] == 40
    assert set(m["errors"]) <= {"connection", "truncated_stream"}
