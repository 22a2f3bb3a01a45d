"""The design's layout: project-wide `templates/` and `static/` beside the apps, found by Django,
collected without duplicates."""

from __future__ import annotations

import io
from pathlib import Path

from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.template.loader import get_template

ROOT = Path(__file__).resolve().parents[2]


def test_project_wide_templates_and_static_are_top_level():
    assert settings.SITE_DIR == ROOT
    assert not (ROOT / "paypilot" / "templates").exists() and not (ROOT / "paypilot" / "static").exists()
    for name in ("admin/base_site.html", "admin/actions.html", "admin/pagination.html",
                 "admin/paypilot/input_filter.html", "paypilot/landing.html", "drf_spectacular/swagger_ui.html"):
        assert Path(get_template(name).origin.name).is_relative_to(ROOT / "templates"), name
    assert Path(finders.find("paypilot/admin.css")).is_relative_to(ROOT / "static")
    # app-owned templates stay in their apps
    assert Path(get_template("approvals/email/dunning.html").origin.name).is_relative_to(ROOT / "approvals")


def test_collectstatic_is_clean(tmp_path, settings):
    settings.STATIC_ROOT = tmp_path / "collected"
    out, err = io.StringIO(), io.StringIO()
    call_command("collectstatic", interactive=False, verbosity=1, stdout=out, stderr=err)
    text = out.getvalue() + err.getvalue()
    assert "Found another file" not in text and "duplicate" not in text.lower(), text
    assert (tmp_path / "collected" / "paypilot" / "admin.css").is_file()
    assert (tmp_path / "collected" / "admin" / "css" / "base.css").is_file()
