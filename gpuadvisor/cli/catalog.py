"""``catalog export|import`` and ``prices import``: the user's own catalog, from files and price lists."""

from __future__ import annotations

import argparse
import datetime
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..core.errors import InputError
from ..core.formats.catalog_exchange import export_text, import_file
from ..core.formats.instance_import import price_list_instance_types
from ..core.formats.pricelists import (
    PriceImport,
    PriceStats,
    format_price,
    merge_price_imports,
    price_update_rows,
    read_price_list,
)
from ..core.formats.user_catalog import build_catalogs, bundled_meta, bundled_rows, diff, merge
from ..core.presentation.text import text_table
from ..storage import atomic_write_text, backup_path, load_user_catalog, user_catalog_file
from ..storage.instances_store import save_imported_instances
from ..storage.user_catalog_store import UserCatalogEdit, editing_user_catalog
from .common import EXIT_REJECTED_ROWS, _warn


def _effective_rows(kind: str, use_user: bool) -> tuple[list[dict[str, str]], bool]:
    """The table of ``kind`` as the catalog editor shows it, and whether it holds user edits."""
    if not use_user:
        return bundled_rows(kind), False
    loaded = load_user_catalog()
    edits = loaded.catalog.edits(kind)
    rows, warnings = merge(kind, edits)
    _warn(loaded.warnings + warnings)
    return [r.row for r in rows], not edits.is_empty


def _format_for(path: str, given: str | None) -> str:
    return given or ("json" if path.lower().endswith(".json") else "csv")


def cmd_catalog_export(args: argparse.Namespace) -> int:
    rows, edited = _effective_rows(args.kind, not args.no_user_catalog)
    fmt = _format_for(args.output, args.format)
    updated = datetime.date.today().isoformat() if edited else bundled_meta(args.kind).updated
    path = atomic_write_text(args.output, export_text(args.kind, rows, fmt, updated))
    if args.json:
        print(
            json.dumps(
                {
                    "kind": args.kind,
                    "file": str(path),
                    "format": fmt,
                    "rows": len(rows),
                    "user_edits": edited,
                },
                indent=2,
            )
        )
    else:
        print(f"{path}: {len(rows)} {args.kind} rows ({fmt}{', with your edits' if edited else ''})")
    return 0


def cmd_catalog_import(args: argparse.Namespace) -> int:
    if args.no_user_catalog:
        raise InputError(
            "--no-user-catalog", "cannot be used with catalog import, which changes your user catalog"
        )
    # The lock is held from the read to the write: an import running at the same moment waits
    # and then applies its rows to this one's result, so neither is lost.
    with editing_user_catalog() as edit:
        loaded = edit.loaded
        rows, warnings = merge(args.kind, loaded.catalog.edits(args.kind))
        _warn(loaded.warnings + warnings)
        before = [r.row for r in rows]
        report = import_file(args.kind, args.file, before, fmt=args.format)
        saved = _save_rows(edit, args.kind, report.rows, report.changed, args.dry_run)
    if args.json:
        data = report.to_dict()
        data.update(dry_run=args.dry_run, saved=str(saved) if saved else None)
        print(json.dumps(data, indent=2))
    else:
        print(report.details(before))
        _say_saved(saved, args.dry_run)
    return EXIT_REJECTED_ROWS if report.rejected else 0


def _save_rows(
    edit: UserCatalogEdit, kind: str, rows: Sequence[Mapping[str, str]], changed: bool, dry_run: bool
) -> Path | None:
    """Save ``rows`` as the user's edits of ``kind`` (unless nothing changed or it is a dry run)."""
    if not changed or dry_run:
        return None
    return edit.save(edit.loaded.catalog.with_edits(kind, diff(kind, rows)))


def _say_saved(saved: Path | None, dry_run: bool) -> None:
    if dry_run:
        print("Dry run: your catalog was not changed.")
    elif saved:
        kept = " (the previous version is kept as .bak)" if backup_path(saved).exists() else ""
        print(f"Saved to {saved}{kept}.")
    else:
        print(f"Nothing to change in {user_catalog_file()}.")


# --- prices import ------------------------------------------------------------------------------


def _stats_dict(stats: PriceStats | None) -> dict[str, float | int] | None:
    if stats is None:
        return None
    return {
        "low": round(stats.low, 4),
        "median": round(stats.median, 4),
        "high": round(stats.high, 4),
        "count": stats.count,
    }


def _prices_to_dict(
    merged: PriceImport,
    files: list[str],
    updates: list[tuple[str, dict[str, str]]],
    dry_run: bool,
    saved: Path | None,
) -> dict[str, object]:
    return {
        "files": files,
        "provider": merged.provider,
        "format": merged.format,
        "as_of": merged.as_of,
        "rows_read": merged.rows_read,
        "skipped_no_gpu": merged.skipped_no_gpu,
        "matched": [
            {
                "gpu": s.gpu_id,
                "on_demand": _stats_dict(s.on_demand),
                "spot": _stats_dict(s.spot),
                "offers": s.offers,
                "providers": list(s.providers),
                "regions": s.regions,
                "names": list(s.names),
            }
            for s in merged.prices.values()
        ],
        "unmatched": [
            {"name": name, "rows": count, "reason": merged.unmatched_reasons.get(name, "")}
            for name, count in sorted(merged.unmatched.items())
        ],
        "assumptions": [{"name": name, "assumption": note} for name, note in merged.assumptions.items()],
        "rejected": [{"line": line, "reason": why} for line, why in merged.rejected],
        "updated": [{"gpu": gpu_id, "columns": cells} for gpu_id, cells in updates],
        "dry_run": dry_run,
        "saved": str(saved) if saved else None,
    }


