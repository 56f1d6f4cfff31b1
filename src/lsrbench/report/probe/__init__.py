"""The probe's report: ``probe.md`` / ``probe.json`` (the recommended k per backbone) and ``probe.png``."""
