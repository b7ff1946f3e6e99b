"""tools/test_figures.py: the README's test figures are written from a run and read back as written."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import test_figures as figures  # noqa: E402  (tools/ is no package)


def test_the_readme_holds_a_figure_for_each_tier_between_its_markers() -> None:
    held = figures.current(figures.README.read_text())
    assert set(held) == {"quick", "whole"}
    assert all(figure.tests > 0 and figure.seconds > 0 for figure in held.values())


def test_a_junit_report_becomes_a_sentence_that_reads_back_as_the_same_figure(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    report.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="0" '
        'failures="0" skipped="8" tests="1385" time="128.4" timestamp="2026-11-27T16:31:25.4+00:00">'
        "</testsuite></testsuites>"
    )
    quick = figures.from_junit(report, "1.1 to 1.7")
    assert (
        quick.sentence("quick")
        == "the quick part (1,385 tests) in 2 min 8 s (2026-11-27, load average 1.1 to 1.7)"
    )
    text = figures.README.read_text()
    rewritten = figures.rewrite(text, figures.current(text) | {"quick": quick})
    assert figures.current(rewritten)["quick"] == figures.Figure(1385, 128, "2026-11-27", "1.1 to 1.7")
    assert rewritten.replace(figures.between(rewritten), "") == text.replace(figures.between(text), "")
