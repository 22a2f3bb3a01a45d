"""Money helpers now live in the core (`paypilot.money`, shared with reconciliation);
re-exported here so ledger imports keep working."""

from paypilot.money import (  # noqa: F401 - re-export
    CURRENCY_EXPONENTS,
    DEFAULT_EXPONENT,
    ISO_4217,
    REASON_CURRENCY_UNKNOWN,
    THREE_DECIMAL,
    ZERO_DECIMAL,
    currency_exponent,
    currency_known,
    currency_normalise,
    format_minor,
    to_major,
    to_minor,
)
