"""The paper's claims as checkable statements: the evidence they read, one class per claim type and
its registry line (:mod:`~lsrbench.report.claims.engine`), ``claims.md`` / ``claims.json`` and the
engine's calibration on simulated evidence."""
