"""Every case of the eval set passes (expectations written by hand from each case)."""

from __future__ import annotations

import pytest

from reconciliation.evals.runner import eval_case_run, eval_cases

pytestmark = pytest.mark.django_db

CASES = eval_cases()


def test_the_eval_set_covers_the_cases_that_catch_people_out() -> None:
    assert {c["name"] for c in CASES} >= {"partial_captures", "refunds_netted_from_payouts", "payouts_batching_days",
                                          "payout_split_two_lines", "multi_currency_rounding",
                                          "second_provider_layout"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_eval_case(case) -> None:
    outcome = eval_case_run(case)
    assert outcome["got"] == outcome["expected"], outcome["catches"]
