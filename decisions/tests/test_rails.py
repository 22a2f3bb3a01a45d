"""The bank-rail registry: ACH rows and fall-through, load-time consistency, SEPA and Bacs."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from decisions import rails
from decisions.rails import ach, bacs, sepa
from decisions.rails.base import DATA_DIR, RailTableError

ACH_CSV = (DATA_DIR / "ach_return_codes.csv").read_text(encoding="utf-8")
ROWS = json.loads((DATA_DIR / "ach_decision_rows.json").read_text(encoding="utf-8"))
SHAPE_KEYS = {"rail", "code", "matched", "row", "goes_again", "what_has_to_change_first", "person_acts_first",
              "customer_wording", "meaning", "reason", "family", "family_stated", "special_rules", "disputed",
              "sources", "source_quality"}


def test_ach_has_17_codes_on_five_rows() -> None:
    listing = rails.list_decisions("ach")
    codes = {row["row"]: row["codes"] for row in listing["rows"]}
    assert codes == {1: ["R01", "R09"], 2: ["R02", "R03", "R04", "R13", "R20", "R28"], 3: ["R08"], 4: ["R11"],
                     5: ["R05", "R07", "R10", "R14", "R15", "R16", "R29"]}
    assert sum(len(c) for c in codes.values()) == 17


def test_person_acts_first_only_on_row_5() -> None:
    for row in rails.list_decisions("ach")["rows"]:
        assert row["person_acts_first"] is (row["row"] == 5)


def test_r11_is_the_only_stated_family() -> None:
    table = rails.rail_get("ach")
    stated = {code: e.family for code, e in table.entries.items() if e.family}
    assert stated == {"R11": "unauthorized"}
    r11 = rails.lookup("R11")
    assert r11["row"] == 4 and r11["goes_again"] == "corrected_only" and "correctable" in r11["reason"]
    assert rails.lookup("R05")["family"] is None


@pytest.mark.parametrize(("code", "shaped"), [("R99", True), ("R00", True), ("r12", True), ("X1", False), ("", False)])
def test_unlisted_codes_fall_to_row_5_never_row_1(code: str, shaped: bool) -> None:
    answer = rails.lookup(code)
    assert answer["row"] == 5 and answer["matched"] is False
    assert answer["reason"].startswith("fell through") and answer["code_shaped"] is shaped
    assert answer["person_acts_first"] is True


def test_r01_and_r09_carry_the_reinitiation_limit() -> None:
    assert any("two times" in r for r in rails.lookup("R01")["special_rules"])
    assert any("180 days" in r for r in rails.lookup("R09")["special_rules"])
    assert rails.lookup("R02")["special_rules"] == []


def test_lookup_normalizes_case_and_space() -> None:
    assert rails.lookup(" r11 ")["row"] == 4


def _mutated_csv(old: str, new: str) -> str:
    assert old in ACH_CSV
    return ACH_CSV.replace(old, new)


@pytest.mark.parametrize(
    ("csv_text", "rows", "message"),
    [
        (ACH_CSV + "R01,1,yes,nothing\n", ROWS, "duplicate"),
        (_mutated_csv("DEFAULT,5,no,nothing will\n", ""), ROWS, "DEFAULT row is missing"),
        (_mutated_csv("DEFAULT,5,no,nothing will", "DEFAULT,1,yes,nothing"), ROWS, "DEFAULT must sit on row 5"),
        (_mutated_csv("R08,3,not_until_they_ask", "R08,3,yes"), ROWS, "disagrees with row"),
        (_mutated_csv("R29,5", "Q29,5"), ROWS, "not shaped"),
        (_mutated_csv("R29,5,no,nothing will\n", ""), ROWS, "disagree"),
    ],
)
def test_ach_refuses_inconsistent_tables(csv_text: str, rows: dict, message: str) -> None:
    with pytest.raises(RailTableError, match=message):
        ach.load(csv_text, rows)


def test_ach_refuses_inconsistent_rows_json() -> None:
    moved = copy.deepcopy(ROWS)
    moved["PERSON_REQUIRED_ROWS"] = [4, 5]
    with pytest.raises(RailTableError, match="fallback row"):
        ach.load(ACH_CSV, moved)
    family = copy.deepcopy(ROWS)
    family["FAMILY_STATED"]["R77"] = "made up"
    with pytest.raises(RailTableError, match="family"):
        ach.load(ACH_CSV, family)
    count = copy.deepcopy(ROWS)
    count["codes_listed"] = 18
    with pytest.raises(RailTableError, match="18 expected"):
        ach.load(ACH_CSV, count)


def test_every_rail_answers_in_the_same_shape() -> None:
    for rail, code in (("ach", "R01"), ("sepa", "AM04"), ("bacs", "ARUDD-0"), ("ach", "R99"), ("sepa", "ZZ99"),
                       ("bacs", "ARUDD-Z")):
        assert SHAPE_KEYS <= set(rails.lookup(code, rail)), (rail, code)


def test_unknown_rail_is_refused() -> None:
    with pytest.raises(rails.UnknownRail):
        rails.lookup("R01", "swift")


def test_sepa_table_and_special_rules() -> None:
    table = rails.rail_get("sepa")
    assert len(table.entries) == 31
    md06 = rails.lookup("MD06", "sepa")
    assert md06["row"] == 3 and any("8 weeks" in r for r in md06["special_rules"])
    assert md06["r_transaction_types"] == ["refund"]
    assert any("13 months" in r for r in rails.lookup("MD01", "sepa")["special_rules"])
    assert rails.lookup("AM04", "sepa")["row"] == 1
    assert rails.lookup("DUPL", "sepa")["kind"] == "cancellation"


def test_sepa_disputed_rows_are_decided_with_a_reason() -> None:
    for code in sepa.DISPUTED_DECISIONS:
        answer = rails.lookup(code, "sepa")
        assert answer["disputed"] and answer["row"] == sepa.DISPUTED_DECISIONS[code][0]


def test_sepa_refuses_an_undecided_disputed_row() -> None:
    text = (DATA_DIR / "sepa_reason_codes.csv").read_text(encoding="utf-8")
    extra = 'ZZ01,Made up.,reject,Nobody,2,Because.,ISO-SR,"Disputed row: maybe 5."\n'
    with pytest.raises(RailTableError, match="disputed"):
        sepa.load(text + extra)


def test_bacs_answers_carry_source_quality() -> None:
    for code in ("ARUDD-0", "0", "ADDACS-C", "AUDDIS:1", "ARUDD-Z"):
        answer = rails.lookup(code, "bacs")
        assert answer["source_quality"] == "secondary_sources_only"
    assert rails.lookup("0", "bacs")["code"] == "ARUDD-0"
    assert rails.lookup("ARUDD-0", "bacs")["publishers_agreeing"] == 6


def test_bacs_instruction_cancelled_aligns_with_ach_r07() -> None:
    r07 = rails.lookup("R07", "ach")
    for code in ("ARUDD-1", "ADDACS-1", "AUDDIS-1"):
        answer = rails.lookup(code, "bacs")
        assert answer["row"] == r07["row"] == 5
        assert "R07" in answer["disputed"]


def test_bacs_codes_repeat_across_reports_without_clashing() -> None:
    assert rails.lookup("ARUDD-0", "bacs")["row"] == 1
    assert rails.lookup("ADDACS-0", "bacs")["row"] == 2


def test_facts_copies_match_the_shared_facts() -> None:
    facts = Path(__file__).resolve().parents[3] / "shared" / "facts"
    if not facts.exists():
        pytest.skip("the shared facts directory is not present")
    for name in ("ach_return_codes.csv", "ach_decision_rows.json", "bacs_arudd_codes.csv"):
        assert (DATA_DIR / name).read_text(encoding="utf-8") == (facts / name).read_text(encoding="utf-8")
    assert bacs.load((facts / "bacs_arudd_codes.csv").read_text(encoding="utf-8")).entries


def test_the_reinitiation_limit_cites_the_rulebook_and_the_public_summaries() -> None:
    answer = rails.lookup("R01")
    assert any("2.12.4" in rule for rule in answer["special_rules"])
    assert "original product" not in " ".join(answer["special_rules"])
    assert any("epcor.org" in source for source in answer["sources"])
    assert not any("epcor.org" in source for source in rails.lookup("R02")["sources"])


def test_codes_with_their_own_customer_wording() -> None:
    r01, r09 = rails.lookup("R01")["customer_wording"], rails.lookup("R09")["customer_wording"]
    assert r01 != r09 and "cleared" in r09
    for code in ("R04", "R13", "R28"):
        assert "confirm" in rails.lookup(code)["customer_wording"].lower()
    assert rails.lookup("R02")["customer_wording"] == rails.list_decisions("ach")["rows"][1]["customer_wording"]
