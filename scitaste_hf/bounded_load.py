"""YAML and JSON files a user hands the package, read within bounds: the one loader of every such file.

A configuration file is small, but a hostile one need not be: a FIFO blocks a reader forever, a file of
gigabytes fills memory, a JSON array nested 200,000 deep overflows the parser's recursion, and a YAML "billion
laughs" (anchors whose aliases nest: ``b: [*a, *a, ...]``, ``c: [*b, *b, ...]``) composes in a few hundred bytes
into a document that is small in memory, because aliases share one object, but whose expanded size grows
exponentially with its levels: the first ``str()`` of it, or a walk over it, takes all the machine's memory.
A YAML merge key (``<<: [*a, *a]``) expands in the constructor itself.

Every bound is checked before the document is handed on, and a YAML document's before it is even constructed, with
a one-line :class:`~scitaste_hf.errors.ScitasteError` that names the file:

- :func:`read_text`: a regular file (a FIFO, a device or a folder is refused without opening it for a blocking
  read) of at most :data:`MAX_BYTES` bytes, decoded as UTF-8 (a leading byte-order mark, which some editors
  write, is dropped);
- :func:`parse_json`: nesting at most :data:`MAX_DEPTH` deep (the parser stops at the interpreter's recursion
  limit; a JSON document's size is its text's: it has no expansion), standard JSON only (``NaN`` and ``Infinity``
  are refused, and so is a number that only a float's infinity holds, ``1e400``), each key once per object;
- :func:`parse_yaml`: the parser's events are counted first (at most :data:`MAX_NODES`: composing a node costs
  some ten times as much as parsing it, and a 32 MiB file holds 16 million), then the node graph is composed
  (linear in the text: an alias is a reference) and measured with every alias expanded, at most :data:`MAX_DEPTH`
  deep and :data:`MAX_NODES` nodes, with no alias inside its own anchor and each key once per mapping, before it
  is constructed;
- :func:`load_json` and :func:`load_yaml`: a file read and parsed, for a caller that has only a path.

Use::

    from scitaste_hf.bounded_load import load_json, load_yaml, parse_yaml

    counts = load_json(path, "citation counts")        # ScitasteError: "citation counts <path> is ..."
    front = parse_yaml(text, f"card {path}")           # text already in hand (a card's front matter)

The bounds are keyword arguments for a reader whose files are legitimately larger (``max_bytes=``); its module
says why. What the document holds (its keys and types) is the caller's to check.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from scitaste_hf.errors import InvalidInput, ScitasteError, first_line, short_repr

#: Largest file read, in bytes. The largest configuration file the package writes is a release's
#: ``citation_counts.json``, about 40 bytes a paper: 32 MiB holds 800,000 papers, far above any release, while a
#: taxonomy, a weights file or a card's front matter is a few kilobytes. Reading 32 MiB takes well under a second.
MAX_BYTES = 32 * 2**20
#: Deepest nesting of lists and mappings. The package's own files nest at most 7 deep (a card's front matter: the
#: provenance's weights per discipline); 64 leaves room for any hand-written file and stays far below the recursion
#: of the parsers and of every consumer that walks the document.
MAX_DEPTH = 64
#: Most nodes of a YAML document with every alias expanded, the size any consumer that walks or prints it meets.
#: The packaged taxonomies are about 1,000 nodes and a card's front matter a few hundred; a million stays a few
#: seconds and some tens of megabytes to walk, while a billion-laughs file of a few hundred bytes expands past it
#: within a dozen levels and is refused on composition.
MAX_NODES = 1_000_000


def read_text(path: str | Path, what: str, *, max_bytes: int = MAX_BYTES) -> str:
    """The text of a regular file of at most ``max_bytes`` bytes, decoded as UTF-8.

    Parameters
    ----------
    path : path
        The file.
    what : str
        What messages call the file (``"taxonomy file"``); each reads ``"<what> <path> is not UTF-8 text ..."``.
    max_bytes : int
        The largest size accepted (default :data:`MAX_BYTES`).

    Raises
    ------
    ScitasteError
        When the file is missing or unreadable, not a regular file, larger than ``max_bytes``, or not UTF-8.
    """
    source = f"{what} {path}"
    try:
        # Non-blocking, so that opening a FIFO returns at once (its type is refused below); no effect on a file.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ScitasteError(f"{source} not found") from None
    except OSError as exc:
        raise ScitasteError(f"{source} cannot be read ({exc.strerror})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a FIFO, socket or device)"
        raise ScitasteError(f"{source} is {kind}")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > max_bytes:
            raise InvalidInput(f"{source} has {info.st_size:,} bytes, more than the {max_bytes:,} accepted")
        try:
            data = handle.read(max_bytes + 1)  # a file that grew since fstat is still bounded
        except OSError as exc:
            raise ScitasteError(f"{source} cannot be read ({exc.strerror})") from None
    if len(data) > max_bytes:
        raise InvalidInput(f"{source} has more than the {max_bytes:,} bytes accepted")
    skip = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = skip + exc.start  # counted in the file, mark included
        raise InvalidInput(f"{source} is not UTF-8 text (byte {at:,} is {data[at]:#04x}); save it as UTF-8") from None


def _deeper_than(value: Any, max_depth: int) -> bool:
    """Whether parsed JSON nests lists and objects more than ``max_depth`` deep (iterative: any depth)."""
    stack = [(value, 1)] if isinstance(value, dict | list) else []
    while stack:
        item, level = stack.pop()
        if level > max_depth:
            return True
        stack.extend((c, level + 1) for c in (item.values() if isinstance(item, dict) else item)
                     if isinstance(c, dict | list))
    return False


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    """A JSON number as a float; one beyond a float's range (``1e400``, which Python reads as ``inf``) is refused
    like ``Infinity``, so that no caller computes with an infinity a file did not spell."""
    value = float(text)
    if value in (math.inf, -math.inf):
        raise ValueError(f"{text if len(text) <= 40 else f'a number of {len(text):,} characters'} is beyond a "
                         "float's range")
    return value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are unique: ``json`` keeps the last of a repeated key, silently losing the rest."""
    data = dict(pairs)
    if len(data) != len(pairs):
        seen: set[str] = set()
        repeated = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"the key {short_repr(repeated)} is repeated in one object")
    return data


