"""OpenAlex's snapshot layout: a closed simulated world written in it (:mod:`~scitaste_hf.snapshot.writer`), and
the reading side that the index at scale uses (:mod:`~scitaste_hf.snapshot.layout`, :mod:`~.records` (the
record contract every engine reads through), :mod:`~.reader`, :mod:`~.focal`). docs/scale.md describes the
layout and the records.
"""
