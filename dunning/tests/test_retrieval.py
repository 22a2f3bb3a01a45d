"""Playbook retrieval: BM25 by default, FAISS behind the embedder seam (local embedder here)."""

from __future__ import annotations

import numpy as np
import pytest

from dunning import retrieval
from dunning.retrieval import (
    FaissRetriever,
    HashingEmbedder,
    K,
    LexicalRetriever,
    get_retriever,
    parse_playbook,
    playbook,
)


def test_playbook_has_a_few_dozen_passages_with_unique_ids() -> None:
    passages = playbook()
    assert 24 <= len(passages) <= 60
    assert len({p.id for p in passages}) == len(passages)
    assert all(p.text and p.title for p in passages)


def test_parse_playbook_groups_text_under_level_three_headings() -> None:
    parsed = parse_playbook("# Title\nintro\n## Group\n### First one\nline a\nline b\n\n### Second\ntext\n")
    assert [(p.id, p.text) for p in parsed] == [("first-one", "line a line b"), ("second", "text")]


def test_lexical_retriever_returns_k_relevant_passages() -> None:
    found = LexicalRetriever(playbook()).search("card_expired request_card_update")
    assert len(found) == K
    assert found[0].id == "expired-cards-are-routine"
    found = LexicalRetriever(playbook()).search("direct_debit_not_retried request_manual_payment")
    assert found[0].id == "direct-debits-that-were-returned"


def test_hashing_embedder_is_deterministic() -> None:
    a = HashingEmbedder().embed(["insufficient funds retry"])
    b = HashingEmbedder().embed(["insufficient funds retry"])
    assert a.shape == (1, 256) and np.array_equal(a, b) and np.any(a)


def test_faiss_retriever_runs_a_real_index_with_the_local_embedder() -> None:
    retriever = FaissRetriever(playbook(), HashingEmbedder())
    found = retriever.search("insufficient funds retry after a top-up")
    assert len(found) == K
    assert found[0].id == "retry-insufficient-funds-after-a-likely-top-up"
    # The same passage text as a query finds itself first.
    target = playbook()[7]
    assert retriever.search(f"{target.title}. {target.text}")[0] == target


def test_faiss_retriever_embeds_each_distinct_query_once() -> None:
    calls: list[int] = []

    class Counting(HashingEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            calls.append(len(texts))
            return super().embed(texts)

    retriever = FaissRetriever(playbook(), Counting())
    retriever.search("card expired")
    retriever.search("card expired")
    assert calls == [len(playbook()), 1]


@pytest.fixture
def fresh_retriever():  # type: ignore[no-untyped-def]
    retrieval.reset_retriever()
    yield
    retrieval.reset_retriever()


def test_default_is_lexical_without_a_key(settings, fresh_retriever) -> None:  # type: ignore[no-untyped-def]
    settings.OPENAI_API_KEY = ""
    assert get_retriever().kind == "bm25"


def test_a_key_selects_faiss_through_the_embedder_seam(settings, fresh_retriever, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    settings.OPENAI_API_KEY = "sk-test-not-used"
    built: list[str] = []

    def fake_build():  # type: ignore[no-untyped-def]
        built.append("embedder")
        return HashingEmbedder()

    monkeypatch.setattr(retrieval, "build_embedder", fake_build)
    retriever = get_retriever()
    assert retriever.kind == "faiss" and built == ["embedder"]
    assert get_retriever() is retriever  # built once per process
