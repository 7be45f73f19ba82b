"""The second-level taxonomy of the six disciplines, as data (``config/taxonomy.yaml``), validated on load.

Physics sub-disciplines carry what the four-stage classification cascade matches (arXiv classes, journal
bibstems, controlled keywords, title terms); the others are collection cells anchored to an OpenAlex
subfield and a keyword set. Every cell names an OpenAlex subfield. The dataset builder and the simulated
world read the same file.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DISCIPLINES

#: Sub-disciplines per discipline (paper Table 2): eight everywhere, seven in medicine.
EXPECTED_COUNTS = {"physics": 8, "mathematics": 8, "chemistry": 8, "biology": 8, "medicine": 7, "finance": 8}


@dataclass(frozen=True)
class SubDiscipline:
    """One cell of the taxonomy."""

    id: str
    name: str
    discipline: str
    keywords: tuple[str, ...]
    arxiv_classes: tuple[str, ...] = ()
    bibstems: tuple[str, ...] = ()
    title_terms: tuple[str, ...] = ()
    openalex_subfield: int = 0

    @property
    def subfield_id(self) -> str:
        """The OpenAlex subfield as OpenAlex writes it in ``primary_topic.subfield.id``."""
        return f"https://openalex.org/subfields/{self.openalex_subfield}"


@dataclass(frozen=True)
class Taxonomy:
    """All sub-disciplines, in file order."""

    cells: tuple[SubDiscipline, ...]

    def of(self, discipline: str) -> list[SubDiscipline]:
        """The sub-disciplines of one discipline."""
        return [c for c in self.cells if c.discipline == discipline]

    def get(self, cell_id: str) -> SubDiscipline:
        """One sub-discipline by id."""
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        raise ScitasteError(f"unknown sub-discipline {cell_id!r}")


def parse_taxonomy(data: object, source: str = "taxonomy") -> Taxonomy:
    """Validate a parsed taxonomy document and build the :class:`Taxonomy`.

    Raises
    ------
    ScitasteError
        On an unknown or missing discipline, a duplicate sub-discipline id, a wrong number of
        sub-disciplines, a physics cell without cascade data, or another cell without an OpenAlex subfield.
    """
    if not isinstance(data, dict):
        raise ScitasteError(f"{source}: expected a mapping of discipline to sub-disciplines")
    unknown = sorted(set(data) - set(DISCIPLINES))
    if unknown:
        raise ScitasteError(f"{source}: unknown discipline {unknown[0]!r}; expected {', '.join(DISCIPLINES)}")
    missing = [d for d in DISCIPLINES if d not in data]
    if missing:
        raise ScitasteError(f"{source}: discipline {missing[0]!r} is missing")
    cells, seen = [], set()
    for discipline in DISCIPLINES:
        entries = data[discipline]
        if not isinstance(entries, list) or len(entries) != EXPECTED_COUNTS[discipline]:
            count = len(entries) if isinstance(entries, list) else 0
            raise ScitasteError(f"{source}: {discipline} needs {EXPECTED_COUNTS[discipline]} sub-disciplines, "
                                f"has {count}")
        for entry in entries:
            if not isinstance(entry, dict) or not entry.get("id") or not entry.get("name"):
                raise ScitasteError(f"{source}: every {discipline} sub-discipline needs an id and a name")
            cell_id = str(entry["id"])
            if cell_id in seen:
                raise ScitasteError(f"{source}: duplicate sub-discipline id {cell_id!r}")
            seen.add(cell_id)
            keywords = tuple(str(k).lower() for k in entry.get("keywords") or ())
            if not keywords:
                raise ScitasteError(f"{source}: {cell_id} has no keywords")
            if discipline == "physics" and not (entry.get("arxiv_classes") and entry.get("bibstems")
                                                and entry.get("title_terms")):
                raise ScitasteError(f"{source}: {cell_id} needs arxiv_classes, bibstems and title_terms")
            if not isinstance(entry.get("openalex_subfield"), int):
                raise ScitasteError(f"{source}: {cell_id} needs an integer openalex_subfield")
            cells.append(SubDiscipline(
                id=cell_id, name=str(entry["name"]), discipline=discipline, keywords=keywords,
                arxiv_classes=tuple(entry.get("arxiv_classes") or ()), bibstems=tuple(entry.get("bibstems") or ()),
                title_terms=tuple(str(t).lower() for t in entry.get("title_terms") or ()),
                openalex_subfield=entry.get("openalex_subfield"),
            ))
    return Taxonomy(tuple(cells))


def load_taxonomy(path: str | Path | None = None) -> Taxonomy:
    """Load and validate a taxonomy YAML file; the packaged one (paper Table 2) when ``path`` is None."""
    import yaml

    if path is None:
        return _default()
    try:
        data = yaml.safe_load(Path(path).read_text("utf-8"))
    except FileNotFoundError:
        raise ScitasteError(f"taxonomy file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise ScitasteError(f"taxonomy file {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    return parse_taxonomy(data, str(path))


@cache
def _default() -> Taxonomy:
    import yaml

    text = resources.files("scitaste_hf").joinpath("config/taxonomy.yaml").read_text("utf-8")
    return parse_taxonomy(yaml.safe_load(text), "config/taxonomy.yaml")
