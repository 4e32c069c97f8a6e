"""Shared test set-up: the tests read the learner's names in drawings, so every tape gets
``mt.viz``'s record (``mt.config.record_source_lines``, on by default; a test that switches it
off gets it back). ``tests/test_tape_record.py`` checks the default."""

import pytest

import minitape as mt


@pytest.fixture(autouse=True)
def _record_source_lines():
    was = mt.config.source_lines_recorded()
    mt.config.record_source_lines(True)
    yield
    mt.config.record_source_lines(was)
