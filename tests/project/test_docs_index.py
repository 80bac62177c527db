"""The decisions are indexed (issue 25, item 5): every ADR is in docs/adr/README.md, with a status and a date."""

from __future__ import annotations

import re

from tests.support.processes import ROOT

ADR = ROOT / "docs" / "adr"


def test_every_adr_is_indexed_with_its_status_and_date() -> None:
    index = (ADR / "README.md").read_text()
    for path in sorted(ADR.glob("0*.md")):
        head = path.read_text().split("\n")[:8]
        status = next((line.split(":", 1)[1].strip() for line in head if line.startswith("Status:")), None)
        date = next((line.split(":", 1)[1].strip() for line in head if line.startswith("Date:")), None)
        assert status, f"{path.name} has no Status line"
        assert date and re.fullmatch(r"\d{4}-\d\d-\d\d", date), f"{path.name} has no Date line"
        row = next((line for line in index.splitlines() if f"]({path.name})" in line), None)
        assert row is not None, f"{path.name} is missing from docs/adr/README.md"
        assert f"| {status} | {date} |" in row, row


def test_the_index_names_no_missing_file_and_the_manual_links_its_pages() -> None:
    index = (ADR / "README.md").read_text()
    for name in re.findall(r"\]\((\d{4}-[^)]+\.md)\)", index):
        assert (ADR / name).exists(), name
    readme = (ROOT / "README.md").read_text()
    for page in ("docs/architecture.md", "docs/glossary.md", "docs/adr/README.md"):
        assert f"]({page})" in readme, page
        assert (ROOT / page).exists()
