"""The paper's analysis for any runs (``scitaste report``, docs/report.md): :func:`analyse` computes the report from
runs and gold records, :mod:`scitaste_hf.analysis.render` writes it as Markdown, HTML and PNG figures."""

from scitaste_hf.analysis.compute import BASELINE_MODE, Run, analyse

__all__ = ["BASELINE_MODE", "Run", "analyse"]
