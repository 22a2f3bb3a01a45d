"""The committed dunning copy: one JSON catalogue per locale, served whole or not at all.

Completeness is measured against the English catalogue (every kind, every code, the
fallback, every slot pattern, the same placeholders), so adding a code to English makes
every translation incomplete until it is translated: the direction that fails safe. A
locale that is not complete is never merged key by key with English; English is served
whole and the reason is reported (`incomplete_locales()`, `manage.py catalogue_check`).

The locale comes from the customer record (or the event's explicit `locale` field) and
never from the currency: EUR spans many languages and USD or GBP is not a language.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from decisions.rules import FAILURE_CODES

LOCALES_DIR = Path(__file__).resolve().parent / "locales"
BASE_LOCALE = "en"
KINDS = ("subject", "diagnosis", "message")
FALLBACK_CODE = "fallback"  # copy for a failure code the rules table does not list
SLOTS = ("name", "plan", "business")
# The HTML email's own words (approvals/email_html.py): button, safety note, footer.
EMAIL_KEYS = ("button", "secure_note", "footer")
# BCP 47-ish: a 2-3 letter language, then up to four short subtags ("de-DE", "es_419").
_TAG = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8}){0,4}$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_URL = re.compile(r"(?i)(?:[a-z][a-z0-9+.-]*://|www\.)")
_DASHES = ("\u2014", "\u2013")  # em dash, en dash: not in our house style


class CatalogueError(Exception):
    """The English catalogue itself is missing copy: fatal, there is nothing to fall back to."""


@dataclass(frozen=True)
class LocaleChoice:
    requested: str  # what the customer record or event asked for ("" when nothing)
    used: str  # the locale actually served
    # served | not_requested | malformed | not_available | incomplete
    reason: str


@dataclass(frozen=True)
class Rendered:
    subject: str
    body: str
    diagnosis: str
    locale: str


def _flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{path}."))
        elif key != "locale":
            out[path] = value if isinstance(value, str) else repr(value)
    return out


def _placeholders(text: str) -> frozenset[str]:
    return frozenset(_PLACEHOLDER.findall(text))


def content_problems(flat: Mapping[str, str]) -> list[str]:
    """House-style problems in one catalogue: a URL or an em/en dash anywhere."""
    problems = []
    for path, text in sorted(flat.items()):
        if _URL.search(text):
            problems.append(f"url:{path}")
        if any(dash in text for dash in _DASHES):
            problems.append(f"dash:{path}")
    return problems


def required_paths() -> list[str]:
    """The paths English must carry for the catalogue to be usable at all."""
    paths = [f"{kind}.{code}" for kind in KINDS for code in (*FAILURE_CODES, FALLBACK_CODE)]
    paths += [f"slots.{slot}.{case}" for slot in SLOTS for case in ("known", "unknown")]
    paths += [f"email.{key}" for key in EMAIL_KEYS]
    return [*paths, "urgency", "cta_marker"]


class Catalogue:
    """All locales loaded from one directory; only complete ones are served."""

    def __init__(self, raw: Mapping[str, Mapping[str, Any]]) -> None:
        if BASE_LOCALE not in raw:
            raise CatalogueError("no English catalogue")
        self._flat = {loc: _flatten(data) for loc, data in raw.items()}
        base = self._flat[BASE_LOCALE]
        missing = [p for p in required_paths() if not base.get(p, "").strip()]
        if missing:
            raise CatalogueError(f"English catalogue is missing copy: {', '.join(missing)}")
        self.problems: dict[str, list[str]] = {}
        for loc, flat in self._flat.items():
            problems = content_problems(flat)
            if loc != BASE_LOCALE:
                problems = self._coverage_problems(flat, base) + problems
            if problems:
                self.problems[loc] = problems
        self._served = frozenset(
            loc for loc in self._flat if loc == BASE_LOCALE or loc not in self.problems
        )

    @staticmethod
    def _coverage_problems(flat: Mapping[str, str], base: Mapping[str, str]) -> list[str]:
        problems = []
        for path, english in sorted(base.items()):
            text = flat.get(path)
            if text is None:
                problems.append(f"missing:{path}")
            elif not text.strip():
                problems.append(f"empty:{path}")
            elif _placeholders(text) != _placeholders(english):
                # A renamed slot would leave a literal brace in a customer's inbox.
                problems.append(f"placeholders:{path}")
        return problems

    @classmethod
    def from_directory(cls, directory: Path) -> Catalogue:
        raw = {}
        for path in sorted(directory.glob("*.json")):
            with open(path, encoding="utf-8") as fh:
                raw[path.stem] = json.load(fh)
        return cls(raw)

    def available_locales(self) -> list[str]:
        return sorted(self._served)

    def incomplete_locales(self) -> dict[str, list[str]]:
        """Locale -> reasons, for every shipped locale that is not served (English never is)."""
        return {loc: list(p) for loc, p in sorted(self.problems.items()) if loc != BASE_LOCALE}

    def resolve(self, tag: str | None) -> LocaleChoice:
        """The locale to serve for a customer's language tag; English when in any doubt."""
        requested = (tag or "").strip()
        if not requested:
            return LocaleChoice(requested="", used=BASE_LOCALE, reason="not_requested")
        if len(requested) > 35 or not _TAG.match(requested):
            # The malformed value is not echoed back: it is untrusted text.
            return LocaleChoice(requested="", used=BASE_LOCALE, reason="malformed")
        language = re.split(r"[-_]", requested, maxsplit=1)[0].lower()
        if language in self._served:
            return LocaleChoice(requested=requested, used=language, reason="served")
        reason = "incomplete" if language in self._flat else "not_available"
        return LocaleChoice(requested=requested, used=BASE_LOCALE, reason=reason)

    def text(self, locale: str, path: str) -> str:
        flat = self._flat[locale if locale in self._served else BASE_LOCALE]
        return flat[path]

    def copy_key(self, failure_code: str) -> str:
        return failure_code if failure_code in FAILURE_CODES else FALLBACK_CODE

    def slot_value(self, locale: str, slot: str, value: str | None) -> str:
        """The slot's phrase: the known pattern around a safe value, else the unknown phrase."""
        if value:
            return self.text(locale, f"slots.{slot}.known").replace("{value}", value)
        return self.text(locale, f"slots.{slot}.unknown")

    def render(
        self,
        *,
        locale: str,
        failure_code: str,
        name: str | None,
        plan: str | None,
        business: str | None,
        high_risk: bool = False,
    ) -> Rendered:
        """Fill the committed copy. Slot values must already have passed `safe_field`."""
        used = locale if locale in self._served else BASE_LOCALE
        key = self.copy_key(failure_code)
        values = {
            "{name}": self.slot_value(used, "name", name),
            "{plan}": self.slot_value(used, "plan", plan),
            "{business}": self.slot_value(used, "business", business),
        }
        subject = self.text(used, f"subject.{key}")
        body = self.text(used, f"message.{key}")
        # str.replace, not str.format: a value can never reach a format spec or attribute.
        for placeholder, value in values.items():
            subject = subject.replace(placeholder, value)
            body = body.replace(placeholder, value)
        return Rendered(subject=subject, body=body, diagnosis=self.diagnosis(used, failure_code, high_risk=high_risk),
                        locale=used)

    def diagnosis(self, locale: str, failure_code: str, *, high_risk: bool = False) -> str:
        """The diagnosis for a code, with the urgency line appended when churn risk is high."""
        used = locale if locale in self._served else BASE_LOCALE
        text = self.text(used, f"diagnosis.{self.copy_key(failure_code)}")
        return f"{text} {self.text(used, 'urgency')}" if high_risk else text


@lru_cache(maxsize=1)
def catalogue() -> Catalogue:
    """The committed catalogue, loaded once per process."""
    return Catalogue.from_directory(LOCALES_DIR)
