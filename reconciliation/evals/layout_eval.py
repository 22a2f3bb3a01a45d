"""The shop-export corpus scored: each header set suggested and compared with its expected mapping.

`layouts/` holds order exports in the layouts of the common shop platforms (Shopify,
WooCommerce in four languages, Magento, BigCommerce, Shopware, PrestaShop, a shop storing
Mollie ids), a few sample rows each, and `<name>.expected.json`: the columns a person maps
for the required fields and the payment reference, the date format (null with `ambiguous`
when the values fit day-first and month-first alike) and the decimal separator. Where it
has `orders`, the whole file imported through the suggested layout must give exactly those
orders and totals (exports with a row per line item; their `preview_rows` count orders).
The sources of the platforms' headers are in `reconciliation/shop_headers.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reconciliation.formats import FileRefused, LayoutSpec, parse_with_layout
from reconciliation.layouts import layout_suggest

LAYOUTS_DIR = Path(__file__).resolve().parent / "layouts"


def layout_cases() -> list[tuple[Path, dict[str, Any]]]:
    return [(path, json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8")))
            for path in sorted(LAYOUTS_DIR.glob("*.csv")) if path.with_suffix(".expected.json").exists()]


def layout_case_check(path: Path, expected: dict[str, Any]) -> dict[str, Any]:
    """What the suggestion got wrong for one export: {} when everything expected is right."""
    suggestion = layout_suggest(kind=expected["kind"], text=path.read_text(encoding="utf-8"))
    wrong: dict[str, Any] = {}
    for name, header in expected["columns"].items():
        if suggestion["columns"].get(name) != header:
            wrong[name] = {"expected": header, "got": suggestion["columns"].get(name)}
    for key in ("date_format", "decimal_separator"):
        if suggestion[key] != expected[key]:
            wrong[key] = {"expected": expected[key], "got": suggestion[key]}
    if expected.get("ambiguous") and not any("ambiguous" in note for note in suggestion["notes"]):
        wrong["ambiguous"] = {"expected": "a note saying the dates are ambiguous", "got": suggestion["notes"]}
    rows = sum(1 for line in path.read_text(encoding="utf-8").splitlines()[1:] if line.strip())
    # An export with a row per line item previews its orders, not its rows.
    previewed = expected.get("preview_rows", min(rows, 5))
    if expected["date_format"] and len(suggestion["preview"]) != previewed:
        wrong["preview"] = {"expected": previewed, "got": len(suggestion["preview"]), "notes": suggestion["notes"]}
    if "orders" in expected and not wrong:
        # The whole file imported through the suggested layout: one row per order, its total.
        spec = LayoutSpec(columns=suggestion["columns"], date_format=suggestion["date_format"],
                          decimal_separator=suggestion["decimal_separator"], delimiter=suggestion["delimiter"])
        try:
            parsed = parse_with_layout(path.read_text(encoding="utf-8"), kind=expected["kind"], spec=spec)
            got = {row["order_id"]: row["amount_minor"] for row in parsed.rows}
        except FileRefused as exc:
            got = {"refused": f"line {exc.line}: {exc.message}"}
        if got != expected["orders"]:
            wrong["orders"] = {"expected": expected["orders"], "got": got}
    return wrong
