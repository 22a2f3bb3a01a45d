"""operations.matching: identifiers found as whole tokens in one pass, however many there are."""

from __future__ import annotations

from operations.matching import IdentifierMatcher, TermMatcher


def test_whole_tokens_only_and_never_inside_a_decimal():
    matcher = IdentifierMatcher({"in_12", "1001", "invoice:in_77", "cus_A"})
    text = "in_12 in_123 xin_12 total 1001.50 order 1001, /v1/invoices/in_12/lines invoice:in_77 cus_A"
    found = [text[s:e] for s, e in matcher.spans(text)]
    assert found == ["in_12", "1001", "in_12", "invoice:in_77", "cus_A"]
    assert matcher.sub("a in_12 b", lambda i: f"<{i}>") == "a <in_12> b"
    assert not matcher.search("in_123 and 1001.50")


def test_thousands_of_identifiers_and_the_batch_check():
    ids = {f"in_cus_long_{n:06d}" for n in range(5000)}
    matcher = IdentifierMatcher(ids)
    assert matcher.search('{"id":"in_cus_long_004321","x":1}')
    assert not matcher.search("in_cus_long_0043210 in_cus_long_04321")
    batch = "\x00".join(f"in_other_{n:07d}\nhttps://invoice.example/i/{n}" for n in range(10000))
    assert matcher.keys_in(batch) == frozenset()  # nothing to check row by row
    assert matcher.keys_in(batch + "\x00see in_cus_long_000007") == {"000007"}


def test_odd_identifiers_fall_back_to_a_pattern():
    matcher = IdentifierMatcher({"_weird_", "ok_1"})
    assert matcher.keys_in("anything") == frozenset()
    assert matcher.keys_in("a _weird_ b") == {"weird"}
    assert list(matcher.spans("a _weird_ b ok_1")) == [(2, 9), (12, 16)]
    assert IdentifierMatcher({"-_-_"}).keys_in("anything") is None  # no key: every text is checked


def test_terms_are_case_insensitive_substrings():
    assert TermMatcher({"Renée Dupont"}).search("note: RENÉE DUPONT called")
    assert not TermMatcher(set()).search("anything")
