"""``python -m htc_dev.bench NAME [options]``: run one benchmark (or ``all``); see ``htc_dev.bench``."""

from __future__ import annotations

import importlib
import sys

from . import BENCHMARKS, __doc__ as USAGE


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name == "all":
        for one in ("features", "formats", "calibration", "monitor"):
            print(f"== {one} ==", flush=True)
            importlib.import_module(f"{__package__}.{one}").main(rest)
        return 0
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}; choose one of: {', '.join(BENCHMARKS)}, all", file=sys.stderr)
        return 2
    if name in ("dashboard", "dashboard_scale"):
        import os
        # as app.py does for the server (numpy is not loaded yet here): BLAS on one thread per call
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return importlib.import_module(f"{__package__}.{name}").main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
