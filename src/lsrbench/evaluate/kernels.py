"""The exact search's compiled kernels through numba when installed: the numpy code's arithmetic in the same
order, so results are identical either way (``LSRBENCH_NUMBA=0``: numpy only)."""

from __future__ import annotations

import os

__all__ = ["kernels"]

_COMPILED = None


def kernels():
    """The compiled kernels (compiled on first use, cached on disk), or None."""
    global _COMPILED
    if _COMPILED is None:
        _COMPILED = False
        if os.environ.get("LSRBENCH_NUMBA", "1") != "0":
            try:
                from lsrbench.evaluate import numba_kernels as nk
            except ImportError:
                pass
            else:
                from types import SimpleNamespace

                _COMPILED = SimpleNamespace(block_scores=nk.block_scores, exact=nk.exact, exhaustive=nk.exhaustive,
                                           candidates=nk.candidates, stream=nk.stream_scan)
    return _COMPILED or None
