"""msprobe's own compare tool on the committed msprobe dumps, side by side with our per-tensor figures.

Both read the same tensor pairs: the perturbed dump (msprobe's "target", NPU side) against the clean
one ("golden", bench side). msprobe's Cosine (the whole tensor flattened), MaxAbsErr, MaxRelativeErr
and One Thousandth Err Ratio must agree with our TensorAccumulator's cos_tensor, max_abs, max_rel and
thousandth_ratio to rounding. Where a definition differs, docs/accuracy.md says so: our cos_min is per token,
msprobe's cosine per tensor; msprobe computes relative errors in float32 and counts rel < 0.001
(ours: float64, rel <= 0.001); a zero in the reference is divided by float32's eps there, by 1e-12 here.
"""

import csv
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from llm_adapt.accuracy import metrics as m

pytest.importorskip("msprobe", reason="mindstudio-probe is the msprobe extra, installed by `make test`")

FIXTURES = Path(__file__).parent.parent / "fixtures" / "msprobe"
COLUMNS = {"Cosine": "cos_tensor", "MaxAbsErr": "max_abs", "MaxRelativeErr": "max_rel",
           "One Thousandth Err Ratio": "thousandth_ratio"}


def _rank_dir(kind: str, step: int = 0) -> Path:
    (only,) = (FIXTURES / kind / f"step{step}").iterdir()
    return only


def msprobe_compare(target: Path, golden: Path, out: Path) -> list[dict[str, str]]:
    """Its CLI, in its own process (importing msprobe patches torch and triton), rows of its result."""
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", "import sys; from msprobe.msprobe import main; sys.argv[0] = 'msprobe'; "
                           "sys.exit(main())", "compare", "-tp", str(target / "dump.json"), "-gp",
                           str(golden / "dump.json"), "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (result,) = out.glob("compare_result*.csv")
    with open(result, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("step", [0, 1])  # the prefill of each of the two prompts
def test_msprobe_compare_agrees_with_ours_on_the_same_tensors(step, tmp_path):
    target, golden = _rank_dir("perturbed", step), _rank_dir("clean", step)
    rows = [r for r in msprobe_compare(target, golden, tmp_path) if ".output." in r["NPU Name"]]
    assert len(rows) >= 5, [r["NPU Name"] for r in rows]  # embeddings, every layer, the final norm
    moved = 0
    for row in rows:
        name = row["NPU Name"]
        ours = m.TensorAccumulator()
        ours.add(_tensor(golden, name), _tensor(target, name))
        figures = ours.summary()
        for column, key in COLUMNS.items():
            theirs = float(row[column])
            # measured: within 3.3e-8 relative (its relative errors are float32, ours float64)
            assert figures[key] == pytest.approx(theirs, rel=1e-6, abs=1e-12), (name, column, theirs, figures[key])
        moved += figures["max_abs"] > 0
    assert moved >= 2  # the perturbed layer and every one after it differ: a comparison of something


def _tensor(rank_dir: Path, name: str) -> torch.Tensor:
    return torch.load(rank_dir / "dump_tensor_data" / f"{name}.pt", weights_only=True)
