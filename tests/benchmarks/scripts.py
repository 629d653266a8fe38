"""The benchmark scripts loaded as modules, for their tests: they are files under benchmarks/, not a package."""

import importlib.util
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"


def load_script(name: str):
    """benchmarks/NAME.py as the module NAME (registered, so its dataclasses and sibling imports resolve)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
