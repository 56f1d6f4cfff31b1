"""The config snapshot: the canonical config the reports were made with (results/configs/<id>/config.yaml), an
input of every report rule, so a settings change re-runs the reports and only that."""

from __future__ import annotations

from lsrbench.config.evaluated import used_datasets
from lsrbench.dag.stage import Stage
from lsrbench.stages.recipe import late_recipe_settings, results_recipe

__all__ = ["STAGE", "config_snapshot", "results_config"]

# Top-level keys that say where things are read from or how jobs run: in no result.
RUNTIME_CONFIG_KEYS = ("mirror", "cache_dir", "datasets_file", "use_gpu", "train_processes")
# evaluation keys that say how a job runs, not what it computes (the index's collapse band: whether it runs)
RUNTIME_EVALUATION_KEYS = ("encode_shard_size", "index_sample_documents", "index_max_active_share", "index_max_empty_share")


def results_config(config: dict) -> dict:
    """The config as it decides results: runtime-only settings left out, the dataset registry reduced to the
    entries used."""
    out = {key: v for key, v in config.items() if key not in RUNTIME_CONFIG_KEYS and not key.startswith("_")}
    out["recipe"] = results_recipe(config)
    out["training_data"] = {key: v for key, v in config["training_data"].items() if key != "name"}  # a mirror folder name
    out["evaluation"] = {key: v for key, v in config["evaluation"].items() if key not in RUNTIME_EVALUATION_KEYS}
    out["datasets"] = {name: config["_datasets"][name] for name in used_datasets(config)}
    return out


def config_snapshot(config: dict, backbone_order: list[str], config_yaml: str, files: list[str] = ()) -> None:
    """The config the reports are made with, readable; its id hashes exactly this, and ``files`` (where it was
    read) is information on its first line."""
    import yaml

    from lsrbench.atomic import atomic_open
    from lsrbench.report.config_record import snapshot_header

    with atomic_open(config_yaml, "w", encoding="utf-8") as fh:
        fh.write(snapshot_header(files))
        backbones = config.get("backbones", {})
        yaml.safe_dump({**config, "backbones": {b: backbones[b] for b in backbone_order}}, fh, sort_keys=False,
                       allow_unicode=True)


STAGE = Stage(
    name="config_snapshot", kind="configs", job=config_snapshot,
    grid=lambda c: [{}],
    # the backbones' order too (the tables' row order); not the files it was read from
    identity=lambda layout, key: {"config": results_config(layout.config),
                                  "backbone_order": list(layout.config["backbones"])},
    runtime=lambda layout, item: {"files": layout.config_files},
    late_settings=late_recipe_settings("config.recipe"),
    outputs={"config_yaml": "config.yaml"},
    remade_if_changed=True,
    local=True,  # a file written from the config: on the submitting node
    log=None,
)
