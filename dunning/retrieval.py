"""Playbook retrieval (k=3): BM25 by default, a FAISS index when an embedder is configured.

The embedder is one seam: `OpenAIEmbedder` (OpenAI embeddings, `OPENAI_BASE_URL` for
compatible servers) when `OPENAI_API_KEY` is set, otherwise no embedder and the lexical
retriever. `HashingEmbedder` is a deterministic local embedder behind the same seam, used by
the tests and the benchmark so the FAISS path is real code under test. Query results are
cached per process: the queries come from a small fixed vocabulary (code, risk, action).
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings

PLAYBOOK_PATH = Path(__file__).resolve().parent / "playbook.md"
K = 3
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "a an and are as at be by for from has have in is it its not of on or so that the this "
    "to was we when will with you your they their them our do does".split()
)


@dataclass(frozen=True)
class Passage:
    id: str  # slug of the heading, stable while the heading is unchanged
    title: str
    text: str


def tokenize(text: str) -> list[str]:
    words = _WORD.findall(text.lower().replace("_", " "))
    return [w for w in words if w not in _STOP]


def parse_playbook(markdown: str) -> tuple[Passage, ...]:
    """One passage per `###` heading, its text the paragraph lines that follow."""
    passages: list[Passage] = []
    title: str | None = None
    lines: list[str] = []

    def flush() -> None:
        if title is not None and lines:
            slug = "-".join(_WORD.findall(title.lower()))
            passages.append(Passage(id=slug, title=title, text=" ".join(lines)))

    for raw in markdown.splitlines():
        line = raw.strip()
        if line.startswith("#"):
            flush()
            title, lines = (line[4:].strip(), []) if line.startswith("### ") else (None, [])
        elif line and title is not None:
            lines.append(line)
    flush()
    return tuple(passages)


@lru_cache(maxsize=1)
def playbook() -> tuple[Passage, ...]:
    return parse_playbook(PLAYBOOK_PATH.read_text(encoding="utf-8"))


class Retriever(Protocol):
    kind: str

    def search(self, query: str, k: int = K) -> tuple[Passage, ...]: ...


class LexicalRetriever:
    """BM25 (rank-bm25's Okapi) over title + text of each passage."""

    kind = "bm25"

    def __init__(self, passages: Sequence[Passage]) -> None:
        from rank_bm25 import BM25Okapi

        self._passages = tuple(passages)
        self._bm25 = BM25Okapi([tokenize(f"{p.title} {p.text}") for p in self._passages])
        self._cached = lru_cache(maxsize=256)(self._search)

    def _search(self, query: str, k: int) -> tuple[Passage, ...]:
        scores = self._bm25.get_scores(tokenize(query))
        # Stable order on ties: score, then position in the playbook.
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return tuple(self._passages[i] for i in order[:k])

    def search(self, query: str, k: int = K) -> tuple[Passage, ...]:
        return self._cached(query, k)


class Embedder(Protocol):
    model: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class HashingEmbedder:
    """Deterministic local embedder: signed feature hashing of words and word pairs."""

    model = "local-hashing-256"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype="float32")
        for row, text in enumerate(texts):
            words = tokenize(text)
            for feature in words + [f"{a}_{b}" for a, b in zip(words, words[1:], strict=False)]:
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dim
                out[row, bucket] += 1.0 if digest[4] & 1 else -1.0
        return out


class OpenAIEmbedder:
    """OpenAI (or compatible, via OPENAI_BASE_URL) embeddings; built only when a key is set."""

    def __init__(self, *, api_key: str, base_url: str = "", model: str) -> None:
        from openai import OpenAI

        self.model = model
        self._client = OpenAI(api_key=api_key, base_url=base_url or None, timeout=10.0, max_retries=1)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        response = self._client.embeddings.create(model=self.model, input=list(texts))
        return np.asarray([item.embedding for item in response.data], dtype="float32")


class FaissRetriever:
    """Inner-product FAISS index over L2-normalised passage embeddings (cosine similarity)."""

    kind = "faiss"

    def __init__(self, passages: Sequence[Passage], embedder: Embedder) -> None:
        import faiss

        self._passages = tuple(passages)
        self._embedder = embedder
        vectors = self._normalise(embedder.embed([f"{p.title}. {p.text}" for p in self._passages]))
        self._index = faiss.IndexFlatIP(vectors.shape[1])
        self._index.add(vectors)
        self._cached = lru_cache(maxsize=256)(self._search)

    @staticmethod
    def _normalise(vectors: np.ndarray) -> np.ndarray:
        vectors = np.ascontiguousarray(vectors, dtype="float32")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return vectors / norms

    def _search(self, query: str, k: int) -> tuple[Passage, ...]:
        vector = self._normalise(self._embedder.embed([query]))
        _, ids = self._index.search(vector, min(k, len(self._passages)))
        return tuple(self._passages[i] for i in ids[0] if i >= 0)

    def search(self, query: str, k: int = K) -> tuple[Passage, ...]:
        return self._cached(query, k)


def build_embedder() -> Embedder | None:
    """The configured embedder, or None (lexical retrieval) when no key is set."""
    if not settings.OPENAI_API_KEY:
        return None
    return OpenAIEmbedder(api_key=settings.OPENAI_API_KEY, base_url=settings.OPENAI_BASE_URL,
                          model=settings.PAYPILOT_EMBEDDING_MODEL)


_lock = threading.Lock()
_retriever: Retriever | None = None


def get_retriever() -> Retriever:
    """The process-wide retriever, built once on first use (the index cost is paid once)."""
    global _retriever
    if _retriever is None:
        with _lock:
            if _retriever is None:
                embedder = build_embedder()
                _retriever = (
                    FaissRetriever(playbook(), embedder) if embedder is not None
                    else LexicalRetriever(playbook())
                )
    return _retriever


def reset_retriever() -> None:
    """Forget the process-wide retriever (settings changed, or a test swapped the seam)."""
    global _retriever
    with _lock:
        _retriever = None
