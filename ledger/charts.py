"""Server-rendered SVG charts for the report pages (no JavaScript, no chart library).

Floats appear here only: this is the presentation edge.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from ledger.report import REPORT_ARMS

ARM_COLOURS = {"holdout": "#8a8f98", "treatment": "#1f4fa8", "treated": "#6f9be8", "untouched": "#d08a2c"}
LIFT_COLOUR = "#1f4fa8"
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
        _text(left, 16, "Recovery rate within the window per arm, mature cohorts (n = invoices)", weight="bold"),
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
    """Grouped columns per cohort week: failed vs recovered (net of refunds) amounts of the
    invoices that failed that week, in one currency (major units)."""
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
        _text(left, 16, f"Failed vs recovered (net) per failure week ({currency})", weight="bold"),
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


def cohort_lift_chart(weekly: list[dict[str, Any]], *, overall: list[float] | None) -> SafeString:
    """Lift per mature weekly cohort with its 95% interval (whiskers), in percentage points;
    cohorts with a withheld lift (maturing, fewer than 30 per arm) are marked, not drawn."""
    width, height, left, bottom, top = 640, 260, 56, 44, 30
    plot_w, plot_h = width - left - 16, height - top - bottom
    shown = [c for c in weekly if c["in_experiment"]]
    bounds = [v for c in shown if c["lift_ci95_pp"] for v in c["lift_ci95_pp"]] + (overall or [])
    low, high = min([0.0, *bounds]), max([0.0, *bounds])
    if high - low < 10:
        high = low + 10
    def y_of(value: float) -> float:
        return top + plot_h * (high - value) / (high - low)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="Lift per weekly cohort with 95% intervals">',
        _text(left, 16, "Lift per weekly cohort, percentage points (bar: 95% interval)", weight="bold"),
        f'<line x1="{left}" y1="{y_of(0):.1f}" x2="{left + plot_w}" y2="{y_of(0):.1f}" stroke="#999"/>',
        _text(left - 6, y_of(0) + 4, "0", anchor="end", size=10),
        _text(left - 6, top + 10, f"{high:+.0f}", anchor="end", size=10),
        _text(left - 6, top + plot_h, f"{low:+.0f}", anchor="end", size=10),
    ]
    if overall:
        parts.append(f'<rect x="{left}" y="{y_of(overall[1]):.1f}" width="{plot_w}" '
                     f'height="{max(1.0, y_of(overall[0]) - y_of(overall[1])):.1f}" fill="#1f4fa8" '
                     f'fill-opacity="0.08"><title>overall 95% interval {overall[0]} to {overall[1]} pp</title></rect>')
    if not shown:
        parts.append(_text(left + 8, top + plot_h / 2, "no cohorts yet", fill="#666"))
    slot = plot_w / max(1, len(shown))
    for i, cohort in enumerate(shown):
        x = left + i * slot + slot / 2
        lift, ci = cohort["lift_pp"], cohort["lift_ci95_pp"]
        if lift is None:
            why = "maturing" if not cohort["mature"] else "under 30 per arm"
            parts.append(f'<circle cx="{x:.1f}" cy="{y_of(0):.1f}" r="3" fill="none" stroke="#aaa">'
                         f'<title>{escape(cohort["week"])}: lift withheld ({why})</title></circle>')
        else:
            parts.append(f'<line x1="{x:.1f}" y1="{y_of(ci[0]):.1f}" x2="{x:.1f}" y2="{y_of(ci[1]):.1f}" '
                         f'stroke="{LIFT_COLOUR}" stroke-width="2"/>')
            parts.append(f'<circle cx="{x:.1f}" cy="{y_of(lift):.1f}" r="4" fill="{LIFT_COLOUR}">'
                         f'<title>{escape(cohort["week"])}: {lift} pp ({ci[0]} to {ci[1]})</title></circle>')
        if len(shown) <= 12 or i % max(1, len(shown) // 12) == 0:
            parts.append(_text(x, top + plot_h + 14, cohort["week"][5:], anchor="middle", size=10))
    parts.append(_text(left, height - 6, "hollow circle: lift withheld (cohort maturing or under 30 "
                       "invoices per arm); shaded band: the overall interval", size=10, fill="#555"))
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text node above is escaped


def report_charts(report: dict[str, Any]) -> dict[str, Any]:
    currencies = sorted(report["totals"]["amounts"])
    return {
        "rate_chart": recovery_rate_chart(report["arms"]),
        "lift_chart": cohort_lift_chart(report["weekly"], overall=report["attribution"]["lift_ci95_pp"]),
        "weekly_charts": [(code, weekly_amounts_chart(report["weekly"], code)) for code in currencies],
    }
