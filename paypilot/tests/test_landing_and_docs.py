"""`/` explains the service; `/docs` and `/redoc` work offline from installed assets."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders


def test_landing_page_links_the_admin_docs_sample_report_and_health(client, db):
    response = client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    for href in ('href="/admin/"', 'href="/docs"', 'href="/redoc"', 'href="/report/sample"', 'href="/health"'):
        assert href in page
    assert "approve" in page


def test_landing_page_refuses_writes(client, db):
    assert client.post("/").status_code == 405


@pytest.mark.parametrize("path", ["/", "/docs", "/redoc"])
def test_pages_load_nothing_from_another_host(client, db, path):
    page = client.get(path).content.decode()
    external = re.findall(r"""(?:src|href)=["'](?:https?:)?//[^"']+""", page)
    assert external == []


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_doc_viewers_reference_static_files_that_are_installed(client, db, path):
    page = client.get(path).content.decode()
    assets = re.findall(r"""["']/static/([^"']+\.js)["']""", page)
    assert assets, "the viewer names no script"
    for asset in assets:
        assert finders.find(asset), f"{asset} is not installed"


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_doc_viewers_have_no_inline_script_or_style(client, db, path):
    page = client.get(path).content.decode()
    assert "<style" not in page
    assert not re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", page), "inline <script> found"


def test_swagger_start_up_script_is_served_as_javascript(client, db):
    page = client.get("/docs").content.decode()
    (script,) = re.findall(r"""<script src="(/docs\?[^"]+)">""", page)
    answer = client.get(script.replace("&amp;", "&"))
    assert answer.status_code == 200
    assert "javascript" in answer["Content-Type"]
    assert b"SwaggerUIBundle" in answer.content
