"""Two mistakes a user's problem can make, for the guide's "When your code, or the run, fails"."""

import numpy as np
from mymod import Cauchy


class Flat(Cauchy):
    """Returns the gradients as one flat vector: shape (n * d,) instead of (n, d)."""

    def grad(self, z, rng):
        return super().grad(z, rng).ravel()


class Raises(Cauchy):
    """Raises inside grad, as a bug in a user's model does."""

    def grad(self, z, rng):
        return np.linalg.solve(np.zeros((2, 2)), np.ones(2))


def flat(n, d, seed):
    return Flat(n, d, seed)


def raises(n, d, seed):
    return Raises(n, d, seed)
