"""The one rule for comparing floats in the tests: round-off allowances from eps and the size of the work.

A result reached through BLAS/LAPACK, a summation order or libm may differ in its last bits between
CPUs and library builds (issue 19: a rate of 1.0 here was 1.0000000000000002 on another machine's
OpenBLAS kernels). A test that compares such a result with an independent computation, or with a
number written down, allows :func:`roundoff` for it, never ``==``.

Exact comparisons stay where the value is exact by construction: integers, values set or copied
without arithmetic, arithmetic whose every intermediate is representable (dyadic shares such as
1/2 and 1/4, small integers, a division correctly rounded the same way on every IEEE machine), a
value the code sets exactly (a clamp, a rate of 1 the code knows from the graph). And bit-identity
stays between two runs on the same machine (workers 1 vs 2, numba vs numpy, cache vs recompute,
the same seed twice): those promise the same bits.
"""

import numpy as np

EPS = float(np.finfo(float).eps)


def roundoff(scale=1.0, ops=1):
    """Allowance ``64 eps ops scale`` for a result of magnitude ``scale`` after ``ops`` roundings.

    ``ops`` counts the floating-point operations a result depends on in sequence (the terms of a
    sum, the steps of a recursion, the rows of a matrix whose eigenvalue is computed); ``scale``
    is the largest magnitude met on the way (not the result's, where it cancels). Each rounding
    errs by at most ``eps / 2`` of its operands: standard error bounds read ``c ops eps scale``
    with a small constant c (a sum of m terms: ``(m - 1) eps``; a backward-stable eigenvalue of an
    N-row normal matrix: ``c N eps ||A||``), and 64 covers c.

    >>> roundoff(2.0, 10) == 1280 * EPS
    True
    """
    return 64.0 * EPS * max(1, ops) * scale
