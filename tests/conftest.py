"""Shared test set-up: the tests read the learner's names in drawings, so the tape notes the
source line of every op (``mt.config.record_source_lines``; on by itself only in IPython and
Jupyter, off in plain scripts). ``tests/test_tape_record.py`` checks the default."""

import pytest

import minitape as mt


@pytest.fixture(autouse=True)
def _record_source_lines():
    was = mt.config.source_lines_recorded()
    mt.config.record_source_lines(True)
    yield
    mt.config.record_source_lines(was)
