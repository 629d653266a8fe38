"""How a figure or a text reads in a Markdown table cell: the report and the export write them alike. Pure."""

from __future__ import annotations

import math


def cell(value) -> str:
    """Text safe inside a Markdown table cell and, once converted, inside HTML: model output stays inert."""
    text = str(value if value is not None else "-").replace("&", "&amp;").replace("<", "&lt;")
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")


def num(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, (int,)) and not isinstance(value, bool):
        return f"{value:,}"
    value = float(value)
    if value != 0 and (abs(value) < 10 ** -digits or abs(value) >= 1e6):
        return f"{value:.{digits}e}"
    return f"{value:.{digits}f}"


def pct(value, digits: int = 2) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value * 100:.{digits}f}%"


def gib(value) -> str:
    return "-" if value is None else f"{value / 1024**3:.2f} GiB"
