"""The config layer, at the bottom of the package so every stage can use it: the strict YAML
reader (:mod:`~lsrbench.config.strict_yaml`), the schemas with their defaults and the canonical
form of a config (:mod:`~lsrbench.config.schema`), layered config files
(:mod:`~lsrbench.config.layers`), the run grid (:mod:`~lsrbench.config.grid`), typed dataset
entries (:mod:`~lsrbench.config.entries`) and the paper's reported numbers
(:mod:`~lsrbench.config.reference`). Checks that need the stages' own knowledge (sources,
measures, claim types, the files a config names) are the DAG's: :mod:`lsrbench.validation.config`."""
