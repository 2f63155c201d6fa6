"""The documentation site (issue 37): ``mkdocs build --strict`` of docs/ (mkdocs.yml) ends without a warning,
every page of docs/ is in the navigation, and the README is its home page."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT

pytest.importorskip("mkdocs", reason="mkdocs is not installed (requirements.txt pins it)")


def test_the_site_builds_without_a_warning(tmp_path: Path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site"),
                             "--config-file", str(REPO_ROOT / "mkdocs.yml")], capture_output=True, text=True,
                            timeout=120, cwd=REPO_ROOT)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "WARNING" not in output, output
    assert (tmp_path / "site" / "index.html").is_file()
    assert "A lab&#39;s three jobs" in (tmp_path / "site" / "index.html").read_text() or \
        "A lab's three jobs" in (tmp_path / "site" / "index.html").read_text()


def test_every_page_is_in_the_navigation_and_the_home_is_the_readme():
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text())
    listed = {page for entry in config["nav"] for page in entry.values()}
    pages = {str(p.relative_to(REPO_ROOT / "docs")) for p in (REPO_ROOT / "docs").glob("**/*.md")}
    assert listed == pages, (sorted(pages - listed), sorted(listed - pages))
    index = REPO_ROOT / "docs" / "index.md"
    assert index.is_symlink() and index.resolve() == (REPO_ROOT / "README.md").resolve()


def test_the_readme_is_short():
    assert len((REPO_ROOT / "README.md").read_text().splitlines()) < 300
