"""The report's tables: Table 1 (with its sidecar of cells), ``table_beir.md``, ``norms.md`` (with
what ``k: auto`` costs) and ``chance.json`` (a random ranking's scores, the tables' chance rows)."""
