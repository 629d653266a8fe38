"""Positions as the statistical units of a per-layer error, with shared prefixes counted once.

A causal model computes the same hidden state at every position whose whole prefix is the same, so
the suite's prompts, which all open with the same chat-template tokens, carry one draw of the
rounding error there, not one per prompt. The error of a middle layer is often concentrated in such
a position (the first token's "massive activation", Sun et al. 2024), and a bootstrap over prompts
then sees a constant where there is one sample: it underestimates how much the ratio of two such
errors moves by chance. Here each distinct prefix is one unit, its squared error the mean over its
copies.

A bootstrap cannot see the chance inside one unit: when one position (and there a few channels)
carries the error, the ratio of two rounding errors is the ratio of a few draws. Under the null the
engine and the floor make rounding errors drawn from one distribution, so each squared error is
about a scaled chi-square with the same k effective degrees of freedom, and ln of the rel-L2 ratio
has variance 1/(2k) + 1/(2k) = 1/k. k is estimated from each error as (sum d^2)^2 / sum d^4 over
its elements (Kish's count; units counted once); a concentrated sample underestimates k, and an
error spread over many more elements than the floor's is not the null's, so the larger of the two
estimates is used. Elements within a position are not independent, so k is if anything too large
and this spread too small: it excuses no more than the data's own concentration allows.
"""

from __future__ import annotations

import numpy as np


def prefix_units(sequences: list[list[int]]) -> tuple[list[np.ndarray], int]:
    """Per sequence, the unit id of each position (equal ids: the same tokens 0..t), and how many
    units there are."""
    ids: dict[tuple[int, int], int] = {}
    out = []
    for seq in sequences:
        units, parent = np.empty(len(seq), dtype=np.int64), -1
        for t, token in enumerate(seq):
            parent = ids.setdefault((parent, int(token)), len(ids))  # (unit of the prefix before, token)
            units[t] = parent
        out.append(units)
    return out, len(ids)


def unit_values(per_position: list[np.ndarray], units: list[np.ndarray], count: int) -> np.ndarray:
    """Each unit's value: the mean over its copies (they differ only where the engine's batch shape
    changed its rounding)."""
    total, copies = np.zeros(count), np.zeros(count)
    for values, ids in zip(per_position, units):
        if len(values) != len(ids):
            raise ValueError(f"{len(values)} values for a sequence of {len(ids)} positions")
        np.add.at(total, ids, np.asarray(values, dtype=float))
        np.add.at(copies, ids, 1)
    return total / np.maximum(copies, 1)


def effective_count(values: np.ndarray) -> float:
    """Kish's effective number of units behind a sum: (sum w)^2 / sum w^2. One unit carrying all of
    the squared error gives 1; n equal ones give n."""
    v = np.asarray(values, dtype=float)
    sq = float((v * v).sum())
    return float(v.sum()) ** 2 / sq if sq > 0 else 0.0


def effective_elements(squares: np.ndarray, fourths: np.ndarray) -> float:
    """Kish's effective number of elements behind a squared error: (sum d^2)^2 / sum d^4, from the
    units' sums of d^2 and d^4."""
    fourth = float(np.sum(fourths))
    return float(np.sum(squares)) ** 2 / fourth if fourth > 0 else 0.0


def chance_spread(k_target: float, k_floor: float) -> float:
    """Relative spread of the rel-L2 ratio of two independent rounding errors from one distribution,
    its effective degrees of freedom estimated from each (the larger estimate is used, see above);
    NaN when neither is known."""
    k = max((v for v in (k_target, k_floor) if v > 0 and np.isfinite(v)), default=0.0)
    return float(np.sqrt(1.0 / k)) if k > 0 else float("nan")
