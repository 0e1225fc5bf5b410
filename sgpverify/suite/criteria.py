"""The numbers every criterion of the suite uses, fixed before any run.

They are part of the claims' criteria (printed in every report), so they
live apart from the configuration: a user's setting never changes them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EPS", "RATE_DELTA", "RATE_OMEGA", "RATIO_OMEGAS"]


EPS = np.finfo(float).eps


#: Half-width of the band around a predicted exponent that counts as agreement.
#: Fixed before any run: half of the smallest departure (0.1) the exponent test
#: must detect, and 25-50 times the O(1/K) remainder left after the K^-1/2
#: correction at the preset's smallest K (docs/theory.md, "Testing an exponent").
RATE_DELTA = 0.05


#: Exponent of the correction term of every rate: the derived bound's
#: higher-order terms are O(gamma) = O(K^-1/2) relative to the leading one.
RATE_OMEGA = 0.5


#: Correction terms of a ratio of two runs that share the leading term (delays, baselines): the
#: bound's expansion in gamma ~ K^-1/2 has O(gamma) and O(gamma^2) relative terms, and the O(gamma)
#: part can cancel (it does when the nodes' Hessians agree), so both are fitted (docs/theory.md).
RATIO_OMEGAS = (0.5, 1.0)