def parse_json(text: str, source: str, *, max_depth: int = MAX_DEPTH, parse_int: Any = None) -> Any:
    """A JSON document nested at most ``max_depth`` deep (the parser itself stops at the interpreter's recursion
    limit, and the parsed document is measured before it is returned).

    Parameters
    ----------
    text : str
        The document.
    source : str
        What messages call it (``"weights file w.json"``).
    max_depth : int
        The deepest nesting accepted (default :data:`MAX_DEPTH`).
    parse_int : callable, optional
        As for :func:`json.loads`; ``float`` refuses an integer too large for a float, as any number is.

    Raises
    ------
    ScitasteError
        On nesting deeper than ``max_depth``, ``NaN``, ``Infinity`` or a number beyond a float's range, a key
        repeated in one object (JSON would keep its last value), an unpaired surrogate escape (``"\\ud800"``,
        which no UTF-8 file can hold), an integer of more digits than Python converts, or text that is not JSON.
    """
    too_deep = ScitasteError(f"{source} is nested more than {max_depth} deep")
    to_int = _finite_float if parse_int is float else parse_int
    try:
        data = json.loads(text, parse_int=to_int, parse_float=_finite_float, parse_constant=_refuse_constant,
                          object_pairs_hook=_unique_keys)
    except RecursionError:  # the parser's own bound on nesting (the interpreter's recursion limit, 1,000)
        raise too_deep from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{source} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except ValueError as exc:  # NaN, Infinity or beyond a float, a repeated key, an integer of over 4,300 digits
        raise InvalidInput(f"{source} is not valid JSON ({first_line(exc)})") from None
    if _deeper_than(data, max_depth):
        raise too_deep
    if "\\u" in text and _lone_surrogate(data):
        raise InvalidInput(f"{source} is not valid JSON (a \\u escape names half of a surrogate pair, which is no "
                            "character: it cannot be written as UTF-8)")
    return data


def _lone_surrogate(data: Any) -> bool:
    """Whether a string of parsed JSON holds an unpaired surrogate (only a ``\\ud800``-style escape makes one)."""
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _measure(root: Any, source: str, max_depth: int, max_nodes: int) -> None:
    """Refuse a composed YAML graph that, with its aliases expanded, is deeper than ``max_depth``, has more than
    ``max_nodes`` nodes, or holds an alias inside its own anchor (a document that contains itself) or a mapping
    that repeats a key.

    Iterative and memoised per node: an anchored node is measured once however many aliases name it, so the
    measure is linear in the composed graph while the sizes it adds up are the expanded ones.
    """
    import yaml

    def children(node: Any) -> list[Any]:
        if isinstance(node, yaml.MappingNode):
            return [n for pair in node.value for n in pair]
        return node.value if isinstance(node, yaml.SequenceNode) else []

    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_nodes: set[int] = set()  # the nodes whose children are being measured: the path from the root
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            below = children(node)
            # a scalar (no entry) counts 1 and is 1 deep
            size[key] = 1 + sum(size.get(id(c), 1) for c in below)
            depth[key] = 1 + max((depth.get(id(c), 1) for c in below), default=0)
            if size[key] > max_nodes:
                raise InvalidInput(f"{source} has more than {max_nodes:,} values once its aliases are expanded "
                                    f"(line {node.start_mark.line + 1})")
            if depth[key] > max_depth:
                raise InvalidInput(f"{source} is nested more than {max_depth} deep (line {node.start_mark.line + 1})")
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise InvalidInput(f"{source} holds an alias inside its own anchor (line {node.start_mark.line + 1})")
        open_nodes.add(key)
        if isinstance(node, yaml.MappingNode):
            _refuse_repeated_keys(node, source)
        stack.append((node, True))
        stack.extend((c, False) for c in children(node) if not isinstance(c, yaml.ScalarNode))


