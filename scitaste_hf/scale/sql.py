"""Every SQL statement of the index at scale, in one place (docs/scale.md#the-tables), for both engines that run
SQL: DuckDB and Spark SQL.

Two kinds:

* **Reading the snapshot** (:func:`flatten_records` .. :func:`texts`) turns OpenAlex's nested records into flat
  tables with list functions, which the two dialects spell differently (DuckDB's ``unnest``, ``len``,
  ``generate_subscripts`` are Spark's ``explode``, ``size``, ``posexplode``). Those few spellings, and the
  records' column types, are the fields of a :class:`Dialect` (:data:`DUCKDB`, :data:`SPARK`); the queries are
  written once around them.
* **The index's aggregations** (:func:`features`, :func:`reference_fields`, :func:`cd_paths`,
  :func:`cd_counts`) read only those flat tables, with joins, ``GROUP BY``, ``COUNT(DISTINCT ...)``, ``CASE`` and
  ``LN``: standard SQL that DuckDB and Spark SQL both run as written.

Both dialects compute in the same types (an integer is never divided as a decimal) so that they give the same
doubles. Anti-joins are written ``NOT EXISTS``, which Spark plans as a distributed join where ``NOT IN`` would
broadcast the subquery.

The flat tables (views of the same names in each engine):

``works(w, id, focal, day, year, journal, field, field_code, author_count, citation_count)``
    Every work: the snapshot's (focal papers first, each group by id) then the references outside it. ``w`` is
    the work's number, ``day`` its date in days since 1970-01-01 (NULL when unknown; a focal paper without a
    date falls back to 1 January of its year), ``field_code`` its field as a number (-1 when unknown).
``edges(citing, cited, citing_day)``
    Each citation once, no self-citation, with the citing work's day.
``topics(w, pos, field, subfield, score)``, ``concepts(w, score)``, ``countries(w, country)``
    The focal papers' topics (``pos`` 1 = the primary topic), concept scores and authors' countries (one row
    per authorship).

Numbers (a block's bounds, the CD window) are formatted into the text as integers, never user strings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scitaste_hf.snapshot.records import STORAGE, WORK_FIELDS


@dataclass(frozen=True)
class Dialect:
    """How one SQL engine spells what the two engines' SQL differs in.

    Attributes
    ----------
    name : str
    types : dict
        The records' scalar kinds (``text``, ``int``, ``long``, ``double``, ``json``) as this engine's types.
    struct, field, array : str
        Templates of a struct type of ``{}`` fields, one ``{name} {type}`` field, and a list of ``{}``.
    length : str
        A list's length (``{}``), NULL or at most 0 for a missing list.
    explode : str
        One row per element of a list (``{}``), in the select list.
    explode_indexed : str
        One row per element with its 0-based position: ``{items}`` the list, ``{value}`` and ``{pos}`` the names.
    days : str
        A DATE (``{}``) as days since 1970-01-01, an INTEGER.
    """

    name: str
    types: dict[str, str]
    struct: str
    field: str
    array: str
    length: str
    explode: str
    explode_indexed: str
    days: str

    def column_type(self, spec: Any) -> str:
        """The type of a record field from its spec in :data:`RECORD_FIELDS` (a kind, a list of one spec, or a
        dict of fields)."""
        if isinstance(spec, list):
            return self.array.format(self.column_type(spec[0]))
        if isinstance(spec, dict):
            return self.struct.format(", ".join(self.field.format(name, self.column_type(s))
                                                for name, s in spec.items()))
        return self.types[STORAGE.get(spec, spec)]


DUCKDB = Dialect(
    name="duckdb",
    types={"text": "VARCHAR", "int": "INTEGER", "long": "BIGINT", "double": "DOUBLE", "json": "JSON"},
    struct="STRUCT({})", field="{} {}", array="{}[]", length="len({})", explode="unnest({})",
    explode_indexed="unnest({items}) AS {value}, generate_subscripts({items}, 1) - 1 AS {pos}",
    days="CAST({} - DATE '1970-01-01' AS INTEGER)")
# Spark's JSON reader keeps an object read as STRING as its JSON text, the counterpart of DuckDB's JSON type.
SPARK = Dialect(
    name="spark",
    types={"text": "STRING", "int": "INT", "long": "BIGINT", "double": "DOUBLE", "json": "STRING"},
    struct="STRUCT<{}>", field="{}: {}", array="ARRAY<{}>", length="size({})", explode="explode({})",
    explode_indexed="posexplode({items}) AS ({pos}, {value})",
    days="datediff({}, DATE '1970-01-01')")

#: The fields read from each work record (the record contract, :mod:`scitaste_hf.snapshot.records`, which every
#: engine applies before it reads a data file).
RECORD_FIELDS: dict[str, Any] = WORK_FIELDS


def record_columns(dialect: Dialect) -> dict[str, str]:
    """Each record field's type in ``dialect`` (DuckDB's ``read_json`` column spec; Spark's reader schema)."""
    return {name: dialect.column_type(spec) for name, spec in RECORD_FIELDS.items()}


