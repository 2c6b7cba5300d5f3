"""Every page of the docs can be found: docs/index.md links it and the site's navigation
(mkdocs.yml) lists it. A page that only a search would find is a page nobody reads."""

from __future__ import annotations

import re

from tests.docs.harness import REPO

PAGES = {page.name for page in (REPO / "docs").glob("*.md")} - {"index.md"}


def test_the_index_links_every_page():
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]*)?\)", index))
    assert PAGES - linked == set(), "pages docs/index.md does not link"


def test_the_site_navigation_lists_every_page():
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w.-]+\.md)\s*$", nav, re.MULTILINE))
    assert PAGES - listed == set(), "pages mkdocs.yml's nav does not list"
