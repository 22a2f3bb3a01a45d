"""`pip install .` ships every app (code, migrations, templates, static files, data tables) and the
project-wide top-level `templates/` and `static/`, which the installed package still finds."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("paypilot", "ledger", "decisions", "dunning", "approvals", "integrations", "operations")
SHIPPED_SUFFIXES = {".py", ".html", ".css", ".js", ".csv", ".json", ".txt", ".svg", ".png"}
SITE_FOLDERS = ("templates", "static")  # project-wide, beside the apps; installed under share/paypilot/


def _tracked_product_files() -> set[str]:
    listed = subprocess.run(["git", "ls-files", *APPS], cwd=ROOT, capture_output=True, text=True, check=True)
    return {
        name for name in listed.stdout.splitlines()
        if Path(name).suffix in SHIPPED_SUFFIXES and "/tests/" not in name and (ROOT / name).is_file()
    }


def _tracked_site_files() -> set[str]:
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", *SITE_FOLDERS], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    return {name for name in listed.stdout.splitlines() if (ROOT / name).is_file()}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # Built from a copy of the tracked (and new, unignored) files, so a stale build/ or
    # egg-info directory in the work tree cannot add or hide anything.
    source = tmp_path_factory.mktemp("source")
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True)
    for name in listed.stdout.splitlines():
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    # Offline: the build backend is the setuptools the dev install brought, not a download.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        check=True, capture_output=True, timeout=300,
    )
    (built,) = out.glob("paypilot-*.whl")
    return built


@pytest.fixture(scope="module")
def wheel_names(wheel) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _site_names(wheel_names: set[str]) -> set[str]:
    """The wheel's data files under share/paypilot/, as paths relative to that folder."""
    marker = ".data/data/share/paypilot/"
    return {name.split(marker, 1)[1] for name in wheel_names if marker in name}


def test_the_wheel_holds_every_product_file(wheel_names):
    expected = _tracked_product_files()
    assert expected, "git ls-files found nothing"
    missing = sorted(expected - wheel_names)
    assert not missing, f"not in the wheel: {missing[:20]}"


def test_the_wheel_holds_migrations_templates_and_static_of_each_app(wheel_names):
    for app in APPS:
        if (ROOT / app / "migrations" / "0001_initial.py").is_file():
            assert f"{app}/migrations/0001_initial.py" in wheel_names
    site = _site_names(wheel_names)
    for name in ("templates/admin/base_site.html", "templates/admin/actions.html", "templates/admin/pagination.html",
                 "templates/admin/paypilot/input_filter.html", "templates/paypilot/landing.html",
                 "templates/drf_spectacular/swagger_ui.html", "templates/drf_spectacular/redoc.html",
                 "static/paypilot/admin.css", "static/paypilot/landing.css", "static/paypilot/apidocs.css"):
        assert name in site, name
    assert "approvals/templates/approvals/email/dunning.html" in wheel_names  # app-owned: inside its app
    assert "dunning/catalogue/locales/en.json" in wheel_names
    assert "decisions/rails/data/ach_return_codes.csv" in wheel_names


def test_the_wheel_leaves_the_tests_out(wheel_names):
    assert not [name for name in wheel_names if "/tests/" in name]


def test_the_wheel_holds_every_top_level_template_and_static_file(wheel_names):
    tracked = _tracked_site_files()
    assert tracked, "no top-level templates/ or static/ found"
    missing = sorted(tracked - _site_names(wheel_names))
    assert not missing, f"not in the wheel (add the folder to pyproject's data-files): {missing}"
    # and nothing project-wide is shipped a second time inside the paypilot package
    assert not [n for n in wheel_names if n.startswith(("paypilot/templates/", "paypilot/static/"))]


def test_the_installed_wheel_finds_its_templates_and_static_files(wheel, tmp_path):
    prefix = tmp_path / "prefix"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--prefix", str(prefix),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    (site_packages,) = prefix.glob("lib/python*/site-packages")
    probe = (
        "import django; django.setup()\n"
        "from django.conf import settings; from django.template.loader import get_template\n"
        "from django.contrib.staticfiles import finders\n"
        "import paypilot; print(paypilot.__file__)\n"
        "print(get_template('admin/base_site.html').origin.name)\n"
        "print(get_template('paypilot/landing.html').origin.name)\n"
        "print(finders.find('paypilot/admin.css'))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(site_packages), DJANGO_SETTINGS_MODULE="paypilot.settings",
               DATABASE_URL=f"sqlite:///{tmp_path / 'probe.sqlite3'}", REDIS_URL="")
    env.pop("PAYPILOT_TESTING", None)
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=300)
    assert found.returncode == 0, found.stderr[-2000:]
    package, *paths = found.stdout.split()
    assert package.startswith(str(site_packages)), "the probe imported the checkout, not the installed wheel"
    share = str(prefix / "share" / "paypilot")
    assert all(path.startswith(share) for path in paths), paths
