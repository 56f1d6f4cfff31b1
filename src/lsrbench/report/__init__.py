"""The reports, in rooms: the paper's claims (:mod:`~lsrbench.report.claims`), ``lsrbench verify`` and the checks
of a finished folder (:mod:`~lsrbench.report.verify`), the probe's report (:mod:`~lsrbench.report.probe`), the
tables (:mod:`~lsrbench.report.tables`) and the figures (:mod:`~lsrbench.report.figures`)."""
