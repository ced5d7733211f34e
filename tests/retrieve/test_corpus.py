"""Corpus loading, chunking, and the errors a bad corpus raises."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flare.errors import InputError
from flare.retrieve.corpus import MetaKind, MetaSchema, chunk, load_corpus, read_documents
from flare.text import HAN
from flare.types import Passage


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    return path


def words(n: int, sentence: int = 12, start: int = 0) -> str:
    """``n`` distinct words as sentences of ``sentence`` words each."""
    out = []
    for i in range(start, start + n):
        end = "." if (i - start + 1) % sentence == 0 or i == start + n - 1 else ""
        out.append(f"w{i}{end}")
    return " ".join(out)


def assert_input_error(err: pytest.ExceptionInfo[InputError], *needles: str) -> None:
    message = err.value.message
    assert "\n" not in message
    assert err.value.hint
    for needle in needles:
        assert needle in message


# ---------------------------------------------------------------- folders


def test_folder_is_read_recursively_with_relative_ids_and_titles(tmp_path: Path) -> None:
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "a.md").write_text("Intro line\n\n# The Title #\n\nBody text.", "utf-8")
    (tmp_path / "sub" / "b.txt").write_text("Plain text file.", "utf-8")
    (tmp_path / "sub" / "deeper" / "c.md").write_text("## 中文标题\n内容。", "utf-8")
    (tmp_path / "ignored.pdf").write_bytes(b"%PDF-1.4 \x00\x01")
    (tmp_path / "empty.txt").write_text("  \n", "utf-8")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.txt").write_text("hidden", "utf-8")
    docs = read_documents(tmp_path)
    assert [(d.id, d.title) for d in docs] == [
        ("a.md", "The Title"),
        ("sub/b.txt", "b"),
        ("sub/deeper/c.md", "中文标题"),
    ]
    assert docs[1].text == "Plain text file."
    assert docs[0].meta == {}


def test_single_text_file_and_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "note.txt"
    path.write_bytes("\ufeffHello there.".encode())
    assert load_corpus(path) == [Passage("note.txt", "Hello there.", "note")]


def test_binary_file_is_rejected_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("fine", "utf-8")
    (tmp_path / "bad.txt").write_bytes(b"line one\nline two\x00\x01\x02")
    with pytest.raises(InputError) as err:
        load_corpus(tmp_path)
    assert_input_error(err, "bad.txt:2", "binary")


def test_non_utf8_file_is_rejected_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "latin.md").write_bytes(b"first\nsecond\ncaf\xe9\n")
    with pytest.raises(InputError) as err:
        load_corpus(tmp_path)
    assert_input_error(err, "latin.md:3", "UTF-8")


def test_empty_folder_is_an_empty_corpus(tmp_path: Path) -> None:
    (tmp_path / "blank.md").write_text("\n\n", "utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(tmp_path)
    assert_input_error(err, "empty")


@pytest.mark.parametrize("name", ["corpus.json", "paper.pdf", "README"])
def test_unsupported_single_file_extension(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("{}", "utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(tmp_path / name)
    assert_input_error(err, name, "unsupported")


def test_missing_path(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load_corpus(tmp_path / "nope")
    assert_input_error(err, "nope")


# ---------------------------------------------------------------- jsonl


def test_jsonl_documents_with_meta(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [
            {"id": "d1", "title": "One", "text": "Text one.", "meta": {"year": 2024, "acl": ["a"]}},
            {"id": 7, "text": "Seven.", "origin": "extra keys are ignored"},
        ],
    )
    path.write_text(path.read_text("utf-8") + "\n   \n", "utf-8")  # trailing blank lines
    assert load_corpus(path) == [
        Passage("d1", "Text one.", "One", {"year": 2024, "acl": ["a"]}),
        Passage("7", "Seven.", ""),
    ]


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ('{"id": "x", "text": "ok"', "malformed JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"text": "no id"}', "missing 'id'"),
        ('{"id": "", "text": "blank id"}', "'id'"),
        ('{"id": "x"}', "missing 'text'"),
        ('{"id": "x", "text": 5}', "'text' must be"),
        ('{"id": "x", "text": "t", "title": 3}', "'title'"),
        ('{"id": "x", "text": "t", "meta": [1]}', "'meta' must be an object"),
        ('{"id": "x", "text": "t", "meta": {"a": {"b": 1}}}', "unsupported type dict"),
        ('{"id": "x", "text": "t", "meta": {"a": null}}', "unsupported type NoneType"),
        ('{"id": "x", "text": "t", "meta": {"a": [1, "b"]}}', "mixes"),
        ('{"id": "x", "text": "t", "meta": {"a": [[1]]}}', "unsupported type list"),
        ('{"id": "x", "text": "t", "meta": {"a": NaN}}', "finite"),
        ('{"id": "x", "text": "t", "meta": {"a": 99999999999999999999}}', "64 bits"),
    ],
)
def test_bad_jsonl_line_names_file_and_line(tmp_path: Path, line: str, needle: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "first", "text": "fine"}\n\n' + line + "\n", "utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert_input_error(err, "c.jsonl:3", needle)


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    rows = [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}, {"id": "a", "text": "z"}]
    with pytest.raises(InputError) as err:
        load_corpus(write_jsonl(tmp_path / "c.jsonl", rows))
    assert_input_error(err, "c.jsonl:3", "duplicate id 'a'", "line 1")


@pytest.mark.parametrize(
    ("first", "second"),
    [(2024, "2024"), (1, 1.5), (True, 1), ("a", ["a"]), (["a"], [1]), (["a"], "a"), (5, [])],
)
def test_meta_field_type_must_agree_across_documents(tmp_path: Path, first: Any, second: Any) -> None:
    rows = [
        {"id": "a", "text": "x", "meta": {"f": first}},
        {"id": "b", "text": "y", "meta": {"f": second}},
    ]
    with pytest.raises(InputError) as err:
        load_corpus(write_jsonl(tmp_path / "c.jsonl", rows))
    assert_input_error(err, "c.jsonl:2", "'f'", "c.jsonl:1")


def test_empty_lists_agree_with_any_list_type() -> None:
    schema = MetaSchema()
    schema.add({"acl": [], "tags": []}, "doc 1")
    schema.add({"acl": ["hr"]}, "doc 2")
    schema.add({"acl": []}, "doc 3")
    assert schema.fields == {
        "acl": MetaKind("str", is_list=True),
        "tags": MetaKind("str", is_list=True),
    }


def test_non_utf8_jsonl_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a", "text": "x"}\n{"id": "b", "text": "caf\xe9"}\n')
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert_input_error(err, "c.jsonl:2", "UTF-8")


def test_jsonl_with_only_blank_lines_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n\n", "utf-8")
    with pytest.raises(InputError) as err:
        load_corpus(path)
    assert_input_error(err, "empty")


# ---------------------------------------------------------------- chunking


def test_short_document_keeps_its_id() -> None:
    doc = Passage("doc", words(100), "T", {"year": 1})
    assert chunk(doc) == [doc]


def test_long_document_is_cut_at_sentence_ends_into_about_100_words() -> None:
    doc = Passage("doc", words(450, sentence=15), "Title", {"acl": ["hr"]})
    parts = chunk(doc)
    assert [p.id for p in parts] == [f"doc#{i}" for i in range(len(parts))]
    assert len(parts) == 5
    for p in parts:
        assert 60 <= len(p.text.split()) <= 100
        assert p.text.endswith(".")
        assert (p.title, p.meta) == ("Title", {"acl": ["hr"]})
    assert " ".join(p.text for p in parts).split() == doc.text.split()


def test_pieces_are_balanced_instead_of_leaving_a_tiny_tail() -> None:
    parts = chunk(Passage("d", words(130, sentence=10)))
    assert [len(p.text.split()) for p in parts] == [70, 60]


def test_a_sentence_longer_than_the_limit_is_cut_between_words() -> None:
    doc = Passage("d", " ".join(f"w{i}" for i in range(250)))
    parts = chunk(doc, max_words=100)
    assert [len(p.text.split()) for p in parts] == [100, 100, 50]


def test_abbreviations_do_not_end_sentences() -> None:
    text = "The U.S. team met Dr. Smith at noon. " * 20
    parts = chunk(Passage("d", text.strip()), max_words=20)
    for p in parts:
        assert p.text.startswith("The U.S.") and p.text.endswith("noon.")


def test_chinese_is_cut_at_about_150_characters_at_sentence_ends() -> None:
    sentence = "检索增强生成在模型没有把握的时候才去查找资料。"  # 22 Han characters + 。
    doc = Passage("zh", sentence * 20)
    parts = chunk(doc)
    assert len(parts) == 4  # whole sentences: 5 per piece (110 characters), not 6 + 6 + 6 + 2
    for p in parts:
        han = len(re.findall(f"[{HAN}]", p.text))
        assert 100 <= han <= 150
        assert p.text.endswith("。")
    assert "".join(p.text for p in parts) == doc.text


def test_mixed_language_paragraphs_break_at_blank_lines() -> None:
    text = "\n\n".join([words(60, sentence=100), "中文段落没有句号" * 5, words(60, start=60)])
    parts = chunk(Passage("mix", text))
    assert len(parts) >= 2
    assert all(p.text == p.text.strip() for p in parts)


def test_chunk_ids_that_collide_with_another_document_are_rejected(tmp_path: Path) -> None:
    rows = [{"id": "a", "text": words(150)}, {"id": "a#1", "text": "short"}]
    with pytest.raises(InputError) as err:
        load_corpus(write_jsonl(tmp_path / "c.jsonl", rows))
    assert_input_error(err, "'a#1'")


def test_max_words_must_be_positive() -> None:
    with pytest.raises(InputError):
        chunk(Passage("d", "x"), max_words=0)
