"""``htc labels export|import``: the labels kept in the dashboard's store, as a CSV file and back.

The labels live in the dashboard's run store (DuckDB, the ``[app]`` extra): the command loads
``htc_core.app.label_store`` inside the command (so that importing the CLI never loads DuckDB) and says what to
install when it is missing.
"""

from __future__ import annotations

import argparse
import sys

from .common import CLIError


def _open(args: argparse.Namespace):
    try:
        from ..app import label_store as labels_mod
        from ..app import store as store_mod
    except ImportError as e:
        raise CLIError(f"the labels store needs the dashboard's libraries ({e.name}): pip install "
                       "'htc-calibration[app]'") from None
    try:
        store = store_mod.Store(args.data_dir) if args.data_dir else store_mod.Store()
    except Exception as e:  # noqa: BLE001 - a locked or foreign store: said in one line
        raise CLIError(f"cannot open the store: {e}") from None
    return store, labels_mod.LabelStore(store)


def _run_sets(store, wanted: str | None) -> list[str]:
    sets = store.list_run_sets()
    if wanted is None:
        return list(sets["id"])
    hit = sets[(sets["id"] == wanted) | (sets["name"] == wanted)]
    if hit.empty:
        names = ", ".join(f"{n} ({i})" for i, n in zip(sets["id"], sets["name"])) or "none stored"
        raise CLIError(f"no run set named {wanted!r}; run sets: {names}")
    return list(hit["id"])


def cmd_labels_export(args: argparse.Namespace) -> int:
    store, labels = _open(args)
    text = labels.export_csv(_run_sets(store, args.run_set), history=args.history)
    if args.out in (None, "-"):
        sys.stdout.write(text)
        return 0
    from ..atomic import atomic_open
    from .common import output_path

    out = output_path(args.out, (".csv",))
    with atomic_open(out, "w") as fh:
        fh.write(text)
    print(f"wrote {max(0, text.count(chr(10)) - 1)} label rows to {out}", file=sys.stderr)
    return 0


def cmd_labels_import(args: argparse.Namespace) -> int:
    from ..report import LoadReport

    store, labels = _open(args)
    ids = _run_sets(store, args.run_set)
    if len(ids) != 1:
        raise CLIError(f"--run-set is needed: the store holds {len(ids)} run sets")
    report = LoadReport()
    res = labels.import_file(args.file, ids[0], source=args.source, report=report)
    for p in report.problems[:10]:
        print(f"  [{p.severity}] {p}", file=sys.stderr)
    print(f"labels {args.file} -> run set {ids[0]}: {res.summary()}")
    if res.unknown:
        print(f"  ids without a run: {', '.join(map(repr, res.unknown[:5]))}" + (" ..." if len(res.unknown) > 5
                                                                                else ""))
    if res.conflicts:
        print(f"  conflicts (resolve them on the dashboard's Label page): "
              f"{', '.join(map(repr, res.conflicts[:5]))}" + (" ..." if len(res.conflicts) > 5 else ""))
    if not (res.applied or res.unchanged or res.conflicts):
        raise CLIError(f"no label of {args.file} was stored (see above)")
    return 0


def register(sub) -> None:
    p = sub.add_parser("labels", help="export or import the labels kept in the dashboard's store",
                       description="The dashboard keeps every label (person, rule, file) with its history in its "
                                   "store. 'export' writes the current labels (or the history) as CSV: id, success "
                                   "(1/0, empty for skip), value, source, note, created, run_set; 'import' adds a "
                                   "labels file (CSV/TSV/JSONL, as --labels reads) to one run set. A label that "
                                   "disagrees with a file or person label is kept as a conflict, never applied "
                                   "silently.",
                       epilog="examples:\n  htc labels export --out labels.csv\n"
                              "  htc labels import labels.csv --run-set sample-runs",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ops = p.add_subparsers(dest="labels_command", metavar="ACTION", required=True)
    for name, func, helptext in (("export", cmd_labels_export, "write the labels as CSV"),
                                 ("import", cmd_labels_import, "add the labels of a file to a run set")):
        q = ops.add_parser(name, help=helptext)
        if name == "import":
            q.add_argument("file", metavar="FILE", help="a labels file (CSV/TSV/JSONL/JSON)")
            q.add_argument("--source", choices=("file", "rule", "person"), default="file",
                           help="what the labels are marked as (default: file)")
        else:
            q.add_argument("--out", metavar="FILE", help="CSV file (default: standard output)")
            q.add_argument("--history", action="store_true", help="every label ever given, with its status")
        q.add_argument("--run-set", metavar="NAME", help="a run set's name or id (default: all)")
        q.add_argument("--data-dir", metavar="DIR", help="the dashboard's data directory (default: $HTC_DATA_DIR "
                                                         "or ~/.htc)")
        q.set_defaults(func=func)
