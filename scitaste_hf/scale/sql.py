"""Every SQL statement of the index at scale, in one place (docs/scale.md#the-tables).

Two kinds:

* **Reading the snapshot** (:func:`flatten_records` .. :func:`texts`) turns OpenAlex's nested records into flat
  tables. It uses DuckDB's list functions (``unnest``, ``generate_subscripts``, ``len``), which Spark spells
  ``explode``/``posexplode``/``size``: an engine on another dialect writes the same tables its own way.
* **The index's aggregations** (:func:`features`, :func:`reference_fields`, :func:`cd_paths`,
  :func:`cd_counts`) read only those flat tables, with joins, ``GROUP BY``, ``COUNT(DISTINCT ...)``, ``CASE`` and
  ``LN``: standard SQL that DuckDB and Spark SQL both run as written.

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

#: Columns read from each work record: a DuckDB ``read_json`` column spec (the records' nesting, only what the
#: index needs). Parquet data files carry these columns natively.
RECORD_COLUMNS: dict[str, str] = {
    "id": "VARCHAR",
    "title": "VARCHAR",
    "display_name": "VARCHAR",
    "publication_date": "VARCHAR",
    "publication_year": "INTEGER",
    "type": "VARCHAR",
    "cited_by_count": "BIGINT",
    "referenced_works": "VARCHAR[]",
    "primary_location": "STRUCT(source STRUCT(issn_l VARCHAR, display_name VARCHAR))",
    "primary_topic": "STRUCT(field STRUCT(id VARCHAR, display_name VARCHAR), "
                     "subfield STRUCT(id VARCHAR, display_name VARCHAR))",
    "topics": "STRUCT(score DOUBLE, field STRUCT(display_name VARCHAR), subfield STRUCT(display_name VARCHAR))[]",
    "concepts": "STRUCT(score DOUBLE)[]",
    "authorships": "STRUCT(countries VARCHAR[])[]",
    "abstract_inverted_index": "JSON",
}


def _short(expr: str) -> str:
    """The last segment of an OpenAlex id or URL (``W123`` of ``https://openalex.org/W123``)."""
    return f"regexp_extract({expr}, '[^/]*$')"


def flatten_records(source: str) -> str:
    """One row per work record of ``source`` (a relation: ``read_json(...)`` or ``read_parquet(...)``), with the
    fields the index and the focal filter read; lists stay lists. The same reading as the in-memory engine's
    (:func:`scitaste_hf.sources.openalex.parse_work`): the title falls back to the display name, the journal is
    the ISSN-L or else the source's name, no authorship means an unknown author count."""
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
       CASE WHEN len(authorships) > 0 THEN len(authorships) END AS author_count,
       referenced_works, topics, concepts, authorships,
       CAST(abstract_inverted_index AS VARCHAR) AS abstract_json
FROM {source}"""


DUPLICATE_IDS = "SELECT id FROM raw GROUP BY id HAVING COUNT(*) > 1 ORDER BY id LIMIT 5"
MISSING_FOCAL_IDS = "SELECT id FROM focal_ids WHERE id NOT IN (SELECT id FROM raw) ORDER BY id LIMIT 5"
COUNT_MISSING_FOCAL_IDS = "SELECT COUNT(*) FROM focal_ids WHERE id NOT IN (SELECT id FROM raw)"


def known_works(focal: str) -> str:
    """The snapshot's works with a ``focal`` flag (``focal``: a SQL condition over the flattened columns)."""
    return f"SELECT *, COALESCE({focal}, FALSE) AS focal FROM raw"


UNDATED_FOCAL = "SELECT id FROM known WHERE focal AND publication_date IS NULL AND year IS NULL ORDER BY id LIMIT 1"

#: Every work numbered: focal papers, then the snapshot's other works, then the references outside it, each
#: group in id order.
WORKS = f"""
WITH outside AS (
    SELECT DISTINCT {_short('ref')} AS id
    FROM (SELECT unnest(referenced_works) AS ref FROM raw)
    WHERE {_short('ref')} NOT IN (SELECT id FROM known)
), everything AS (
    SELECT id, focal, TRUE AS inside,
           CASE WHEN focal THEN COALESCE(publication_date, make_date(year, 1, 1)) ELSE publication_date END AS date,
           journal, field, author_count, COALESCE(citation_count, 0) AS citation_count
    FROM known
    UNION ALL
    SELECT id, FALSE, FALSE, NULL, NULL, NULL, NULL, 0 FROM outside
), numbered AS (
    SELECT *, CAST(ROW_NUMBER() OVER (ORDER BY focal DESC, inside DESC, id) - 1 AS INTEGER) AS w FROM everything
)
SELECT w, id, focal, CAST(date - DATE '1970-01-01' AS INTEGER) AS day, CAST(year(date) AS INTEGER) AS year,
       journal, field,
       CAST(CASE WHEN field IS NULL THEN -1 ELSE DENSE_RANK() OVER (ORDER BY field) - 1 END AS INTEGER) AS field_code,
       CAST(author_count AS INTEGER) AS author_count, CAST(citation_count AS BIGINT) AS citation_count
FROM numbered ORDER BY w"""

#: Each citation once, without self-citations, ordered by citing then cited work.
EDGES = f"""
SELECT DISTINCT a.w AS citing, b.w AS cited, a.day AS citing_day
FROM (SELECT id, unnest(referenced_works) AS ref FROM raw) r
JOIN works a ON a.id = r.id
JOIN works b ON b.id = {_short('r.ref')}
WHERE a.w <> b.w
ORDER BY citing, cited"""

TOPICS = """
SELECT w.w, t.pos, t.topic.field.display_name AS field, t.topic.subfield.display_name AS subfield,
       t.topic.score AS score
FROM (SELECT id, unnest(topics) AS topic, generate_subscripts(topics, 1) AS pos FROM known WHERE focal) t
JOIN works w ON w.id = t.id
ORDER BY w.w, t.pos"""

CONCEPTS = """
SELECT w.w, c.concept.score AS score
FROM (SELECT id, unnest(concepts) AS concept FROM known WHERE focal) c
JOIN works w ON w.id = c.id
WHERE c.concept.score IS NOT NULL
ORDER BY w.w"""

COUNTRIES = """
SELECT w.w, c.country
FROM (SELECT id, unnest(a.countries) AS country
      FROM (SELECT id, unnest(authorships) AS a FROM known WHERE focal)) c
JOIN works w ON w.id = c.id
WHERE c.country IS NOT NULL
ORDER BY w.w"""


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
    SELECT p.w, -SUM((p.c * 1.0 / n.total) * LN(p.c * 1.0 / n.total)) AS topic_field_entropy
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
