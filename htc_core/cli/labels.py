"""``htc labels export|import|resolve``: the labels kept in the dashboard's store, as a CSV file and back, and their
conflicts (list them, resolve one or all by a rule: keep the file's, the person's or the newest label).

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


KEEP = ("file", "person", "newest")


def _conflict_rows(labels, run_sets: list[str]) -> list[dict]:
    """One row per run with a pending conflict (its newest conflicting label; an upload's own label, which has no
    row of its own, is the current one with source 'file')."""
    df = labels.conflicts(run_sets)
    rows: dict = {}
    for r in df.to_dict("records"):
        r["current_source"] = r["current_source"] or "file"
        rows[(r["run_set"], r["id"])] = r             # ordered by seq: the newest wins
    return list(rows.values())


def _accept(row: dict, keep: str) -> bool | None:
    """Whether the proposed label wins under ``keep``; None when the rule cannot decide (neither side is from it)."""
    if keep == "newest":
        return True                                   # a conflict is always recorded after the label it disputes
    have = {row["current_source"], row["proposed_source"]}
    if keep not in have or len(have) == 1:
        return None
    return row["proposed_source"] == keep


def cmd_labels_resolve(args: argparse.Namespace) -> int:
    store, labels = _open(args)
    rows = _conflict_rows(labels, _run_sets(store, args.run_set))
    if args.keep is None and (args.id or args.all):
        raise CLIError("say which label wins: --keep file, --keep person or --keep newest")
    if args.keep is not None and not (args.id or args.all):
        raise CLIError("say which conflicts to resolve: --id ID (one run) or --all")
    if args.id:
        rows = [r for r in rows if r["id"] == args.id]
        if not rows:
            raise CLIError(f"run {args.id!r} has no pending conflict (htc labels resolve lists them)")
    if args.keep is None:
        if not rows:
            print("no pending label conflicts")
        for r in rows:
            print(f"{r['run_set']}\t{r['id']}\tnow {r['current'] or '(from the upload)'} ({r['current_source']})"
                  f"\tproposed {r['proposed']} ({r['proposed_source']}, {r['created']})")
        return 0
    done, left = {"kept": 0, "replaced": 0}, []
    for r in rows:
        accept = _accept(r, args.keep)
        if accept is None:
            left.append(r)
            continue
        labels.resolve(r["run_set"], r["id"], accept=accept)
        done["replaced" if accept else "kept"] += 1
    print(f"resolved {done['kept'] + done['replaced']} conflict(s) keeping the {args.keep} label: "
          f"{done['replaced']} replaced by the proposed label, {done['kept']} kept as they were")
    if left:
        print(f"left {len(left)} unresolved: neither side is a {args.keep} label ("
              + ", ".join(f"{r['id']}: {r['current_source']} vs {r['proposed_source']}" for r in left[:5])
              + (" ..." if len(left) > 5 else "") + "); use --keep newest or the Label page", file=sys.stderr)
        return 1
    return 0


def register(sub) -> None:
    p = sub.add_parser("labels", help="export, import or resolve the labels kept in the dashboard's store",
                       description="The dashboard keeps every label (person, rule, file) with its history in its "
                                   "store. 'export' writes the current labels (or the history) as CSV: id, success "
                                   "(1/0, empty for skip), value, source, note, created, run_set; 'import' adds a "
                                   "labels file (CSV/TSV/JSONL, as --labels reads) to one run set. A label that "
                                   "disagrees with a file or person label is kept as a conflict, never applied "
                                   "silently.",
                       epilog="examples:\n  htc labels export --out labels.csv\n"
                              "  htc labels import labels.csv --run-set sample-runs\n"
                              "  htc labels resolve                      # list the pending conflicts\n"
                              "  htc labels resolve --all --keep person  # the person's label wins everywhere\n"
                              "  htc labels resolve --id run-17 --keep file",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    ops = p.add_subparsers(dest="labels_command", metavar="ACTION", required=True)
    for name, func, helptext in (("export", cmd_labels_export, "write the labels as CSV"),
                                 ("import", cmd_labels_import, "add the labels of a file to a run set"),
                                 ("resolve", cmd_labels_resolve, "list the label conflicts, or resolve one or all")):
        q = ops.add_parser(name, help=helptext)
        if name == "resolve":
            q.add_argument("--keep", choices=KEEP, help="which label wins: the file's, the person's, or the newest "
                                                        "(without --keep: list the conflicts)")
            one = q.add_mutually_exclusive_group()
            one.add_argument("--id", metavar="ID", help="resolve the conflict of this run")
            one.add_argument("--all", action="store_true", help="resolve every pending conflict")
        elif name == "import":
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
