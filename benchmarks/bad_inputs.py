"""Every bad input of a new user's trial, run as the user runs it, measured: exit code, lines on stderr, what it
leaves behind.

Each case is `python -m llm_adapt.cli ...` in a child process whose working directory is a fresh sandbox (so a
`runs/` it writes unasked shows) and whose TMPDIR is the sandbox's own (so a scratch directory it forgets shows).
What it leaves is every path that was not in the sandbox before. As root, the child runs without
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (dropped from its capability bounding set before exec), so a
read-only directory refuses it as it refuses any user; elsewhere the child is an ordinary user already.

Two cases are signals, not inputs: Ctrl-C during `run` (SIGINT once its probes are running; its run directory
stays, by design, for `--resume`) and SIGTERM during `probe` with no --out (sent once its scratch directory
exists).

  .venv/bin/python benchmarks/bad_inputs.py [--only NAME,...] [--json OUT] [--docs]

--docs writes the table into docs/limits.md between its bad_inputs markers, stamped with the date and this
machine. The tests (tests/faults/test_bad_input.py) run the same cases.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import http.server
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
LIMITS = ROOT / "docs" / "limits.md"
BEGIN, END = "<!-- bad_inputs:begin -->", "<!-- bad_inputs:end -->"


@dataclass(frozen=True)
class Case:
    name: str  # the bad input, as the table names it
    argv: tuple[str, ...]  # after `llm-adapt`; UPPER words are places prepare() makes
    code: int  # the exit code it must end with
    needle: str  # words its last line on stderr must hold
    stop: str | None = None  # a signal sent once `ready` holds: "SIGINT" or "SIGTERM"
    needs: str | None = None  # "no-npu" / "no-gpu": measured only on a host without that device


CASES: tuple[Case, ...] = (
    Case("MODEL that does not exist", ("inspect", "MISSING"), 2, "no such file or directory"),
    Case("a text file as MODEL", ("inspect", "TEXTFILE"), 2, "not a model"),
    Case("config.json that is not JSON", ("inspect", "BADCFG"), 2, "malformed JSON"),
    Case("a corrupt GGUF", ("inspect", "CORRUPT.gguf"), 2, "cannot read this GGUF"),
    Case("a truncated safetensors shard (inspect)", ("inspect", "TRUNC"), 2, "truncated"),
    Case("a truncated safetensors shard (compare)", ("compare", "TRUNC", "--prompts", "quick"), 2, "truncated"),
    Case("--device-memory 64XB", ("inspect", "default", "--device-memory", "64XB"), 2, "'64XB' is not a memory size"),
    Case("a hub id not in the cache, offline", ("inspect", "hf:acme/absent-model", "--offline"), 2,
         "not in the local cache"),
    Case("inspect --out in a read-only directory", ("inspect", "TINY", "--out", "READONLY/out"), 2,
         "cannot write results there"),
    Case("inspect --out under a regular file", ("inspect", "TINY", "--out", "FILE/out"), 2, "cannot write results there"),
    Case("report of a read-only run directory", ("report", "RORUN"), 2, "choose another --out"),
    Case("report --out under a regular file", ("report", "RORUN", "--out", "FILE/out"), 2, "cannot write results there"),
    Case("a prompts file that is not JSON lines", ("compare", "default", "--prompts", "BADJSONL"), 2, "not JSON"),
    Case("--resume without an earlier run", ("run", "default", "--resume"), 2, "--resume needs --out"),
    Case("--platform npu on a host without an NPU", ("serve", "default", "--platform", "npu"), 2, "--endpoint URL",
         needs="no-npu"),
    Case("--platform cuda on a host without a GPU", ("run", "default", "--platform", "cuda"), 2, "--endpoint URL",
         needs="no-gpu"),
    Case("a server whose POSTs all fail (compare --endpoint)", ("compare", "default", "--endpoint", "POSTFAIL"), 2,
         "serves no request"),
    Case("a server whose POSTs all fail (probe)", ("probe", "--endpoint", "POSTFAIL"), 2, "serves no request"),
    Case("a server whose POSTs all fail (run --endpoint)", ("run", "default", "--endpoint", "POSTFAIL"), 2,
         "serves no request"),
    Case("a config without 'architectures' (an OLMo-2 config)", ("run", "NOARCH", "--quick"), 2,
         '["Olmo2ForCausalLM"]'),
    Case("--kv-cache-space 1000 on a host with less memory", ("run", "TINY", "--quick", "--kv-cache-space", "1000"), 2,
         "exceed"),
    Case("an --endpoint where nothing listens", ("run", "TINY", "--quick", "--endpoint", "http://127.0.0.1:9/v1"), 2,
         "connection refused"),
    Case("an architecture vLLM does not know", ("run", "UNKNOWNTYPE", "--quick"), 2, "is in neither vLLM"),
    Case("a model_type transformers does not know", ("run", "BADTYPE", "--quick"), 2, "model_type 'zoo-unknown'"),
    Case("no tokenizer files", ("run", "NOTOKENIZER", "--quick"), 2, "no tokenizer files"),
    Case("a head size vLLM-CPU attention cannot serve", ("run", "HEAD16", "--quick", "--platform", "cpu"), 2,
         "fails at the first request"),
    Case("--out holding another model's run", ("run", "TINY", "--quick", "--skip", "bench", "--out", "OLDRUN"), 2,
         "holds an earlier run"),
    Case("diff of a run with itself", ("diff", "OLDRUN", "OLDRUN"), 2, "same run directory"),
    Case("a truncated status.json", ("report", "BADSTATUS"), 2, "unreadable"),
    Case("a shard the index lists but missing (compare)", ("compare", "NOSHARD", "--prompts", "quick"), 2,
         "weight index lists"),
    Case("a shard the index lists but missing (inspect)", ("inspect", "NOSHARD"), 2, "weight index lists"),
    Case("Ctrl-C during run", ("run", "default", "--endpoint", "SLOW", "--dummy", "--quick", "--out", "OUT"), 130,
         "interrupted", stop="SIGINT"),
    Case("SIGTERM during probe (no --out)", ("probe", "--endpoint", "SLOW"), 143, "terminated", stop="SIGTERM"),
)


@dataclass
class Row:
    name: str
    command: str
    code: int | None
    lines: int
    last: str
    leaves: list[str]
    expected: int
    ok: bool
    note: str = ""
    seconds: float | None = None  # from the start of the process to its exit


# ---- the places the cases name --------------------------------------------------------------------------

class StubServer:
    """A loopback server whose /v1/models answers and whose every POST fails with an HTML error page (HTTP 501),
    as the trial's server did."""

    def __enter__(self) -> str:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                ok = self.path.endswith("/v1/models")
                self._send(200 if ok else 404, "application/json" if ok else "text/html",
                           json.dumps({"data": [{"id": "served"}]}) if ok else "<html>not found</html>")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self._send(501, "text/html", "<html><body><h1>Error response</h1><p>Error code: 501</p>"
                                             "<p>Message: Unsupported method ('POST').</p></body></html>")

            def _send(self, status, ctype, body):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body.encode())))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def tiny_model(into: Path) -> Path:
    """A 2-layer random Llama with the default model's tokenizer (llm_adapt.models.synthetic)."""
    from llm_adapt.models.source import resolve_model
    from llm_adapt.models.synthetic import write_tiny_llama

    return write_tiny_llama(into, tokenizer_from=resolve_model("default").path)