#: :func:`record_columns` of DuckDB.
RECORD_COLUMNS: dict[str, str] = record_columns(DUCKDB)

#: The order works are numbered in: focal papers, then the snapshot's other works, then the references outside
#: it, each group in id order. Also the in-memory engine's order (papers, works, other ids), which makes sums over
#: a paper's references add in the same order in every engine.
WORK_ORDER = "focal DESC, inside DESC, id"


def _short(expr: str) -> str:
    """The last segment of an OpenAlex id or URL (``W123`` of ``https://openalex.org/W123``)."""
    return f"regexp_extract({expr}, '[^/]*$', 0)"


def flatten_records(source: str, dialect: Dialect = DUCKDB) -> str:
    """One row per work record of ``source`` (a relation: ``read_json(...)``, ``read_parquet(...)`` or a view),
    with the fields the index and the focal filter read; lists stay lists. The same reading as the in-memory
    engine's (:func:`scitaste_hf.sources.openalex.parse_work`): the title falls back to the display name, the
    journal is the ISSN-L or else the source's name, no authorship means an unknown author count."""
    authors = dialect.length.format("authorships")
    return f"""
SELECT {_short('id')} AS id,
       COALESCE(NULLIF(title, ''), display_name) AS title,
       TRY_CAST(publication_date AS DATE) AS publication_date,
       publication_year AS year,
       cited_by_count AS citation_count,
       type,
       primary_location.source.issn_l AS issn_l,
       COALESCE(NULLIF(primary_location.source.issn_l, ''), primary_location.source.display_name) AS journal,
       primary_topic.field.display_name AS field,
       {_short('primary_topic.field.id')} AS field_id,
       {_short('primary_topic.subfield.id')} AS subfield_id,
       CASE WHEN {authors} > 0 THEN {authors} END AS author_count,
       referenced_works, topics, concepts, authorships,
       CAST(abstract_inverted_index AS STRING) AS abstract_json
FROM {source}"""


DUPLICATE_IDS = "SELECT id FROM raw GROUP BY id HAVING COUNT(*) > 1 ORDER BY id LIMIT 5"
_MISSING = "FROM focal_ids f WHERE NOT EXISTS (SELECT 1 FROM raw r WHERE r.id = f.id)"
MISSING_FOCAL_IDS = f"SELECT id {_MISSING} ORDER BY id LIMIT 5"
COUNT_MISSING_FOCAL_IDS = f"SELECT COUNT(*) {_MISSING}"


def known_works(focal: str) -> str:
    """The snapshot's works with a ``focal`` flag (``focal``: a SQL condition over the flattened columns)."""
    return f"SELECT *, COALESCE({focal}, FALSE) AS focal FROM raw"


UNDATED_FOCAL = "SELECT id FROM known WHERE focal AND publication_date IS NULL AND year IS NULL ORDER BY id LIMIT 1"


def work_rows(dialect: Dialect = DUCKDB) -> str:
    """Every work before it is numbered: the snapshot's (``inside``) and the references outside it, with the
    columns of ``works`` and the sort keys of :data:`WORK_ORDER`."""
    return f"""
WITH refs AS (
    SELECT DISTINCT {_short('ref')} AS id
    FROM (SELECT {dialect.explode.format('referenced_works')} AS ref FROM raw) r
    WHERE ref IS NOT NULL
), outside AS (
    SELECT id FROM refs WHERE NOT EXISTS (SELECT 1 FROM known k WHERE k.id = refs.id)
)
SELECT id, focal, TRUE AS inside,
       CASE WHEN focal THEN COALESCE(publication_date, make_date(year, 1, 1)) ELSE publication_date END AS date,
       journal, field, author_count, COALESCE(citation_count, 0) AS citation_count
FROM known
UNION ALL
SELECT id, FALSE, FALSE, NULL, NULL, NULL, NULL, 0 FROM outside"""


def works(numbered: str, dialect: Dialect = DUCKDB) -> str:
    """The ``works`` table from ``numbered`` (a relation: :func:`work_rows` with each work's number ``w``). Fields
    are numbered in name order through a table of the distinct fields, which stays small where a window over every
    work would not (Spark runs a window without partitions on one core)."""
    return f"""
WITH codes AS (
    SELECT field, CAST(ROW_NUMBER() OVER (ORDER BY field) - 1 AS INTEGER) AS field_code
    FROM (SELECT DISTINCT field FROM known WHERE field IS NOT NULL) f
)
SELECT CAST(n.w AS INTEGER) AS w, n.id, n.focal, {dialect.days.format('n.date')} AS day,
       CAST(year(n.date) AS INTEGER) AS year, n.journal, n.field,
       CAST(COALESCE(c.field_code, -1) AS INTEGER) AS field_code,
       CAST(n.author_count AS INTEGER) AS author_count, CAST(n.citation_count AS BIGINT) AS citation_count
FROM {numbered} n LEFT JOIN codes c ON c.field = n.field
ORDER BY w"""


