"""`pip install .` ships every app: code, migrations, templates, static files and data tables."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("paypilot", "ledger", "decisions", "dunning", "approvals", "integrations", "operations")
SHIPPED_SUFFIXES = {".py", ".html", ".css", ".js", ".csv", ".json", ".txt", ".svg", ".png"}


def _tracked_product_files() -> set[str]:
    listed = subprocess.run(["git", "ls-files", *APPS], cwd=ROOT, capture_output=True, text=True, check=True)
    return {
        name for name in listed.stdout.splitlines()
        if Path(name).suffix in SHIPPED_SUFFIXES and "/tests/" not in name and (ROOT / name).is_file()
    }


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> set[str]:
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
    (wheel,) = out.glob("paypilot-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def test_the_wheel_holds_every_product_file(wheel_names):
    expected = _tracked_product_files()
    assert expected, "git ls-files found nothing"
    missing = sorted(expected - wheel_names)
    assert not missing, f"not in the wheel: {missing[:20]}"


def test_the_wheel_holds_migrations_templates_and_static_of_each_app(wheel_names):
    for app in APPS:
        if (ROOT / app / "migrations" / "0001_initial.py").is_file():
            assert f"{app}/migrations/0001_initial.py" in wheel_names
    assert "paypilot/templates/admin/base_site.html" in wheel_names
    assert "paypilot/static/paypilot/admin.css" in wheel_names
    assert "dunning/catalogue/locales/en.json" in wheel_names
    assert "decisions/rails/data/ach_return_codes.csv" in wheel_names


def test_the_wheel_leaves_the_tests_out(wheel_names):
    assert not [name for name in wheel_names if "/tests/" in name]
