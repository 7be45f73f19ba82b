"""The one loader of user-supplied YAML and JSON files: a hostile file is refused in one line naming it, before
the object is built (billion laughs, merge-key bombs, deep nesting, FIFOs, huge files, non-UTF-8)."""

import os

import pytest

from scitaste_hf.bounded_load import MAX_DEPTH, load_json, load_yaml, parse_json, parse_yaml, read_text
from scitaste_hf.errors import ScitasteError


def _laughs(levels: int, width: int = 9) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_aliases_are_counted_expanded_and_refused_before_construction():
    # 9 levels of 9: 4e8 values once expanded, from 400 bytes; composing it is linear, so the refusal is immediate
    with pytest.raises(ScitasteError, match=r"^card x has more than 1,000,000 values once its aliases are expanded "
                                            r"\(line \d+\)$"):
        parse_yaml(_laughs(9), "card x")
    # merge keys copy the merged mapping's pairs in the constructor itself: doubled at each level
    merges = "m0: &m0 {k: v}\n" + "".join(f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}]}}\n" for i in range(1, 40))
    with pytest.raises(ScitasteError, match="once its aliases are expanded"):
        parse_yaml(merges, "x")
    # below the bound aliases are fine, and share one object as YAML says
    small = parse_yaml(_laughs(3, 3), "x")
    assert small["l2"] == [[["lol"] * 3] * 3] * 3 and small["l2"][0] is small["l1"]
    # expanded: the mapping, 3 keys, l0 (1 + 3), l1 (1 + 3 * 4), l2 (1 + 3 * 13): 61 nodes
    assert parse_yaml(_laughs(3, 3), "x", max_nodes=61) == small
    with pytest.raises(ScitasteError, match=r"x has more than 60 values once its aliases are expanded \(line 1\)"):
        parse_yaml(_laughs(3, 3), "x", max_nodes=60)


def test_a_document_that_holds_itself_is_refused():
    for text in ("a: &a [*a]", "&a {k: *a}", "- &a [1, [2, *a]]"):
        with pytest.raises(ScitasteError, match=r"^x holds an alias inside its own anchor \(line 1\)$"):
            parse_yaml(text, "x")


def test_nesting_is_bounded_in_both_formats():
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    for parse in (parse_json, parse_yaml):
        assert parse(ok, "x") is not None
        with pytest.raises(ScitasteError, match=rf"^x is nested more than {MAX_DEPTH} deep"):
            parse(deep, "x")
    # past the parsers' own limits: one line, no RecursionError
    with pytest.raises(ScitasteError, match=rf"^x is nested more than {MAX_DEPTH} deep$"):
        parse_json("[" * 200_000, "x")
    with pytest.raises(ScitasteError, match=r"^x is not valid YAML \(.*nesting depth"):
        parse_yaml("[" * 200_000, "x")
    with pytest.raises(ScitasteError, match=r"^x is not valid YAML"):
        parse_yaml("".join(" " * i + "- \n" for i in range(3000)), "x")


@pytest.mark.parametrize(("text", "message"), [
    ("[1, NaN]", r"NaN is not a JSON number"),
    ('{"a": -Infinity}', r"-Infinity is not a JSON number"),
    ("1" * 5000, r"Exceeds the limit \(4300 digits\)"),
    ('{"a": 1,}', r"Illegal trailing comma before end of object at line 1 column 8|Expecting property name"),
])
def test_json_that_is_not_standard_json(text, message):
    with pytest.raises(ScitasteError, match=rf"^w\.json is not valid JSON \(.*{message}"):
        parse_json(text, "w.json")
    assert parse_json("1" * 400, "x") == int("1" * 400)  # a large number is the caller's to bound
    with pytest.raises(ScitasteError, match=r"^x is not valid JSON \(a number of 5,000 characters is beyond a "):
        parse_json("1" * 5000, "x", parse_int=float)


@pytest.mark.parametrize("text", ['{"raw": {"a": 1e400}}', "[-1e999]", "[1E+309]"])
def test_a_json_number_beyond_a_float_is_refused_like_infinity(text):
    # Python reads 1e400 as inf, which a weights file's "raw" vector turned into "weight ...=nan"
    with pytest.raises(ScitasteError, match=r"^w\.json is not valid JSON \(-?1[eE]\+?\d+ is beyond a float's range\)$"):
        parse_json(text, "w.json")
    assert parse_json("[1e308, -1e-400]", "w.json") == [1e308, -0.0]


def test_a_repeated_key_is_refused_in_both_formats():
    # the last value would win silently: a taxonomy's second "biology:" dropped the first one's cells
    with pytest.raises(ScitasteError, match=r"^w\.json is not valid JSON \(the key 'a' is repeated in one object\)$"):
        parse_json('{"a": 1, "b": {"c": 2}, "a": 3}', "w.json")
    with pytest.raises(ScitasteError, match=r"the key 'c' is repeated"):
        parse_json('[{"c": 1, "c": 1}]', "w.json")
    for text, line in (("a: 1\nb: 2\na: 3\n", 3), ("a: 1\n'a': 2\n", 2), ("x:\n  - {k: 1, k: 2}\n", 2)):
        with pytest.raises(ScitasteError, match=rf"^t\.yaml repeats the key '\w' in one mapping \(line {line}\)$"):
            parse_yaml(text, "t.yaml")
    # one key in two mappings, a key and its string twin of another tag, and merge keys are not repeats
    assert parse_yaml("a: {k: 1}\nb: {k: 2}\n1: x\n'1': y\n", "t") == {"a": {"k": 1}, "b": {"k": 2}, 1: "x", "1": "y"}
    assert parse_yaml("m: &m {k: 1}\nn: {<<: *m, k: 2}\n", "t")["n"] == {"k": 2}


