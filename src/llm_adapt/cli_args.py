"""argparse pieces shared by the subcommands: an ArgumentParser that fails in one line, and typed values."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """Usage errors as one line and exit code 2, instead of argparse's usage dump."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        sys.exit(2)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be greater than 0")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite number greater than 0")
    return value


def fraction(text: str) -> float:
    value = positive_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be in (0, 1]")
    return value


def memory_gib(text: str) -> float:
    """GiB as a number, or with a unit: 64, 64G, 64GiB, 512M, 512MiB. An error quotes the text as given."""
    raw = text.strip().lower().removesuffix("ib").removesuffix("b")
    scale = {"g": 1.0, "m": 1 / 1024, "t": 1024.0}.get(raw[-1:], None)
    number = raw[:-1] if scale is not None else raw
    try:
        value = float(number)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a memory size; give GiB as a number or with a unit, "
                                         "e.g. 64, 64GiB or 512MiB") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a finite size greater than 0")
    return value * (scale or 1.0)


def rate_value(text: str) -> float:
    if text.strip().lower() in ("inf", "infinity"):
        return float("inf")
    return positive_float(text)


def int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected whole numbers separated by commas, e.g. 1,2,4,8") from None
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive whole numbers, e.g. 1,2,4,8")
    return values


def slo_value(text: str) -> dict[str, float]:
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip().lower().removesuffix("_ms")
        if not sep or key not in ("ttft", "tpot", "e2el"):
            raise argparse.ArgumentTypeError(f"{part!r}: expected ttft=MS, tpot=MS or e2el=MS")
        out[key] = positive_float(value.strip().lower().removesuffix("ms"))
    return out


def goodput_pair(text: str) -> tuple[str, float]:
    """One of vLLM's `--goodput` items, KEY:MS (ttft:500)."""
    key, sep, value = text.partition(":")
    key = key.strip().lower()
    if not sep or key not in ("ttft", "tpot", "e2el"):
        raise argparse.ArgumentTypeError(f"{text!r}: expected ttft:MS, tpot:MS or e2el:MS, e.g. ttft:500 tpot:100")
    return key, positive_float(value.strip())


def metadata_pair(text: str) -> tuple[str, str]:
    """One of vLLM's `--metadata` items, KEY=VALUE."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE, e.g. version=0.3.3")
    return key.strip(), value.strip()


def percentile_list(text: str) -> tuple[float, ...]:
    """vLLM's `--metric-percentiles`: comma-separated numbers in (0, 100], e.g. 50,90,99."""
    try:
        values = tuple(float(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected percentiles separated by commas, e.g. 50,90,99") from None
    if not values or not all(0 < v <= 100 for v in values):
        raise argparse.ArgumentTypeError(f"{text!r}: percentiles must be in (0, 100], e.g. 50,90,99")
    return values


def metric_names(text: str) -> tuple[str, ...]:
    """vLLM's `--percentile-metrics`: a comma-separated subset of ttft, tpot, itl, e2el."""
    names = tuple(v.strip().lower() for v in text.split(",") if v.strip())
    bad = [n for n in names if n not in ("ttft", "tpot", "itl", "e2el")]
    if not names or bad:
        raise argparse.ArgumentTypeError(f"{text!r}: expected names from ttft,tpot,itl,e2el")
    return names
