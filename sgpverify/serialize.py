"""JSON-ready values: one converter for every ``to_dict`` and report."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def jsonable(o: object) -> Any:
    """Convert numpy scalars/arrays, tuples and dicts to JSON types; NaN and inf become None."""
    if isinstance(o, dict):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if isinstance(o, np.ndarray):
        return jsonable(o.tolist())
    if isinstance(o, (bool, np.bool_)):
        return bool(o)
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, (float, np.floating)):
        o = float(o)
        return o if math.isfinite(o) else None
    return o
