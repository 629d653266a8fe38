"""What a layer's own error is judged against, as a typed record: one floor below the rooms that measure
it (accuracy/) and word it (messages/, report/), so that both read it without parsing its English.
accuracy/result.py hands it on with the accuracy stage's other records."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict


class RoundingBasis(BaseModel):
    """What a layer's (or a part's) own error is judged against: its noise floor; its noise floor with the
    step up from the layer before that chance allows (layers captured in an engine); or, with no floor,
    the rounding a correct kernel makes: `factor` unit roundoffs of `dtype`, grown with the layer's
    longest sum, `contraction` (verdict.roundoff_basis). A row stores it as fields beside its English
    words ("basis"), which files written before these fields carry alone."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["floor", "step", "roundoff"]
    factor: float | None = None
    dtype: str | None = None
    contraction: int | None = None
    step: float | None = None
    step_allowed: float | None = None

    WORDS: ClassVar[dict[str, dict[str, str]]] = {
        "en": {"floor": "noise floor", "roundoff": "{factor} x {dtype} unit roundoff",
               "roundoff_sum": "{factor} x {dtype} unit roundoff (longest sum: {n} terms)",
               "step": "noise floor, stepping up {step:.2f}x from the layer before (chance allows {allowed:.2f}x)"},
        "zh": {"floor": "噪声基线", "roundoff": "{factor} × {dtype} 单位舍入误差",
               "roundoff_sum": "{factor} × {dtype} 单位舍入误差（最长求和：{n} 项）",
               "step": "噪声基线，比上一层跃升 {step:.2f} 倍（随机波动允许 {allowed:.2f} 倍）"}}

    def words(self, lang: str = "en") -> str:
        words = self.WORDS.get(lang, self.WORDS["en"])
        if self.kind == "step":
            return words["step"].format(step=self.step, allowed=self.step_allowed)
        if self.kind == "floor":
            return words["floor"]
        factor = f"{self.factor:.1f}".removesuffix(".0")
        if self.contraction:
            return words["roundoff_sum"].format(factor=factor, dtype=self.dtype, n=f"{self.contraction:,}")
        return words["roundoff"].format(factor=factor, dtype=self.dtype)

    def fields(self) -> dict[str, Any]:
        """How a row stores it: its English words, and for a rounding basis its factor, dtype and longest sum."""
        if self.kind == "roundoff":
            return {"basis": self.words(), "basis_factor": self.factor, "basis_dtype": self.dtype,
                    "contraction": self.contraction}
        if self.kind == "step":
            return {"basis": self.words(), "step": self.step, "step_allowed": self.step_allowed}
        return {"basis": self.words()}

    @classmethod
    def of(cls, row: dict[str, Any]) -> "RoundingBasis | None":
        """The basis a stored row (a layer, a part, a located fault, or roundoff_basis itself) was judged
        against; None for words of no known form."""
        if row.get("step") is not None and row.get("step_allowed") is not None:
            return cls(kind="step", step=row["step"], step_allowed=row["step_allowed"])
        if row.get("basis") == cls.WORDS["en"]["floor"]:
            return cls(kind="floor")
        if row.get("kind") == "roundoff":  # roundoff_basis itself
            factor, dtype = row.get("factor"), row.get("dtype")
        else:
            factor, dtype = row.get("basis_factor"), row.get("basis_dtype")
        if factor is not None and dtype is not None:
            return cls(kind="roundoff", factor=factor, dtype=dtype, contraction=row.get("contraction"))
        return _from_old_words(row.get("basis") or "")


# The reader for files written before the basis was stored as fields: its English words alone,
# "4 x bf16 unit roundoff" or "185 x fp32 unit roundoff (longest sum: 8,192 terms)".
_OLD_WORDS = re.compile(r"^(?P<factor>[0-9.]+) x (?P<dtype>\w+) unit roundoff(?: \(longest sum: (?P<n>[0-9,]+) terms\))?$")


def _from_old_words(words: str) -> RoundingBasis | None:
    match = _OLD_WORDS.match(words)
    if not match:
        return None
    n = int(match["n"].replace(",", "")) if match["n"] else None
    return RoundingBasis(kind="roundoff", factor=float(match["factor"]), dtype=match["dtype"], contraction=n)