def _refuse_repeated_keys(node: Any, source: str) -> None:
    """Refuse a mapping that spells one key twice: YAML keeps the last value and silently loses the others (a
    taxonomy's second ``biology:`` would drop the first one's cells). Keys are compared as written, with their
    resolved tag: ``a`` and ``"a"`` are one key, ``1`` and ``"1"`` two."""
    import yaml

    seen: set[tuple[str, str]] = set()
    for key, _ in node.value:
        if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
            if (key.tag, key.value) in seen:
                raise InvalidInput(f"{source} repeats the key {short_repr(key.value)} in one mapping "
                                    f"(line {key.start_mark.line + 1})")
            seen.add((key.tag, key.value))


def _count_events(text: str, source: str, max_nodes: int) -> None:
    """Refuse a document of more than ``max_nodes`` nodes before it is composed: the parser's events cost a tenth
    of the composer's nodes, and every node and alias is one event. An expanded count is at least this one."""
    import yaml

    counted = (yaml.ScalarEvent, yaml.AliasEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        n = 0
        while loader.check_event():
            if isinstance(loader.get_event(), counted):
                n += 1
                if n > max_nodes:
                    raise InvalidInput(f"{source} has more than {max_nodes:,} values")
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{source} is not valid YAML ({_yaml_problem(exc)})") from None
    finally:
        loader.dispose()


def _yaml_problem(exc: Exception) -> str:
    """A YAML error in one line: its problem and where (PyYAML's message spans several lines)."""
    problem, mark = getattr(exc, "problem", None), getattr(exc, "problem_mark", None)
    if not problem:
        return first_line(exc)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark else problem


def parse_yaml(text: str, source: str, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Any:
    """A YAML document (safe tags only), its expanded size and depth bounded before it is constructed.

    Parameters
    ----------
    text : str
        The document.
    source : str
        What messages call it (``"taxonomy file t.yaml"``).
    max_depth, max_nodes : int
        The deepest nesting and the most nodes accepted, aliases expanded (defaults :data:`MAX_DEPTH`,
        :data:`MAX_NODES`).

    Raises
    ------
    ScitasteError
        On text that is not YAML or holds more than one document, a graph beyond the bounds or holding itself,
        a key repeated in one mapping, or a value the constructor refuses (an integer of more digits than Python
        converts).
    """
    import yaml

    _count_events(text, source, max_nodes)
    # The C parser when built: the packaged taxonomy is read whenever scitaste_hf.schema is imported.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.YAMLError as exc:
            raise InvalidInput(f"{source} is not valid YAML ({_yaml_problem(exc)})") from None
        if node is None:
            return None
        _measure(node, source, max_depth, max_nodes)
        try:
            return loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise InvalidInput(f"{source} is not valid YAML ({_yaml_problem(exc)})") from None
        except (ValueError, TypeError) as exc:  # an integer of more than 4,300 digits
            raise InvalidInput(f"{source} is not valid YAML ({first_line(exc)})") from None
    finally:
        loader.dispose()


def load_json(path: str | Path, what: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH,
              parse_int: Any = None) -> Any:
    """:func:`parse_json` of :func:`read_text`: a JSON file within every bound; messages read ``"<what> <path> is
    ..."``."""
    text = read_text(path, what, max_bytes=max_bytes)
    return parse_json(text, f"{what} {path}", max_depth=max_depth, parse_int=parse_int)


def load_yaml(path: str | Path, what: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH,
              max_nodes: int = MAX_NODES) -> Any:
    """:func:`parse_yaml` of :func:`read_text`: a YAML file within every bound; messages read ``"<what> <path> is
    ..."``."""
    text = read_text(path, what, max_bytes=max_bytes)
    return parse_yaml(text, f"{what} {path}", max_depth=max_depth, max_nodes=max_nodes)
