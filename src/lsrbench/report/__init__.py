"""Report stage: metrics.csv and the run table (:mod:`~lsrbench.report.results`, with the one
best-k definition), Table 1 (:mod:`~lsrbench.report.table1`), the other tables
(:mod:`~lsrbench.report.tables`), figures (:mod:`~lsrbench.report.plots`), the paper's claims
(:mod:`~lsrbench.report.claims`, tests in :mod:`~lsrbench.report.stats`) and ``lsrbench verify``
(:mod:`~lsrbench.report.verify`, :mod:`~lsrbench.report.verify_table1`)."""
