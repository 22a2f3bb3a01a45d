"""Server-rendered SVG charts for the report pages (no JavaScript, no chart library).

Floats appear here only: this is the presentation edge.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from ledger.selectors import REPORT_ARMS

ARM_COLOURS = {"holdout": "#8a8f98", "treated": "#2f6fdf", "untouched": "#d08a2c"}
FAILED_COLOUR = "#c94a4a"
RECOVERED_COLOUR = "#3a9a5b"


def _text(x: float, y: float, content: str, *, anchor: str = "start", size: int = 12,
          weight: str = "normal", fill: str = "#222") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" '
            f'font-weight="{weight}" fill="{fill}">{escape(content)}</text>')


def recovery_rate_chart(arms: dict[str, dict[str, Any]]) -> SafeString:
    """Horizontal bars: recovery rate per arm, each labelled with its sample size."""
    width, left, bar_h, gap, top = 600, 110, 26, 16, 28
    plot = width - left - 160  # room for the "100.0%  (n of n=N)" label right of a full bar
    height = top + len(REPORT_ARMS) * (bar_h + gap) + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="Recovery rate per arm">',
        _text(left, 16, "Recovery rate per arm (n = invoices in the arm)", weight="bold"),
    ]
    for i, arm in enumerate(REPORT_ARMS):
        data = arms[arm]
        y = top + i * (bar_h + gap)
        parts.append(_text(left - 8, y + bar_h * 0.7, arm, anchor="end"))
        parts.append(f'<rect x="{left}" y="{y}" width="{plot}" height="{bar_h}" fill="#f0f1f3"/>')
        rate = data["recovery_rate"]
        if rate is None:
            parts.append(_text(left + 8, y + bar_h * 0.7, f"no invoices (n={data['count']})",
                               fill="#666"))
            continue
        bar = max(1.0, plot * rate)
        parts.append(f'<rect x="{left}" y="{y}" width="{bar:.1f}" height="{bar_h}" '
                     f'fill="{ARM_COLOURS[arm]}"/>')
        label = f"{rate * 100:.1f}%  ({data['recovered']} of n={data['count']})"
        parts.append(_text(left + bar + 6, y + bar_h * 0.7, label))
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text node above is escaped


def weekly_amounts_chart(weekly: list[dict[str, Any]], currency: str) -> SafeString:
    """Grouped columns per week: failed vs recovered amounts in one currency (major units)."""
    points = []
    for entry in weekly:
        sums = entry["amounts"].get(currency)
        if sums is None:
            continue
        exp = sums["exponent"]
        points.append((entry["week"],
                       float(Decimal(sums["failed_minor"]).scaleb(-exp)), sums["failed"],
                       float(Decimal(sums["recovered_minor"]).scaleb(-exp)), sums["recovered"]))
    width, height, left, bottom, top = 640, 240, 70, 40, 30
    plot_w, plot_h = width - left - 16, height - top - bottom
    peak = max([max(p[1], p[3]) for p in points] or [0.0]) or 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" '
        f'aria-label="Failed and recovered amounts per week in {escape(currency)}">',
        _text(left, 16, f"Failed vs recovered per week ({currency})", weight="bold"),
        f'<rect x="{width - 190}" y="6" width="10" height="10" fill="{FAILED_COLOUR}"/>',
        _text(width - 176, 15, "failed", size=11),
        f'<rect x="{width - 120}" y="6" width="10" height="10" fill="{RECOVERED_COLOUR}"/>',
        _text(width - 106, 15, "recovered", size=11),
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        f'stroke="#999"/>',
        _text(left - 6, top + 10, f"{peak:,.0f}", anchor="end", size=10),
        _text(left - 6, top + plot_h, "0", anchor="end", size=10),
    ]
    if not points:
        parts.append(_text(left + 8, top + plot_h / 2, "no invoices yet", fill="#666"))
    slot = plot_w / max(1, len(points))
    col = max(2.0, min(18.0, slot * 0.35))
    for i, (week, failed, failed_text, recovered, recovered_text) in enumerate(points):
        x = left + i * slot + slot / 2
        bars = ((-col, failed, f"failed {failed_text}", FAILED_COLOUR),
                (0.0, recovered, f"recovered {recovered_text}", RECOVERED_COLOUR))
        for offset, value, label, colour in bars:
            h = plot_h * value / peak
            parts.append(f'<rect x="{x + offset:.1f}" y="{top + plot_h - h:.1f}" width="{col:.1f}" '
                         f'height="{h:.1f}" fill="{colour}"><title>{escape(week)}: '
                         f'{escape(label)} {escape(currency)}</title></rect>')
        if len(points) <= 12 or i % max(1, len(points) // 12) == 0:
            parts.append(_text(x, top + plot_h + 14, week[5:], anchor="middle", size=10))
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text node above is escaped


def report_charts(report: dict[str, Any]) -> dict[str, Any]:
    currencies = sorted(report["totals"]["amounts"])
    return {
        "rate_chart": recovery_rate_chart(report["arms"]),
        "weekly_charts": [(code, weekly_amounts_chart(report["weekly"], code)) for code in currencies],
    }
