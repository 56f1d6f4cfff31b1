"""One process of a data-parallel training run, started by torchrun from ``stages.train``:
``python -m torch.distributed.run ... -m lsrbench.train_worker CALL.json`` (the stage's arguments)."""

from __future__ import annotations

import json
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    from . import stages

    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0], encoding="utf-8") as fh:
        call = json.load(fh)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    stages.train(**call)
    return 0


if __name__ == "__main__":
    sys.exit(main())
