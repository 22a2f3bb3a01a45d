"""Reader of ISO 20022 camt.054 bank-to-customer debit/credit notifications (001.02 and later).

Layout: ISO 20022 camt.054.001.xx (iso20022.org catalogue of messages): BkToCstmrDbtCdtNtfctn,
one <Ntfctn> per account, its <Ntry> entries the same ReportEntry as a camt.053 statement's,
so the statement's streaming reader reads them (hostile XML refused unread the same way).
"""

from __future__ import annotations

import re

from reconciliation.formats.camt053 import parse_camt
from reconciliation.formats.registry import Reader, Sample

_NAMESPACE = re.compile(rb'xmlns(?::\w+)?="urn:iso:std:iso:20022:tech:xsd:camt\.054\.')


def looks_like_camt054(sample: Sample) -> bool:
    """An XML document whose first namespace declaration is camt.054's."""
    head = sample.data[:2048]
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<") and _NAMESPACE.search(head) is not None


READER = Reader(
    file_format="camt054", kind="bank", order=5,  # before camt.053, which takes any other XML
    recognises=looks_like_camt054,
    read=lambda sample: parse_camt(sample.data, "camt054"),
    wrong_kind="a camt.054 notification imports only as kind bank",
)
