"""loss_curves.png: the training loss of every run (mean over seeds step by step), with the chance
level of the recipe's batch; loss_curves.data.json: what it shows."""

from __future__ import annotations

from lsrbench.dag.report_rule import Report, Shown
from lsrbench.report.config_record import config_record, keyed, report_backbones, report_settings
from lsrbench.report.reports.inputs import log_files

__all__ = ["REPORT", "report_loss_curves"]


def report_loss_curves(log_files, backbones: dict, batch_size: int, loss_curves_png: str, data_json: str,
                       config_yaml: str | None = None) -> None:
    from lsrbench.report.figures.data import write_figure_record
    from lsrbench.report.figures.plots import plot_loss_curves
    from lsrbench.report.seeds import read_mean_train_logs

    data = plot_loss_curves(read_mean_train_logs(keyed(log_files)), backbones, loss_curves_png, batch_size=batch_size,
                            seeds=_n_seeds(log_files))
    write_figure_record(data_json, config_record(config_yaml), [loss_curves_png], {"log_files": log_files}, data)


def _n_seeds(log_files) -> int:
    from lsrbench.names import NO_SEED

    return len({row[2] for row in log_files if len(row) == 4 and row[2] != NO_SEED}) or 1


def verify_loss_curves(root, stated, trace) -> None:
    """The figure's data made again from the training logs it names; its image by SHA-256."""
    from lsrbench.report.figures.data import loss_data
    from lsrbench.report.figures.plots import loss_runs
    from lsrbench.report.seeds import read_mean_train_logs
    from lsrbench.report.verify.remake import check_outputs, compare_data, origin, run_files, stated_record

    side = root / REPORT.outputs["data_json"]
    if (found := stated_record(stated, side, trace)) is None:
        return
    record, located, config_rec, config = found
    check_outputs(record, located, side, trace)
    files = run_files(record["sources"].get("log_files"), located, side, trace)
    if files is None:
        return
    fresh = loss_data(loss_runs(read_mean_train_logs({key: str(p) for key, p in files.items()})),
                      report_settings(config)["backbones"], config["recipe"]["batch_size"])
    compare_data(side, record["data"], fresh, origin(["the training logs it names"], config_rec), trace)


REPORT = Report(
    name="loss_curves", job=report_loss_curves,
    outputs={"loss_curves_png": "loss_curves.png", "data_json": "loss_curves.data.json"},
    keyed=lambda L: {"log_files": log_files(L)},
    settings=lambda c: {"backbones": report_backbones(c), "batch_size": c["recipe"]["batch_size"]},
    shown={"loss_curves_png": Shown("Figures", "loss_curves", "Training loss curves", 4)},
    stated_in=("data_json",),
    verify=verify_loss_curves,
)
