"""``scitaste index --engine spark`` as a file for spark-submit, which runs a Python file rather than a console
script. The master, deploy mode and executors' resources are spark-submit's; the arguments after the file are
``scitaste index``'s (docs/scale.md#spark)::

    spark-submit --master yarn --executor-memory 16g \\
        "$(python -c 'import scitaste_hf.cli.spark_submit as m; print(m.__file__)')" \\
        --works /shared/openalex --focal all --out /shared/run

The Spark jobs are SQL only (no Python functions run on the executors), so the executors need Spark and Java, not
this package; the driver needs it installed.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Run ``scitaste index`` with the Spark engine on ``argv`` (default: the command line)."""
    from scitaste_hf.cli import main as scitaste

    return scitaste(["index", *(sys.argv[1:] if argv is None else argv), "--engine", "spark"])


if __name__ == "__main__":
    sys.exit(main())
