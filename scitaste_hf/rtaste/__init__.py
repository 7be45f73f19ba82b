"""rTaste: scoring research agents' early-stage judgement with registered events.

An agent reads a new seed paper and registers five minimal viable experiments (MVEs), each with a registered
event (a statistic, a relation and a threshold), a probability that the event occurs and a rank 1-5; every MVE
is executed, re-run under protection, and labelled by auditors and judges. This package holds the release
schema (:mod:`~scitaste_hf.rtaste.schema`), event resolution (:mod:`~scitaste_hf.rtaste.events`), label
aggregation and rater agreement (:mod:`~scitaste_hf.rtaste.aggregation`), the metrics as pure functions
(:mod:`~scitaste_hf.rtaste.metrics`), the release loader (:mod:`~scitaste_hf.rtaste.release`), the headline
report (:mod:`~scitaste_hf.rtaste.report`), what the evaluate modules return
(:mod:`~scitaste_hf.rtaste.summaries`), the judge task's prompt and parser (:mod:`~scitaste_hf.rtaste.judge`)
and the simulation behind the bundled synthetic release (:mod:`~scitaste_hf.rtaste.synthetic`).

Protocol facts (five MVEs per condition, three auditors, two novelty judges, values 0-3, the base rate from
the other seed papers, pairing within seed papers) follow the rTaste study; the choices it leaves open are
documented where they are made (:mod:`~scitaste_hf.rtaste.report` for the labels,
:func:`~scitaste_hf.rtaste.metrics.top1_credit` for ties, :func:`~scitaste_hf.rtaste.metrics.grouped_mean`
for intervals, :data:`~scitaste_hf.rtaste.events.UNIT_SCALES` for units).
"""
