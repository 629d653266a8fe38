"""AISBench (PyPI `ais-bench-benchmark`, entry `ais_bench`) as a second eval backend: the harness vLLM-Ascend's
tutorials and nightly tests run. It lives in a venv of its own (install.py), because its pins (numpy < 2,
datasets <= 3.6, Pillow 11.2.1, transformers < 5 for its HF backend) do not install beside vLLM's."""
