"""Bounded log records: a 10 MB argument or traceback is at most 2 KiB once written, and the
head of the message and the end of the traceback (where the error is) are kept."""

from __future__ import annotations

import logging

from codesynapse.logsetup import RECORD_MAX, BoundArgs, BoundedFormatter


def _record(msg, args=(), exc_info=None) -> logging.LogRecord:
    return logging.LogRecord("pygls.protocol.json_rpc", logging.ERROR, __file__, 1, msg, args, exc_info)


def _written(record: logging.LogRecord) -> str:
    BoundArgs().filter(record)
    return BoundedFormatter().format(record) + "\n"


def test_a_10_mb_argument_is_cut_before_formatting():
    big = "x" * (10 * 1024 * 1024)
    rec = _record("Failed to handle request %s %s %s", ("id-1", "codesynapse/search", {"query": big}))
    out = _written(rec)
    assert len(out.encode()) <= RECORD_MAX
    assert "Failed to handle request id-1 codesynapse/search {'query': 'xxx" in out
    assert all(len(str(a)) <= 1100 for a in rec.args)  # cut in the record itself, before formatting


def test_a_huge_message_and_traceback_keep_the_head_and_the_error_line():
    try:
        raise ValueError("the error at the end " + "y" * 100_000)
    except ValueError:
        import sys

        rec = _record("Unknown message " + "m" * 5_000_000, exc_info=sys.exc_info())
    out = _written(rec)
    assert len(out.encode()) <= RECORD_MAX
    assert "Unknown message mmm" in out
    assert out.rstrip().endswith("y")  # the tail of the traceback is the exception line
    assert "bytes cut" in out


def test_non_ascii_is_cut_on_a_character_boundary():
    rec = _record("%s", ("é😀" * 1_000_000,))
    out = _written(rec)
    assert len(out.encode("utf-8")) <= RECORD_MAX
    out.encode("utf-8")  # no broken surrogate or half character


def test_a_short_record_is_written_as_it_is():
    out = BoundedFormatter("%(message)s").format(_record("hover %s at %d:%d", ("a.py", 3, 4)))
    assert out == "hover a.py at 3:4"
