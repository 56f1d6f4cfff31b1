"""Shared test helpers (importable as ``helpers.<module>``; ``tests/`` is on ``sys.path``, see
pyproject.toml). Fixtures live in ``tests/conftest.py``; a test module never imports another.

* :mod:`helpers.paths`: the repository and ``../shared`` (read-only test material);
* :mod:`helpers.beir`: small BEIR folders and sparse matrices written by the tests;
* :mod:`helpers.miniatures`: miniatures of the real on-disk formats of lsrbench's sources;
* :mod:`helpers.snakemake`: running Snakemake on a micro DAG, parsing its job lists;
* :mod:`helpers.cli`: ``lsrbench`` commands in the test's own process, their output captured;
* :mod:`helpers.session`: what the processes of a session (pytest-xdist workers), or several
  sessions (``LSRBENCH_TEST_SHARED``), make once and share;
* :mod:`helpers.retrieval`: the brute-force reference of exact top-k retrieval;
* :mod:`helpers.families`: tiny random checkpoints of five ``*ForMaskedLM`` families.
"""