def prepare(fixtures: Path, tiny: Path | None = None) -> dict[str, str]:
    """Every place a case names, under `fixtures` (outside any case's sandbox). `tiny`: a tiny model to copy."""
    fixtures.mkdir(parents=True, exist_ok=True)
    model = fixtures / "tiny"
    shutil.copytree(tiny, model) if tiny else tiny_model(model)
    trunc = fixtures / "trunc"
    shutil.copytree(model, trunc)
    shard = trunc / "model.safetensors"
    with open(shard, "r+b") as handle:  # a download cut off: the last tenth of the data is missing
        handle.truncate(shard.stat().st_size * 9 // 10)
    (fixtures / "text.txt").write_text("hello")
    (fixtures / "badcfg").mkdir()
    (fixtures / "badcfg" / "config.json").write_text("{oops")
    (fixtures / "corrupt.gguf").write_bytes(b"GGUF" + b"\0" * 32)
    (fixtures / "bad.jsonl").write_text("{not json\n")
    (fixtures / "file").write_text("a regular file, not a directory")
    readonly = fixtures / "readonly"
    readonly.mkdir()
    run = fixtures / "rorun"
    run.mkdir()
    write_run(run, model)
    for path in (readonly, run):
        path.chmod(0o555)
    variants = model_variants(fixtures, model)
    write_run(fixtures / "oldrun", model)
    write_run(fixtures / "badstatus", model)
    status = fixtures / "badstatus" / "status.json"
    status.write_text(status.read_text()[:40])  # a write cut off
    return {"MISSING": str(fixtures / "missing"), "TEXTFILE": str(fixtures / "text.txt"),
            "BADCFG": str(fixtures / "badcfg"), "CORRUPT.gguf": str(fixtures / "corrupt.gguf"), "TINY": str(model),
            "TRUNC": str(trunc), "BADJSONL": str(fixtures / "bad.jsonl"), "FILE": str(fixtures / "file"),
            "READONLY": str(readonly), "RORUN": str(run), "OLDRUN": str(fixtures / "oldrun"),
            "BADSTATUS": str(fixtures / "badstatus"), **variants}


def model_variants(fixtures: Path, model: Path) -> dict[str, str]:
    """Copies of the tiny model, each broken in one way a user's checkpoint is: its config without
    `architectures` (an OLMo-2's), a model_type vLLM does not know, no tokenizer files, a head size of 16, and
    a weight index that lists a shard that is not there."""
    def variant(name: str, edit: Callable[[dict], None] | None = None, drop: tuple[str, ...] = ()) -> str:
        folder = fixtures / name
        shutil.copytree(model, folder)
        for pattern in drop:
            for path in folder.glob(pattern):
                path.unlink()
        if edit is not None:
            config = json.loads((folder / "config.json").read_text())
            edit(config)
            (folder / "config.json").write_text(json.dumps(config))
        return str(folder)

    def olmo2(c: dict) -> None:
        c.pop("architectures")
        c["model_type"] = "olmo2"

    def unknown(c: dict) -> None:
        c.update(architectures=["ZooUnknownForCausalLM"])

    def missing_shard(folder: str) -> str:
        shard = "model-00002-of-00002.safetensors"
        weight_map = {"model.embed_tokens.weight": "model.safetensors", "lm_head.weight": shard}
        (Path(folder) / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
        return folder

    return {"NOARCH": variant("noarch", olmo2), "UNKNOWNTYPE": variant("unknown", unknown),
            "BADTYPE": variant("badtype", lambda c: c.update(model_type="zoo-unknown")),
            "NOTOKENIZER": variant("notok", drop=("tokenizer*", "vocab.json", "merges.txt", "special_tokens_map.json")),
            "HEAD16": variant("head16", lambda c: c.update(head_dim=16)),
            "NOSHARD": missing_shard(variant("noshard"))}


def write_run(out: Path, model: Path) -> None:
    """A run directory as `inspect --out` and a stopped run leave it: inspect.json and status.json."""
    from llm_adapt import rundir
    from llm_adapt.inspect.plan import PlanOptions
    from llm_adapt.inspect.stage import run_inspect
    from llm_adapt.models.source import resolve_model
    from llm_adapt.run.config import QUICK
    from llm_adapt.run.state import RunStatus

    source = resolve_model(str(model))
    plan = PlanOptions(model_path=str(source.path), served_model_name="tiny", kv_cache_space_gib=1, max_model_len=512)
    run_inspect(source, plan, "cpu").save(out / rundir.INSPECT)
    RunStatus(model=str(model), platform="cpu", stages={"inspect": {"status": "done"}}, workload=asdict(QUICK)).save(
        out / rundir.STATUS)


@contextlib.contextmanager
def servers(sandbox_tmp: Path) -> Iterator[dict[str, str]]:
    """The failing stub and a slow mock server (mock-server: 2 s between tokens), for the cases that name them."""
    from llm_adapt.engines.server import LaunchSpec, ManagedServer, free_port

    port = free_port()
    spec = LaunchSpec(engine="mock", argv=[sys.executable, "-m", "llm_adapt.cli", "mock-server", "--port", str(port),
                                           "--itl-ms", "2000"],
                      env={}, host="127.0.0.1", port=port, served_model="mock", startup_timeout_s=60)
    with StubServer() as failing, ManagedServer(spec, sandbox_tmp / f"mock-{port}.log") as slow:
        yield {"POSTFAIL": failing, "SLOW": slow.endpoint.base_url}


# ---- one case, measured -----------------------------------------------------------------------------------

CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, PR_CAPBSET_DROP = 1, 2, 24


def as_a_user() -> None:
    """In the child before exec: root without the capabilities that ignore file modes (an ordinary user keeps what
    it has), and SIGINT at its default (a background parent may have left it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    if os.geteuid() == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "cannot drop CAP_DAC_OVERRIDE: read-only directories not honest here")


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def leftovers(before: set[str], after: set[str]) -> list[str]:
    """The new paths, each named once by its outermost new directory. Pure."""
    new = sorted(after - before)
    tops = [p for p in new if not any(p.startswith(q + "/") for q in new if q != p)]
    return [p + ("/" if any(q.startswith(p + "/") for q in new) else "") for p in tops]


def ready_to_stop(case: Case, sandbox: Path, tmp: Path) -> Callable[[], bool]:
    """When to send a case's signal: once the run's probes are running, or once probe's scratch exists."""
    if case.argv[0] == "run":
        def probes_running() -> bool:
            try:
                stages = json.loads((sandbox / "out" / "status.json").read_text())["stages"]
            except (OSError, ValueError, KeyError):
                return False
            return stages.get("probes", {}).get("status") == "running"
        return probes_running
    return lambda: any(p.name.startswith("llm-adapt-") for p in tmp.iterdir())


def measure(case: Case, places: dict[str, str], sandbox: Path, timeout_s: float = 300.0) -> Row:
    """Run one case in `sandbox` (its working directory, with its own TMPDIR) and say what came of it."""
    tmp = sandbox / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    places = {**places, "OUT": str(sandbox / "out")}
    argv = [places.get(a, next((a.replace(k, v, 1) for k, v in places.items() if a.startswith(k + "/")), a))
            for a in case.argv]
    env = {**os.environ, "TMPDIR": str(tmp), "HF_HUB_CACHE": str(sandbox.parent / "hub-cache"), "COLUMNS": "200"}
    before = files_under(sandbox)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "llm_adapt.cli", *argv], cwd=sandbox, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=as_a_user)
    note = ""
    if case.stop:
        ready, deadline = ready_to_stop(case, sandbox, tmp), time.monotonic() + timeout_s
        while proc.poll() is None and not ready() and time.monotonic() < deadline:
            time.sleep(0.2)
        proc.send_signal(getattr(signal, case.stop))
        note = f"{case.stop} sent"
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        note = "timed out"
    seconds = time.monotonic() - started
    lines = [line for line in err.splitlines() if line.strip()]
    last = scrubbed(lines[-1] if lines else "", places, sandbox)
    left = leftovers(before, files_under(sandbox))
    shown = " ".join(shown_path(a) for a in case.argv)
    return Row(case.name, shown, proc.returncode, len(lines), last, left, case.code,
               proc.returncode == case.code and case.needle in last, note, seconds)


