"""A small dataset in gsm8k's own format (openai/gsm8k, config `main`: `question`, and an `answer` whose
last line is `#### N`), placed in a Hugging Face datasets cache where `load_dataset('openai/gsm8k',
'main')` finds it offline, as it finds a copy fetched once on a machine with network.

Offline, `datasets` reads a hub dataset from its own cache folder, `<cache>/openai___gsm8k/main/...`
(its cached-module factory), not from the hub's file cache; the folder is prepared here by loading a
local copy of the repository under the same name and renaming its cache folder to the hub id's."""

from __future__ import annotations

from pathlib import Path

CARD = """---
configs:
- config_name: main
  data_files:
  - split: train
    path: main/train-*
  - split: test
    path: main/test-*
---
"""


def problem(i: int) -> dict[str, str]:
    """A one-step word problem and its worked answer, written as gsm8k writes them."""
    a, b = 3 + i, 4 + 2 * i
    return {"question": f"Tom has {a} apples and buys {b} more. How many apples does Tom have now?",
            "answer": f"Tom has {a} apples and buys {b} more, so he has {a} + {b} = <<{a}+{b}={a + b}>>{a + b} apples.\n"
                      f"#### {a + b}"}


def write_repository(root: Path, train: int = 3, test: int = 4) -> Path:
    """`root/gsm8k`: the repository's card and parquet files, as the hub holds them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    repo = root / "gsm8k"
    (repo / "main").mkdir(parents=True)
    (repo / "README.md").write_text(CARD)
    for split, rows in (("train", [problem(i) for i in range(train)]),
                        ("test", [problem(100 + i) for i in range(test)])):
        pq.write_table(pa.Table.from_pylist(rows), repo / "main" / f"{split}-00000-of-00001.parquet")
    return repo


def cache_gsm8k(cache: Path, scratch: Path, train: int = 3) -> list[dict[str, str]]:
    """Prepare `cache` (a HF_DATASETS_CACHE) so that offline `load_dataset('openai/gsm8k', 'main')` loads
    the written dataset (`train` few-shot rows: gsm8k's own 5-shot needs 5); returns its test rows."""
    import datasets

    repo = write_repository(scratch, train=train)
    loaded = datasets.load_dataset(str(repo), "main", cache_dir=str(cache))
    (cache / "gsm8k").rename(cache / "openai___gsm8k")  # the folder name the hub id 'openai/gsm8k' maps to
    return list(loaded["test"])
