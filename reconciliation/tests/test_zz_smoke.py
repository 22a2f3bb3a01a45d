import json
from datetime import date
import pytest
from reconciliation.services.sample import sample_load
from reconciliation.services.disputes import dispute_list, dispute_triage
pytestmark = pytest.mark.django_db
def test_smoke():
    t, run = sample_load(actor="t")
    print(json.dumps(dispute_list(tenant=t, as_of=date(2026,11,16)), indent=1))
def test_smoke2():
    from reconciliation.services.evidence import evidence_pack_draft
    t, run = sample_load(actor="t")
    p = evidence_pack_draft(tenant=t, dispute_id="dp_1Nw0001", as_of=date(2026,11,16))
    print(p["markdown"])