# How the table writes the places: as a user would name them, never this machine's temporary paths.
SHOWN = {"MISSING": "./missing", "TEXTFILE": "./notes.txt", "BADCFG": "./badcfg", "CORRUPT.gguf": "./corrupt.gguf",
         "TINY": "./tiny", "TRUNC": "./truncated", "BADJSONL": "./bad.jsonl", "FILE": "./a-file",
         "READONLY": "./read-only", "RORUN": "./read-only-run", "POSTFAIL": "URL", "SLOW": "URL", "OUT": "./out"}


def shown_path(word: str) -> str:
    """A case's word as the table shows it. Pure."""
    head, sep, rest = word.partition("/")
    return SHOWN[word] if word in SHOWN else SHOWN[head] + sep + rest if sep and head in SHOWN else word


def scrubbed(line: str, places: dict[str, str], sandbox: Path) -> str:
    """A line with the places' real paths put back as the table shows them, longest first. Pure."""
    for key, path in sorted(places.items(), key=lambda kv: -len(kv[1])):
        if key in SHOWN and SHOWN[key] != "URL":
            line = line.replace(path, SHOWN[key])
    return line.replace(str(sandbox), ".")


def host_lacks(need: str | None) -> bool:
    """Whether this host is one the case is measured on ("no-npu": no npu-smi and torch_npu; "no-gpu")."""
    from llm_adapt.platforms import cuda, npu

    return {"no-npu": lambda: bool(npu.npu_missing()), "no-gpu": lambda: bool(cuda.cuda_missing())}.get(
        need, lambda: True)()