#: Every work numbered in :data:`WORK_ORDER` (DuckDB; Spark numbers them with a distributed sort instead).
WORKS = works(f"(SELECT *, ROW_NUMBER() OVER (ORDER BY {WORK_ORDER}) - 1 AS w FROM ({work_rows()}) e)")


def edges(dialect: Dialect = DUCKDB) -> str:
    """Each citation once, without self-citations, ordered by citing then cited work."""
    return f"""
SELECT DISTINCT a.w AS citing, b.w AS cited, a.day AS citing_day
FROM (SELECT id, {dialect.explode.format('referenced_works')} AS ref FROM raw) r
JOIN works a ON a.id = r.id
JOIN works b ON b.id = {_short('r.ref')}
WHERE a.w <> b.w
ORDER BY citing, cited"""


def topics(dialect: Dialect = DUCKDB) -> str:
    """The focal papers' topics, ``pos`` 1 the primary one."""
    each = dialect.explode_indexed.format(items="topics", value="topic", pos="pos")
    return f"""
SELECT w.w, CAST(t.pos + 1 AS INTEGER) AS pos, t.topic.field.display_name AS field,
       t.topic.subfield.display_name AS subfield, t.topic.score AS score
FROM (SELECT id, {each} FROM known WHERE focal) t
JOIN works w ON w.id = t.id
ORDER BY w.w, pos"""


def concepts(dialect: Dialect = DUCKDB) -> str:
    """The focal papers' concept scores (those without a score left out)."""
    return f"""
SELECT w.w, c.concept.score AS score
FROM (SELECT id, {dialect.explode.format('concepts')} AS concept FROM known WHERE focal) c
JOIN works w ON w.id = c.id
WHERE c.concept.score IS NOT NULL
ORDER BY w.w"""


def countries(dialect: Dialect = DUCKDB) -> str:
    """The focal papers' authors' countries, one row per authorship and country."""
    return f"""
SELECT w.w, c.country
FROM (SELECT id, {dialect.explode.format('a.countries')} AS country
      FROM (SELECT id, {dialect.explode.format('authorships')} AS a FROM known WHERE focal) s) c
JOIN works w ON w.id = c.id
WHERE c.country IS NOT NULL
ORDER BY w.w"""


EDGES, TOPICS, CONCEPTS, COUNTRIES = edges(), topics(), concepts(), countries()


def focal_subfields(n_focal: int) -> str:
    """Each focal paper's primary-topic subfield id (NULL without one), in work order: its discipline for
    per-discipline weights."""
    return f"""
SELECT k.subfield_id FROM works w JOIN known k ON k.id = w.id WHERE w.w < {int(n_focal)} ORDER BY w.w"""


def texts(n_focal: int) -> str:
    """Title and abstract (the inverted index's JSON text) of the works that get an embedding: the focal papers
    and the snapshot's works they cite, in work order. Only a focal paper's abstract is read."""
    return f"""
SELECT w.w, w.focal, k.title, CASE WHEN w.focal THEN k.abstract_json END AS abstract_json
FROM works w JOIN known k ON k.id = w.id
WHERE w.focal OR w.w IN (SELECT cited FROM edges WHERE citing < {int(n_focal)})
ORDER BY w.w"""


# --- The index's aggregations: standard SQL over the flat tables (DuckDB and Spark). ---