def _render_prices(merged: PriceImport, updates: list[tuple[str, dict[str, str]]]) -> str:
    lines = [
        f"{merged.origin}: {merged.format} price list{'s' if ',' in merged.origin else ''} from "
        f"{merged.provider}, as of {merged.as_of}: {merged.rows_read} rows read, {len(merged.offers)} offers, "
        f"{merged.skipped_no_gpu} rows without GPUs skipped.",
        "",
    ]
    if merged.prices:
        rows = []
        for s in merged.prices.values():
            od = s.on_demand
            spot = s.spot
            rows.append(
                [
                    s.gpu_id,
                    format_price(od.low) if od else "-",
                    format_price(od.median) if od else "-",
                    format_price(od.high) if od else "-",
                    f"{format_price(spot.low)}-{format_price(spot.high)}" if spot else "-",
                    str(s.offers),
                    ", ".join(s.providers),
                    str(s.regions),
                ]
            )
        lines.append(
            f"Matched {len(rows)} catalog GPUs (USD per GPU-hour; the catalog takes on-demand prices):"
        )
        lines.append(
            text_table(
                rows,
                ["GPU", "low", "median", "high", "spot", "offers", "providers", "regions"],
                right={1, 2, 3, 4, 5, 7},
            )
        )
    else:
        lines.append("No GPU of the price list matched a catalog GPU.")
    for note in merged.assumptions.values():
        lines.append(f"Assumed: {note}")
    if merged.unmatched:
        lines.append("")
        lines.append(f"Unmatched GPU names ({len(merged.unmatched)}):")
        for name, count in sorted(merged.unmatched.items(), key=lambda kv: (-kv[1], kv[0])):
            why = merged.unmatched_reasons.get(name, "")
            lines.append(f"  {name}: {count} row{'s' if count != 1 else ''}" + (f" ({why})" if why else ""))
    if merged.rejected:
        lines.append("")
        lines.append(f"Rejected lines ({len(merged.rejected)}):")
        for line, why in merged.rejected:
            lines.append(f"  line {line}: {why}")
    lines.append("")
    if updates:
        lines.append(f"Catalog rows updated: {len(updates)} ({', '.join(gpu_id for gpu_id, _ in updates)}).")
    else:
        lines.append("No catalog row to update (no on-demand price for a catalog GPU).")
    return "\n".join(lines)


def cmd_prices_import(args: argparse.Namespace) -> int:
    if args.no_user_catalog:
        raise InputError(
            "--no-user-catalog", "cannot be used with prices import, which changes your user catalog"
        )
    with editing_user_catalog() as edit:
        loaded = edit.loaded
        merged_rows, warnings = merge("gpus", loaded.catalog.edits("gpus"))
        try:
            gpus, _models, build_warnings = build_catalogs(loaded.catalog)
        except InputError as exc:
            raise InputError("user catalog", f"cannot be used to match GPU names ({exc})") from None
        _warn(list(dict.fromkeys(loaded.warnings + warnings + build_warnings)))
        table = [dict(r.row) for r in merged_rows]
        # Every file is read before anything is saved: one unusable file changes nothing.
        imports = [read_price_list(f, gpus, provider=args.provider) for f in args.files]
        merged = merge_price_imports(imports)
        updates = price_update_rows(merged, table)
        by_id = dict(updates)
        new_rows = [{**row, **by_id.get(row.get("id", ""), {})} for row in table]
        changed = new_rows != table
        saved = _save_rows(edit, "gpus", new_rows, changed, args.dry_run)
    # The instance types the lists hold: where to rent each GPU (replacing those providers' rows).
    types = [
        t for f, imp in zip(args.files, imports, strict=True) for t in price_list_instance_types(f, imp, gpus)
    ]
    instances_saved = None
    if types and not args.dry_run:
        instances_saved = save_imported_instances(types, merged.as_of).path
    if args.json:
        data = _prices_to_dict(merged, list(args.files), updates, args.dry_run, saved)
        data["instance_types"] = [t.row() for t in types]
        data["instances_saved"] = str(instances_saved) if instances_saved else None
        print(json.dumps(data, indent=2))
    else:
        print(_render_prices(merged, updates))
        providers = sorted({t.provider for t in types})
        if types:
            print(
                f"Cloud instance types: {len(types)} from {', '.join(providers)}"
                + (f", saved to {instances_saved}." if instances_saved else " (dry run: not saved).")
            )
        else:
            print("Cloud instance types: none (no offer names a whole-GPU instance).")
        _say_saved(saved, args.dry_run)
    return EXIT_REJECTED_ROWS if merged.rejected else 0


# --- measured runs ---------------------------------------------------------------------------------

#: Measurement fields as the ``measure add`` options that set them (for error messages).
