"""Money helpers now live in the core (`paypilot.money`); re-exported for ledger imports."""

from paypilot.money import (  # noqa: F401 - re-export
    CURRENCY_EXPONENTS,
    DEFAULT_EXPONENT,
    THREE_DECIMAL,
    ZERO_DECIMAL,
    currency_exponent,
    currency_normalise,
    format_minor,
    to_major,
    to_minor,
)