def features(n_focal: int) -> str:
    """One row per focal paper (``w`` < ``n_focal``) with the raw values of dimensions A, B, E, F, G and the topic
    part of C (docs/index-dimensions.md); NULL where the in-memory engine has NaN, 0 where it counts nothing."""
    n = int(n_focal)
    return f"""
WITH breadth AS (
    SELECT e.citing AS w, COUNT(*) AS reference_count, COUNT(DISTINCT r.field) AS reference_fields,
           COUNT(DISTINCT r.journal) AS reference_journals, MAX(r.year) - MIN(r.year) AS reference_age_range
    FROM edges e JOIN works r ON r.w = e.cited
    WHERE e.citing < {n}
    GROUP BY e.citing
), topic AS (
    SELECT w, COUNT(DISTINCT field) AS topic_fields, COUNT(DISTINCT subfield) AS topic_span,
           MAX(CASE WHEN pos = 1 THEN score END) AS core_topic_score
    FROM topics GROUP BY w
), per_field AS (
    SELECT w, field, COUNT(*) AS c FROM topics WHERE field IS NOT NULL GROUP BY w, field
), named AS (
    SELECT w, SUM(c) AS total FROM per_field GROUP BY w
), entropy AS (
    SELECT p.w, -SUM((CAST(p.c AS DOUBLE) / n.total) * LN(CAST(p.c AS DOUBLE) / n.total)) AS topic_field_entropy
    FROM per_field p JOIN named n ON n.w = p.w GROUP BY p.w
), concept AS (
    SELECT w, MAX(score) AS core_concept_score, COUNT(score) AS concept_count FROM concepts GROUP BY w
), country AS (
    SELECT w, COUNT(DISTINCT country) AS country_count FROM countries GROUP BY w
)
SELECT f.w, f.id, f.citation_count, f.journal, f.author_count,
       COALESCE(b.reference_count, 0) AS reference_count, COALESCE(b.reference_fields, 0) AS reference_fields,
       COALESCE(b.reference_journals, 0) AS reference_journals, b.reference_age_range,
       COALESCE(t.topic_fields, 0) AS topic_fields, h.topic_field_entropy,
       c.core_concept_score, COALESCE(c.concept_count, 0) AS concept_count, t.core_topic_score,
       COALESCE(t.topic_span, 0) AS topic_span, COALESCE(k.country_count, 0) AS country_count
FROM works f
LEFT JOIN breadth b ON b.w = f.w
LEFT JOIN topic t ON t.w = f.w
LEFT JOIN entropy h ON h.w = f.w
LEFT JOIN concept c ON c.w = f.w
LEFT JOIN country k ON k.w = f.w
WHERE f.w < {n}
ORDER BY f.w"""


def reference_fields(lo: int, hi: int) -> str:
    """The references of focal papers ``lo`` .. ``hi``-1 with their field codes, ordered by paper then reference
    (dimension C's reference centroid, dispersion and bridge score)."""
    return f"""
SELECT e.citing AS w, e.cited AS ref, r.field_code
FROM edges e JOIN works r ON r.w = e.cited
WHERE e.citing >= {int(lo)} AND e.citing < {int(hi)}
ORDER BY e.citing, e.cited"""


def cd_paths(n_focal: int) -> str:
    """Focal paper -> reference -> citer paths of each focal paper, before the date filter: the CD stage's work
    per paper, from which it sizes its blocks."""
    return f"""
WITH citers AS (SELECT cited, COUNT(*) AS n FROM edges GROUP BY cited)
SELECT f.w, CAST(COALESCE(own.n, 0) + COALESCE(SUM(c.n), 0) AS BIGINT) AS paths
FROM works f
LEFT JOIN edges r ON r.citing = f.w
LEFT JOIN citers c ON c.cited = r.cited
LEFT JOIN citers own ON own.cited = f.w
WHERE f.w < {int(n_focal)}
GROUP BY f.w, own.n
ORDER BY f.w"""


def cd_counts(lo: int, hi: int, window: int | None) -> str:
    """The CD index's counts of focal papers ``lo`` .. ``hi``-1 (docs/index-dimensions.md#d-disruptiveness).

    The candidates of a focal paper f dated t_f are the works v dated t_f < t_v (<= t_f + window) that cite f or
    one of f's references; ``n_i`` cite f only, ``n_j`` f and a reference, ``n_k`` a reference only. A paper
    without candidates has no row (all three counts 0). An undated citer is never a candidate (its day is NULL).
    """
    later = "c.citing_day > f.day" + ("" if window is None else f" AND c.citing_day <= f.day + {int(window)}")
    return f"""
WITH focal AS (
    SELECT w, day FROM works WHERE w >= {int(lo)} AND w < {int(hi)}
), paths AS (
    SELECT f.w, c.citing AS v, 1 AS cites_focal, 0 AS cites_reference
    FROM focal f JOIN edges c ON c.cited = f.w
    WHERE {later}
    UNION ALL
    SELECT f.w, c.citing AS v, 0 AS cites_focal, 1 AS cites_reference
    FROM focal f JOIN edges r ON r.citing = f.w JOIN edges c ON c.cited = r.cited
    WHERE {later}
), candidates AS (
    SELECT w, v, MAX(cites_focal) AS cites_focal, MAX(cites_reference) AS cites_reference
    FROM paths GROUP BY w, v
)
SELECT w,
       CAST(SUM(CASE WHEN cites_focal = 1 AND cites_reference = 0 THEN 1 ELSE 0 END) AS BIGINT) AS n_i,
       CAST(SUM(CASE WHEN cites_focal = 1 AND cites_reference = 1 THEN 1 ELSE 0 END) AS BIGINT) AS n_j,
       CAST(SUM(CASE WHEN cites_focal = 0 THEN 1 ELSE 0 END) AS BIGINT) AS n_k
FROM candidates GROUP BY w ORDER BY w"""
