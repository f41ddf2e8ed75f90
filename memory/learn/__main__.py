"""``python -m memory.learn train|report gate|judge [options]``: train a model or report it on its
held-out half. Each model's module is imported only when asked for (training needs scikit-learn)."""
from __future__ import annotations

import importlib
import sys

# model -> the module that trains and reports it (each has train(argv) and report(argv)).
MODELS = {"gate": "memory.learn.gate_train", "judge": "memory.learn.judge_train"}
USAGE = "usage: python -m memory.learn {train,report} {" + ",".join(MODELS) + "} [options]"


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("train", "report") or argv[1] not in MODELS:
        print(USAGE, file=sys.stderr)
        return 2
    module = importlib.import_module(MODELS[argv[1]])
    return getattr(module, argv[0])(argv[2:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
