"""A stand-in `npu-smi`: a shell script that prints the recorded outputs in tests/fixtures/npu_smi (Huawei's
published samples), for the tests that need an Ascend host without one."""

from pathlib import Path

SAMPLES = Path(__file__).parent / "fixtures" / "npu_smi"


def write_fake_npu_smi(directory: Path) -> Path:
    """`directory/npu-smi`, answering `info`, `info -t usages -i 0` and `info -t memory -i 0`; anything else
    fails as the real tool does on an unknown query."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "npu-smi"
    script.write_text(f"""#!/bin/sh
case "$*" in
  "info") exec /bin/cat {SAMPLES}/info_atlas200i_a2.txt ;;
  "info -t usages -i 0") exec /bin/cat {SAMPLES}/usages_atlas350.txt ;;
  "info -t memory -i 0") exec /bin/cat {SAMPLES}/memory_atlas350.txt ;;
  *) echo "unknown: $*" >&2; exit 1 ;;
esac
""")
    script.chmod(0o755)
    return script
