"""Fixtures for dunning tests: clean model seams and a fake chat client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dunning import llm, retrieval
from dunning.tests.fakes import FakeChat


@pytest.fixture(autouse=True)
def _fresh_seams() -> Iterator[None]:
    """Each test starts with no cached chat client or retriever."""
    llm.reset_chat_client()
    retrieval.reset_retriever()
    yield
    llm.reset_chat_client()
    retrieval.reset_retriever()


@pytest.fixture
def llm_on(settings, monkeypatch) -> Callable[[Callable[[str, str], str]], FakeChat]:  # type: ignore[no-untyped-def]
    """Switch LLM drafting on with a fake client at the one seam; returns the fake."""

    def _on(respond: Callable[[str, str], str]) -> FakeChat:
        settings.PAYPILOT_LLM_DRAFT = True
        settings.OPENAI_API_KEY = "sk-test-key-not-real-000000"
        fake = FakeChat(respond)
        monkeypatch.setattr(llm, "build_chat_client", lambda: fake)
        # A key also selects FAISS retrieval: keep it offline with the local embedder.
        monkeypatch.setattr(retrieval, "build_embedder", lambda: retrieval.HashingEmbedder())
        return fake

    return _on


def json_reply(**fields: Any) -> str:
    import json

    return json.dumps(fields)
