"""A numeric fingerprint of the platform: what "the same bits" needs besides the same code and versions.

Two processes running the same sgpverify with the same library versions can
still round differently in the last bits: the BLAS/LAPACK build (OpenBLAS, MKL,
Accelerate) and the CPU kernels it picks (AVX2, AVX-512, NEON), numpy's SIMD
loops for ``exp``/``log``/``sin`` and its summation, and the compiler's use of
fused multiply-adds in scipy's loops. :func:`platform_fingerprint` runs a few
such operations on fixed inputs and hashes their exact results: equal
fingerprints mean those operations gave the same bits.

Used by :mod:`sgpverify.sweep` (the unit cache key and the check of a dask
cluster's workers) and :mod:`sgpverify.report` (the manifest).
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["platform_fingerprint"]

#: Side of the probe matrices: odd (the BLAS micro-kernels' edge cases run), and small enough
#: (61**3 < 2**18) that OpenBLAS runs the products on one thread whatever the thread setting.
_SIDE = 61
#: Length of the vectors of the elementwise and dot probes (a dot of up to 10000 is one thread in OpenBLAS).
_LENGTH = 4099
#: Length of the array of the summation probe (numpy's pairwise sum, unrolled by SIMD width).
_SUM_LENGTH = 100_003


def _uniform(count: int, stream: int) -> np.ndarray:
    """``count`` numbers in [0, 1) from splitmix64 on integers: exact integer arithmetic and exact
    conversions, so the same bits on every platform and numpy version (unlike a generator's stream)."""
    import numpy as np

    z = np.arange(1, count + 1, dtype=np.uint64) + np.uint64(stream << 40)
    z = z * np.uint64(0x9E3779B97F4A7C15)  # modulo 2**64: unsigned arrays wrap without a warning
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53  # 53-bit integers: exact in float64


def _probes() -> dict[str, np.ndarray]:
    """The probe operations on their fixed inputs: ``{name: result}``."""
    import numpy as np
    import scipy.linalg
    import scipy.sparse
    import scipy.special

    n = _SIDE
    a = _uniform(n * n, 1).reshape(n, n) - 0.5
    b = _uniform(n * n, 2).reshape(n, n) - 0.5
    v = _uniform(n, 3) - 0.5
    x = _uniform(_LENGTH, 4)
    long = _uniform(_SUM_LENGTH, 5)
    sparse = scipy.sparse.csr_array(np.where(_uniform(n * n, 6).reshape(n, n) < 0.1, a, 0.0))
    return {
        # BLAS (numpy's build): gemm, gemv (both layouts), dot
        "matmul": np.matmul(a, b),
        "matvec": np.matmul(a, v),
        "vecmat": np.matmul(v, a),
        "dot": np.dot(x, x[::-1]),
        # LAPACK (numpy's build): LU solve, nonsymmetric and symmetric eigenvalues, QR, least squares
        "solve": np.linalg.solve(a, v),
        "eigvals": np.linalg.eigvals(a),
        "eigvalsh": np.linalg.eigvalsh(a + a.T),
        "qr": np.linalg.qr(a)[1],
        "lstsq": np.linalg.lstsq(a[:, :7], v, rcond=None)[0],
        # LAPACK (scipy's build, often another library than numpy's)
        "scipy_solve": scipy.linalg.solve(a, v),
        # numpy's own loops: pairwise summation, einsum, norm, elementwise functions (SIMD)
        "sum": np.sum(long),
        "einsum": np.einsum("ij,ij->j", a, b),
        "norm": np.linalg.norm(a),
        "exp": np.exp(8.0 * x - 4.0),
        "log": np.log(x),
        "sin": np.sin(20.0 * x),
        "cos": np.cos(20.0 * x),
        # compiled scipy loops: sparse matrix times vector, Student-t and gamma quantiles
        "csr_matvec": sparse @ v,
        "stdtrit": scipy.special.stdtrit(np.arange(1.0, 40.0), x[:39]),
        "gammaincinv": scipy.special.gammaincinv(5.0 * x[40:60] + 0.5, x[60:80]),
    }


@functools.lru_cache(maxsize=1)
def platform_fingerprint() -> str:
    """SHA-256 (16 hex digits) of the exact results of a few numeric operations on fixed inputs.

    The operations are those whose last bits depend on the CPU and the library
    builds rather than on the code: BLAS products (numpy's ``matmul`` and
    ``dot``), LAPACK factorizations (numpy's ``solve``, ``eigvals``,
    ``eigvalsh``, ``qr``, ``lstsq`` and scipy's ``solve``), numpy's pairwise
    ``sum``, ``einsum``, ``norm`` and its SIMD ``exp``, ``log``, ``sin``,
    ``cos``, a scipy sparse matrix-vector product and two special-function
    quantiles (``stdtrit``, ``gammaincinv``). The inputs come from integer
    arithmetic, so they have the same bits everywhere; each result is hashed
    as little-endian bytes, with its name and shape.

    Computed once per process (about 2 ms after the imports sgpverify does
    anyway). The probes are sized so that OpenBLAS runs them on one thread: the
    fingerprint does not depend on ``OMP_NUM_THREADS`` or
    ``OPENBLAS_NUM_THREADS`` (local and dask worker processes run with one BLAS
    thread, the parent process with several).

    What it cannot do: it detects a platform difference that shows in these
    operations at these sizes. Two platforms with the same fingerprint can
    still differ in other operations, in larger ones (another blocking, or BLAS
    threads splitting a sum), or on other inputs; rarely, but equality is
    evidence, not proof. Two fingerprints that differ show that some results
    differ in their last bits, not that any of sgpverify's results do. The
    number of BLAS threads, which can change the bits of large products, is
    not captured.

    Returns
    -------
    str
        16 hexadecimal digits.

    Examples
    --------
    >>> fp = platform_fingerprint()
    >>> len(fp), int(fp, 16) >= 0
    (16, True)
    """
    import numpy as np

    h = hashlib.sha256(b"sgpverify numeric fingerprint 1\0")
    for name, value in _probes().items():
        arr = np.ascontiguousarray(value)
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        h.update(f"{name} {arr.dtype.str} {arr.shape}\0".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]
