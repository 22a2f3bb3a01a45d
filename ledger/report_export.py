"""The recovery report as one CSV: a section column (arm, currency, attribution, cohort), amounts in minor units."""

from __future__ import annotations

import csv
import io
from typing import Any

CSV_COLUMNS = ("section", "week", "arm", "currency", "invoices", "recovered", "recovery_rate",
               "lift_pp", "lift_ci95_low_pp", "lift_ci95_high_pp", "failed_minor", "recovered_minor",
               "refunded_minor", "attributable_minor", "attributable_ci95_low_minor",
               "attributable_ci95_high_minor", "median_hours_to_recovery", "p90_hours_to_recovery")


def report_csv(report: dict[str, Any]) -> str:
    """The report as one CSV: a `section` column (arm, currency, attribution, cohort) and
    amounts in minor units, one currency per row."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, restval="", lineterminator="\n")
    writer.writeheader()
    for arm, data in report["arms"].items():
        writer.writerow({"section": "arm", "arm": arm, "invoices": data["count"], "recovered": data["recovered"],
                         "recovery_rate": data["recovery_rate"],
                         "median_hours_to_recovery": data["median_hours_to_recovery"],
                         "p90_hours_to_recovery": data["p90_hours_to_recovery"]})
        for code, sums in data["amounts"].items():
            writer.writerow({"section": "currency", "arm": arm, "currency": code,
                             "failed_minor": sums["failed_minor"], "recovered_minor": sums["recovered_minor"],
                             "refunded_minor": sums["refunded_minor"]})
    attribution = report["attribution"]
    ci = attribution["lift_ci95_pp"] or ["", ""]
    writer.writerow({"section": "attribution", "arm": "treatment-holdout", "lift_pp": attribution["lift_pp"],
                     "lift_ci95_low_pp": ci[0], "lift_ci95_high_pp": ci[1],
                     "invoices": attribution["treatment_count"] + attribution["holdout_count"]})
    for code, value in (attribution["recovered_attributable"] or {}).items():
        writer.writerow({"section": "attribution", "arm": "treatment-holdout", "currency": code,
                         "failed_minor": value["treatment_failed_minor"], "attributable_minor": value["minor"],
                         "attributable_ci95_low_minor": value["ci95_minor"][0],
                         "attributable_ci95_high_minor": value["ci95_minor"][1]})
    for cohort in report["weekly"]:
        ci = cohort["lift_ci95_pp"] or ["", ""]
        for arm, data in cohort["arms"].items():
            writer.writerow({"section": "cohort", "week": cohort["week"], "arm": arm, "invoices": data["count"],
                             "recovered": data["recovered"]})
        writer.writerow({"section": "cohort", "week": cohort["week"], "arm": "treatment-holdout",
                         "lift_pp": cohort["lift_pp"], "lift_ci95_low_pp": ci[0], "lift_ci95_high_pp": ci[1]})
        for code, sums in cohort["amounts"].items():
            writer.writerow({"section": "cohort", "week": cohort["week"], "currency": code,
                             "failed_minor": sums["failed_minor"], "recovered_minor": sums["recovered_minor"],
                             "refunded_minor": sums["refunded_minor"]})
    return out.getvalue()
