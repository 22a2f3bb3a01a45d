"""File formats to canonical rows: one reader module per format, pure functions, no ORM.

`registry` lists the recognised formats (each module here that defines `READER`);
`layout` reads any other CSV through a confirmed layout. The names below are re-exported so
callers import them from `reconciliation.formats` whichever module holds them.
"""

from __future__ import annotations

from reconciliation.formats.base import (
    AMOUNT_FIELDS,
    CANONICAL,
    DATE_FIELDS,
    EPOCH,
    PROVIDER_TYPES,
    REASON_BAD_AMOUNT,
    REASON_BAD_CURRENCY,
    REASON_BAD_DATE,
    REASON_BAD_ENCODING,
    REASON_BAD_TYPE,
    REASON_EMPTY_FILE,
    REASON_MISSING_COLUMN,
    REASON_MISSING_VALUE,
    REASON_WRONG_COLUMNS,
    REASON_XML_FORBIDDEN,
    REASON_XML_INVALID,
    REQUIRED,
    TYPE_SYNONYMS,
    FileRefused,
    LayoutSpec,
    Parsed,
)
from reconciliation.formats.camt053 import CAMT053_NS, looks_like_xml, parse_camt053
from reconciliation.formats.cells import amount_to_minor, currency_normalise, day_number, parse_when
from reconciliation.formats.csvtext import (
    csv_rows,
    decode,
    header_key,
    normalise_header,
    sniff_delimiter,
    text_stream,
)
from reconciliation.formats.layout import canonical_row, parse_with_layout
from reconciliation.formats.registry import Reader, Sample, readers, recognise
from reconciliation.formats.stripe_report import (
    STRIPE_CATEGORIES,
    STRIPE_REQUIRED,
    is_stripe_report,
    parse_stripe_report,
)
from reconciliation.formats.swift_mt940 import REASON_MT940_INVALID, looks_like_mt940, parse_mt940

__all__ = [
    "AMOUNT_FIELDS", "CAMT053_NS", "CANONICAL", "DATE_FIELDS", "EPOCH", "PROVIDER_TYPES", "REASON_BAD_AMOUNT",
    "REASON_BAD_CURRENCY", "REASON_BAD_DATE", "REASON_BAD_ENCODING", "REASON_BAD_TYPE", "REASON_EMPTY_FILE",
    "REASON_MISSING_COLUMN", "REASON_MISSING_VALUE", "REASON_MT940_INVALID", "REASON_WRONG_COLUMNS",
    "REASON_XML_FORBIDDEN", "REASON_XML_INVALID", "REQUIRED", "STRIPE_CATEGORIES", "STRIPE_REQUIRED",
    "TYPE_SYNONYMS", "FileRefused", "LayoutSpec", "Parsed", "Reader", "Sample", "amount_to_minor",
    "canonical_row", "csv_rows", "currency_normalise", "day_number", "decode", "header_key", "is_stripe_report",
    "looks_like_mt940", "looks_like_xml", "normalise_header", "parse_camt053", "parse_mt940",
    "parse_stripe_report", "parse_when", "parse_with_layout", "readers", "recognise", "sniff_delimiter",
    "text_stream",
]