def test_a_yaml_document_of_too_many_nodes_is_refused_before_it_is_composed():
    # 2 million scalars in 4 MB: composing them took 37 s and 590 MB here, their events a tenth of that
    with pytest.raises(ScitasteError, match=r"^t\.yaml has more than 1,000 values$"):
        parse_yaml("[" + "1, " * 1000 + "1]", "t.yaml", max_nodes=1000)
    assert parse_yaml("[" + "1, " * 998 + "1]", "t.yaml", max_nodes=1000) == [1] * 999  # and the sequence: 1,000
    with pytest.raises(ScitasteError, match=r"^t\.yaml is not valid YAML \(.*line 1, column 6\)$"):
        parse_yaml("[1, ]]", "t.yaml")  # found by the count already: the same one line


def test_a_byte_order_mark_is_dropped(tmp_path):
    bom = tmp_path / "w.json"
    bom.write_bytes(b'\xef\xbb\xbf{"a": 1}\r\n')
    assert load_json(bom, "weights file") == {"a": 1}
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'\xef\xbb\xbf{"a": "\xe9"}')
    with pytest.raises(ScitasteError, match=r"bad\.json is not UTF-8 text \(byte 10 is 0xe9\); save it as UTF-8$"):
        load_json(bad, "weights file")


@pytest.mark.parametrize(("text", "message"), [
    (f"x: {'9' * 5000}", r"Exceeds the limit \(4300 digits\)"),
    ("{[1]: 2}", r"found unhashable key"),
    ("a: 1\n---\nb: 2", r"but found another document"),
    ("a: [unclosed", r"at line 2, column 1\)$"),
])
def test_yaml_errors_are_one_line(text, message):
    with pytest.raises(ScitasteError, match=rf"^t\.yaml is not valid YAML \(.*{message}") as error:
        parse_yaml(text, "t.yaml")
    assert "\n" not in str(error.value)


def test_files_that_are_not_regular_small_utf8_files(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # nobody writes it: a blocking open waits for ever
    with pytest.raises(ScitasteError, match=r"^weights file \S+fifo\.json is not a regular file"):
        load_json(fifo, "weights file")
    with pytest.raises(ScitasteError, match=r"^weights file \S+ is a folder$"):
        load_json(tmp_path, "weights file")
    with pytest.raises(ScitasteError, match=r"^weights file \S+none\.json not found$"):
        load_json(tmp_path / "none.json", "weights file")
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * 2000)
    with pytest.raises(ScitasteError, match=r"big\.yaml has 2,003 bytes, more than the 1,000 accepted$"):
        read_text(big, "taxonomy file", max_bytes=1000)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("name: M\xfcller\n".encode("latin-1"))
    with pytest.raises(ScitasteError, match=r"latin\.yaml is not UTF-8 text \(byte 7 is 0xfc\); save it as UTF-8$"):
        load_yaml(latin, "card")
    good = tmp_path / "good.yaml"
    good.write_text("name: Müller\nyear: 2024\n", encoding="utf-8")
    assert load_yaml(good, "card") == {"name": "Müller", "year": 2024}
    if os.geteuid() != 0:  # root reads anything
        good.chmod(0)
        with pytest.raises(ScitasteError, match=r"good\.yaml cannot be read \(Permission denied\)$"):
            load_yaml(good, "card")


def test_the_simulated_worlds_field_weights_file_is_read_within_bounds(tmp_path):
    from scitaste_hf.simworld.latent import load_field_weights

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ScitasteError, match=r"^field weights \S+fifo\.json is not a regular file"):
        load_field_weights(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000)
    with pytest.raises(ScitasteError, match=rf"^field weights \S+deep\.json is nested more than {MAX_DEPTH} deep$"):
        load_field_weights(deep)
    with pytest.raises(ScitasteError, match=r"^field weights \S+none\.json: neither a preset \(.*\) nor a file$"):
        load_field_weights(tmp_path / "none.json")


def test_an_unpaired_surrogate_escape_is_refused():
    # json reads "\ud800" as a lone surrogate, which every later UTF-8 write of it (a card, a report) fails on
    for text in ('{"\\ud800": 1}', '["ok", {"a": "x\\uDFFFy"}]'):
        with pytest.raises(ScitasteError, match=r"^w\.json is not valid JSON \(a \\u escape names half of a "
                                                r"surrogate pair"):
            parse_json(text, "w.json")
    assert parse_json('["\\ud83d\\ude00", "\\u00e9"]', "w.json") == ["\U0001f600", "\u00e9"]  # a pair is one
