"""The Academic Taste Index over an OpenAlex snapshot, beyond what fits in memory (docs/scale.md): the DuckDB
engine (:mod:`~scitaste_hf.scale.duck`) with its SQL (:mod:`~scitaste_hf.scale.sql`), the in-memory engine fed
from a snapshot (:mod:`~scitaste_hf.scale.memory`), and :func:`scitaste_hf.scale.run.index_snapshot`, which runs
either. Nothing here is imported by ``scitaste --help``."""
