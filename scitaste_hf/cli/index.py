"""Compute the Academic Taste Index (seven dimensions and the composite) of focal papers within an OpenAlex
snapshot's population, out of core with DuckDB, as a Spark job, or in memory (docs/scale.md).

  scitaste mirror snapshot --works 100000 --out snap         # a simulated snapshot to try it on
  scitaste index --works snap --focal all --out run          # every work of the snapshot
  scitaste index --works snap --focal publication_year:2015 --out run2 --memory-limit 6GB
  scitaste index --works snap --focal ids.txt --out run3 --engine memory
  scitaste index --works snap --out run4 --engine spark      # Spark, local[*]; --spark-master URL for a cluster

Writes OUT/index.parquet (one row per focal paper) and OUT/index.json (counts, recall, seconds per stage). The
DuckDB and Spark engines keep each stage's output in OUT/stages: a rerun skips the stages whose inputs did not
change. OUT may be a URL (s3://bucket/run, ...): the run works in a local staging folder (--stage-dir) and uploads
index.parquet, then index.json (docs/scale.md#object-stores). Under spark-submit, run scitaste_hf/cli/spark_submit.py
with these arguments (docs/scale.md#spark).
"""

from __future__ import annotations

import argparse

from scitaste_hf.cli import whole_number


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``scitaste index``."""
    parser.add_argument("--works", required=True, metavar="PATH",
                        help="the snapshot: its root (holding data/works) or a works folder (updated_date=*); a local "
                             "path or a URL of any fsspec file system (s3://, gs://, ...; docs/scale.md#object-stores)")
    parser.add_argument("--focal", default="all", metavar="FILTER_OR_FILE",
                        help="the focal papers: 'all', a file of work ids (one a line), or an OpenAlex-style filter "
                             "such as publication_year:2015 or publication_year:2010-2020,type:article")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help="output folder: a local path or a URL of any fsspec file system (s3://, gs://, ...), "
                             "which gets the outputs once they are complete (docs/scale.md#object-stores)")
    parser.add_argument("--stage-dir", metavar="DIR",
                        help="for an --out URL: the local folder the run works in and keeps its stages in, where a "
                             "rerun resumes (default: a folder of the user's cache named by a hash of the URL, "
                             "emptied once the upload is done); for Spark on a cluster, a shared file system's")
    parser.add_argument("--engine", choices=("duckdb", "memory", "spark"), default="duckdb",
                        help="duckdb: out of core, resumable (default); memory: the in-memory engine; spark: the "
                             "same computation as a Spark job (pip install '.[spark]' in the repository)")
    parser.add_argument("--memory-limit", default="4GB", metavar="SIZE",
                        help="DuckDB's memory limit, e.g. 6GB (default 4GB); it spills to OUT/stages/tmp beyond "
                             "(Spark in local mode: the driver's memory)")
    parser.add_argument("--format", choices=("auto", "jsonl", "parquet"), default="auto",
                        help="which copy of the works to read (default: JSON Lines when present)")
    parser.add_argument("--neighbours", choices=("auto", "exact", "ann"), default="auto",
                        help="nearest-paper search of semantic novelty: exact, approximate (FAISS inverted file) with "
                             "measured recall, or auto (exact below 50,000 papers)")
    parser.add_argument("--cd-window", type=whole_number(0), metavar="DAYS",
                        help="count only citers within DAYS after the paper for the CD index (default: all)")
    parser.add_argument("--weights", metavar="PATH",
                        help="weights of the composite (default: the packaged ones); a file with one vector per "
                             "discipline gives each paper its discipline's, the discipline of its primary topic's "
                             "subfield in --taxonomy")
    parser.add_argument("--taxonomy", metavar="NAME|FILE",
                        help="taxonomy mapping subfields to disciplines for per-discipline --weights: a packaged "
                             "name (default, extended) or a file (default: default)")
    parser.add_argument("--journal-table", metavar="PATH",
                        help="journal table (CSV or Parquet) for dimension G (default: the snapshot's sources, "
                             "the open impact proxy)")
    parser.add_argument("--threads", type=whole_number(0), default=0, metavar="N",
                        help="threads for DuckDB and FAISS (default 0: all cores)")
    parser.add_argument("--spark-master", metavar="URL",
                        help="Spark engine: the master (default local[*], or spark-submit's), e.g. spark://host:7077")
    parser.add_argument("--spark-conf", action="append", metavar="KEY=VALUE",
                        help="Spark engine: a Spark setting, e.g. spark.executor.memory=8g (repeatable)")
    parser.add_argument("--quiet", action="store_true", help="no progress output")


def run(args: argparse.Namespace) -> int:
    """Score the focal papers and print where the results are."""
    from scitaste_hf.progress import StageProgress
    from scitaste_hf.scale.options import IndexOptions, memory_limit, spark_conf
    from scitaste_hf.scale.run import index_snapshot, staging_folder
    from scitaste_hf.snapshot.focal import parse_focal
    from scitaste_hf.snapshot.store import is_remote, location
    from scitaste_hf.weights import load_weights

    options = IndexOptions(focal=parse_focal(args.focal), format=args.format,
                           memory_limit=memory_limit(args.memory_limit), threads=args.threads,
                           neighbours=args.neighbours, cd_window=args.cd_window,
                           weights=load_weights(args.weights) if args.weights else None,
                           taxonomy=args.taxonomy, journal_table=args.journal_table,
                           spark_master=args.spark_master, spark_conf=spark_conf(args.spark_conf))
    with StageProgress(enabled=not args.quiet) as progress:
        summary = index_snapshot(args.works, args.out, args.engine, options, progress, args.stage_dir)
    target = location(args.out)
    staged = ("" if not is_remote(target) else f" (stages kept in {args.stage_dir})" if args.stage_dir else
              f" (worked in {staging_folder(target)}, emptied after the upload)")
    recall = (summary.get("neighbours") or {}).get("recall")
    extra = (f"; approximate search recall@{recall['k']} {recall['recall_at_k']:.4f} on {recall['sample']} papers"
             if recall else "")
    print(f"scored {summary['papers']:,} focal papers among {summary['works']:,} works with {summary['engine']} in "
          f"{summary['seconds']:.1f} s{extra}: {args.out.rstrip('/')}/index.parquet{staged}")
    return 0
