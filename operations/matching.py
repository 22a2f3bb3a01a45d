"""Finding a data subject's identifiers and words inside stored text in time linear in the text.

A long-standing customer has thousands of identifiers (one per invoice, per send...). One
regular expression alternating all of them (or one SQL term per identifier) costs a pass per
identifier; here a text is cut once into its runs of letters and digits, and every span of up
to `max_runs` consecutive runs is looked up in a set. An identifier matches as a whole token:
not inside a longer run of letters and digits (`in_12` never matches inside `in_123`), and
not inside a decimal number (a numeric order id `1001` leaves the amount `1001.50` alone).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

_RUN = re.compile(r"[A-Za-z0-9]+")
_ALNUM = re.compile(r"[A-Za-z0-9]")
# bytes -> themselves for ASCII letters and digits, a space for everything else
_RUN_BYTES = bytes(c if chr(c).isascii() and chr(c).isalnum() else 32 for c in range(256))
# Identifiers with more runs than this, or not starting and ending with a letter or digit, are
# rare; they go to one ordinary regular expression instead of the span lookup.
MAX_SPAN_RUNS = 8


def _decimal_edge(text: str, start: int, end: int) -> bool:
    before = start >= 2 and text[start - 1] in ".," and text[start - 2].isdigit()
    after = end + 1 < len(text) and text[end] in ".," and text[end + 1].isdigit()
    return before or after


class IdentifierMatcher:
    """Whole-token occurrences of any of a set of identifiers."""

    def __init__(self, identifiers: Iterable[str]) -> None:
        self.exact = frozenset(i for i in identifiers if i)
        runs_of = {ident: _RUN.findall(ident) for ident in self.exact}  # cut once: thousands of ids
        spanned, odd = set(), []
        for ident, runs in runs_of.items():
            if runs and len(runs) <= MAX_SPAN_RUNS and _ALNUM.match(ident[0]) and _ALNUM.match(ident[-1]):
                spanned.add(ident)
            else:
                odd.append(ident)
        # A key run per identifier: its longest (the random part of `in_1RzQ4xAcme`, not the
        # `in` every invoice id has), the one fewer identifiers share on a tie. A batch of text
        # holding none of the keys holds none of the identifiers, which one C-level findall
        # and a set intersection tell.
        frequency: dict[str, int] = {}
        for runs in runs_of.values():
            for run in set(runs):
                frequency[run] = frequency.get(run, 0) + 1
        keys, self._always = set(), False
        for runs in runs_of.values():
            if runs:
                keys.add(max(runs, key=lambda r: (len(r), -frequency[r])))
            else:
                self._always = True
        self._keys = frozenset(keys)
        self._key_bytes = frozenset(k.encode("ascii") for k in keys)
        self._spanned = frozenset(spanned)
        self._first_runs = frozenset(runs_of[i][0] for i in spanned)
        self._max_runs = max((len(runs_of[i]) for i in spanned), default=0)
        self._odd = (
            re.compile(
                "(?<![A-Za-z0-9])(?<![0-9][.,])(?:"
                + "|".join(re.escape(i) for i in sorted(odd, key=len, reverse=True))
                + ")(?![A-Za-z0-9])(?![.,][0-9])"
            )
            if odd else None
        )

    def __bool__(self) -> bool:
        return bool(self.exact)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each occurrence, left to right, longest identifier first."""
        found: list[tuple[int, int]] = []
        # Most strings hold no identifier's first run: one C-level findall tells.
        if self._spanned and not self._first_runs.isdisjoint(_RUN.findall(text)):
            runs = [(m.start(), m.end(), m.group(0)) for m in _RUN.finditer(text)]
            i = 0
            while i < len(runs):
                if runs[i][2] not in self._first_runs:
                    i += 1
                    continue
                start = runs[i][0]
                for j in range(min(len(runs), i + self._max_runs) - 1, i - 1, -1):
                    end = runs[j][1]
                    if text[start:end] in self._spanned and not _decimal_edge(text, start, end):
                        found.append((start, end))
                        i = j + 1
                        break
                else:
                    i += 1
        if self._odd is not None:
            taken = list(found)
            for m in self._odd.finditer(text):
                if not any(s < m.end() and m.start() < e for s, e in taken):
                    found.append((m.start(), m.end()))
            found.sort()
        return found

    def search(self, text: str) -> bool:
        return text in self.exact or bool(self.spans(text))

    def keys_in(self, text: str) -> frozenset[str] | None:
        """The key runs `text` holds (None: every text must be checked); empty: no identifier.
        Done on bytes (translate and split run in C, several times faster than a regex over
        the megabytes of a batch); keys are ASCII letters and digits, as runs are."""
        if self._always:
            return None
        if not self._keys:
            return frozenset()
        runs = text.encode("utf-8", "replace").translate(_RUN_BYTES).split()
        return frozenset(k.decode("ascii") for k in self._key_bytes.intersection(runs))

    def sub(self, text: str, replace: Callable[[str], str]) -> str:
        spans = self.spans(text)
        if not spans:
            return text
        parts, last = [], 0
        for start, end in spans:
            parts += [text[last:start], replace(text[start:end])]
            last = end
        parts.append(text[last:])
        return "".join(parts)


class TermMatcher:
    """Case-insensitive substrings: a name, an e-mail, a customer's own free text (a few)."""

    def __init__(self, terms: Iterable[str]) -> None:
        self.lowered = tuple(sorted({t.lower() for t in terms if t}, key=len, reverse=True))

    def search(self, text: str) -> bool:
        lowered = text.lower()
        return any(term in lowered for term in self.lowered)