# ---- the table --------------------------------------------------------------------------------------------

EXPECTED_LEFT = {"Ctrl-C during run": "out/"}  # an interrupted run keeps what finished, for --resume


def table(rows: list[Row]) -> list[str]:
    """The docs table. Pure. Its commands are written without `llm-adapt` (tests/test_examples.py runs every
    `llm-adapt ...` of the docs as an example that works; these are meant to fail)."""
    out = ["| bad input | `llm-adapt` with | exit | lines on stderr | leaves behind | seconds | its last line |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        left = ", ".join(f"`{p}`" for p in r.leaves) or "nothing"
        said = r.last.replace("|", "\\|")
        said = said if len(said) <= 200 else said[:197] + "..."
        took = f"{r.seconds:.1f}" if r.seconds is not None else "-"
        out.append(f"| {r.name} | `{r.command}` | {r.code} | {r.lines} | {left} | {took} | {said} |")
    return out


def machine() -> str:
    from llm_adapt import platforms

    return f"{platforms.cpu_model() or 'unknown CPU'}, {platforms.cpu_cores()} cores"


def write_docs(lines: list[str], path: Path = LIMITS) -> None:
    text = path.read_text()
    block = "\n".join([BEGIN, f"Measured {time.strftime('%Y-%m-%d')} on {machine()} with "
                              "`python benchmarks/bad_inputs.py --docs`:", "", *lines, END])
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text += "\n" + block + "\n"
    path.write_text(text)


def problems(rows: list[Row]) -> list[str]:
    """What breaks the rule: a bad input is one line, exit 2, nothing left; a signal 130 or 143. Pure."""
    out = []
    for r in rows:
        if not r.ok:
            out.append(f"{r.name}: exit {r.code} (expected {r.expected}), last line {r.last!r}")
        if r.expected == 2 and r.lines != 1:
            out.append(f"{r.name}: {r.lines} lines on stderr")
        if [p for p in r.leaves if p != "tmp/"] and ", ".join(r.leaves) != EXPECTED_LEFT.get(r.name):
            out.append(f"{r.name}: left {r.leaves}")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="comma-separated case names (default: all)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--docs", action="store_true", help="write the table into docs/limits.md")
    args = parser.parse_args()
    chosen = [c for c in CASES if not args.only or c.name in args.only.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bad-inputs-"))
    rows = []
    try:
        places = prepare(work / "fixtures")
        (work / "servers").mkdir()
        with servers(work / "servers") as urls:
            for i, case in enumerate(chosen):
                if not host_lacks(case.needs):
                    print(f"skipped (this host has the device): {case.name}", flush=True)
                    continue
                row = measure(case, {**places, **urls}, work / f"case-{i}")
                rows.append(row)
                print(f"{'ok ' if row.ok else 'BAD'} exit {row.code} lines {row.lines} leaves "
                      f"{row.leaves or 'nothing'}: {row.name}", flush=True)
    finally:
        for path in (work / "fixtures" / "readonly", work / "fixtures" / "rorun"):
            if path.exists():
                path.chmod(0o755)
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(table(rows)))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=1))
    if args.docs:
        write_docs(table(rows))
    found = problems(rows)
    for line in found:
        print(f"problem: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
