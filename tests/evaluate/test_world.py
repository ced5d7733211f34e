"""The fictional evaluation world: determinism, ground truth, invented names, multi-hop, truth metrics."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flare import build_retriever, load_corpus, open_retriever
from flare.cli.eval_cmd import eval_command
from flare.errors import InputError
from flare.evaluate.datasets import data_root, load_dataset
from flare.evaluate.harness import RESULTS_FILE, read_results, task_of
from flare.evaluate.world import bridge_misses, generate, load_world, main, write_world
from flare.evaluate.world.gen import Fact, World, WorldQuestion
from flare.evaluate.world.names import real_words
from flare.evaluate.world.score import judge_record, summarize, table
from flare.evaluate.world.score import main as score_main
from flare.evaluate.world.text import spell, surfaces
from flare.evaluate.world.truth import Judge, judge, sentences_from_answer, sentences_from_trace
from flare.evaluate.world.wordlists import LISTS, scan_pools
from flare.text import numbers
from flare.types import Answer, Citation, Sentence

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "docs" / "results" / "world" / "data" / "world"
POOLS = data_root() or ROOT / "no-data-root"  # $FLARE_DATA, else ../shared/data beside the checkout


@pytest.fixture(scope="module")
def world() -> World:
    return generate(seed=3, questions=60, dev=10)


@pytest.fixture(scope="module")
def judge_(world: World) -> Judge:
    return Judge(world)


def _q(world: World, qtype: str) -> WorldQuestion:
    return next(q for q in world.questions if q.type == qtype)


def _fact(world: World, q: WorldQuestion, relation: str) -> Fact:
    return next(world.facts[f] for f in q.fact_ids if world.facts[f].relation == relation)


def _current(world: World, subject: str, relation: str) -> Fact:
    return next(f for f in world.facts.values() if f.subject == subject and f.relation == relation and f.current)


# -- generation ------------------------------------------------------------------------------


def test_same_seed_same_bytes_other_seed_other_world(tmp_path: Path) -> None:
    a = write_world(generate(seed=7, questions=20, dev=5), tmp_path / "a")
    b = write_world(generate(seed=7, questions=20, dev=5), tmp_path / "b")
    c = write_world(generate(seed=8, questions=20, dev=5), tmp_path / "c")
    for name in ("corpus.jsonl", "questions.jsonl", "truth.jsonl", "README.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "corpus.jsonl").read_bytes() != (c / "corpus.jsonl").read_bytes()


def test_committed_copy_is_what_the_generator_writes_today(tmp_path: Path) -> None:
    fresh = write_world(generate(seed=0, questions=160, dev=40), tmp_path / "world")
    for name in ("corpus.jsonl", "questions.jsonl", "truth.jsonl"):
        assert (COMMITTED / name).read_bytes() == (fresh / name).read_bytes(), f"regenerate {COMMITTED}"


def test_every_fact_is_written_in_the_passages_that_are_said_to_state_it(world: World, judge_: Judge) -> None:
    for f in world.facts.values():
        assert f.passage_ids, f
        for pid in f.passage_ids:
            p = world.passages[pid]
            assert f.id in p.fact_ids and p.subject == f.subject
            if f.kind == "entity":
                names = world.entities[str(f.value)].aliases
                assert any(re.search(rf"\b{re.escape(a)}\b", p.text) for a in names), (f, p.text)
            else:
                assert float(f.value) in [n.value for n in numbers(p.text)], (f, p.text)
            if f.as_of is not None:
                assert float(f.as_of) in [n.value for n in numbers(p.text)] and p.year >= f.as_of
    for p in world.passages.values():  # the names the truth says a passage holds are the names in it
        assert sorted(judge_.mentions(p.text)[0]) == sorted(set(p.entities)), p


def test_each_passage_judged_against_itself_is_supported_and_uses_all_its_facts(world: World) -> None:
    j = Judge(world)
    q = world.questions[0]
    for p in world.passages.values():
        sentences = re.split(r"(?<=\.) (?=[A-Z])", p.text)
        verdict = j.judge(q, [(s, [p.id]) for s in sentences])
        assert all(s.supported for s in verdict.sentences), [(s.text, s.failed) for s in verdict.sentences]
        assert {f for s in verdict.sentences for f in s.facts_used} >= set(p.fact_ids), p.text


def test_gold_facts_and_supporting_ids_of_every_question(world: World) -> None:
    assert [q.split for q in world.questions] == ["dev"] * 10 + ["test"] * 50
    assert len({q.head for q in world.questions}) == len(world.questions)  # each head asked about once
    assert {q.type for q in world.questions} == {"company_founder", "company_product", "product_maker",
                                                 "person_profile", "town_profile"}
    for q in world.questions:
        facts = [world.facts[f] for f in q.fact_ids]
        assert len(facts) == 4 and all(f.current for f in facts)
        assert len({f.subject for f in facts}) >= 2  # facts of the head and of a bridge entity
        assert any(world.is_bridge(q.head, f) for f in facts)
        assert world.entities[q.head].name in q.question
        for f in facts:  # a bridge entity is never named by the question
            if world.is_bridge(q.head, f) and f.subject != q.head:
                assert not any(a in q.question for a in world.entities[f.subject].aliases), q.question


def test_names_are_invented_distinct_and_never_inside_each_other(world: World) -> None:
    cores = [w.lower() for e in world.entities.values() for w in e.name.split()
             if w not in ("Labs", "Works", "Systems", "Instruments", "Motors", "Textiles", "Foods", "Tools", "River")]
    assert len(cores) == len(set(cores))
    for a in cores:
        assert a not in real_words()
        assert not [b for b in cores if a != b and a in b], a
    aliases = [(a.lower(), e.id) for e in world.entities.values() for a in e.aliases]
    for a, ea in aliases:
        assert not [b for b, eb in aliases if ea != eb and a in b], a


@pytest.mark.skipif(not POOLS.is_dir(), reason="the bundled Wikipedia-style pools are not on this machine")
def test_no_name_is_a_word_of_the_wikipedia_style_pools() -> None:
    world = generate(seed=0, questions=160, dev=40)
    cores = {w.lower() for e in world.entities.values() for w in e.name.split()}
    seen: set[str] = set()
    for path in sorted(POOLS.glob("*/corpus.jsonl")):
        seen.update(w.lower() for w in re.findall(r"[A-Za-z]+", path.read_text(encoding="utf-8")))
    clash = sorted(c for c in cores if c in seen and c not in ("labs", "works", "systems", "instruments", "motors",
                                                               "textiles", "foods", "tools", "river"))
    assert clash == []


@pytest.mark.skipif(not POOLS.is_dir(), reason="the bundled Wikipedia-style pools are not on this machine")
def test_the_committed_word_lists_are_what_the_pools_give_today() -> None:
    real, common = scan_pools(POOLS)
    assert (LISTS / "real_words.txt").read_text(encoding="utf-8") == "\n".join(real) + "\n"
    assert (LISTS / "common_words.txt").read_text(encoding="utf-8") == "\n".join(common) + "\n"


def test_word_lists_take_grammar_words_and_frequent_lower_case_words(tmp_path: Path) -> None:
    (tmp_path / "pool").mkdir()
    rows = [{"title": "Drelmosa", "text": "Drelmosa met Paris in the town. " + "the " * 19}]
    (tmp_path / "pool" / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    real, common = scan_pools(tmp_path)
    assert "drelmosa" in real and "paris" in real and "town" not in real  # "town": no word of the grammar
    assert common == ["the"]  # 20 times in lower case; "town" only once
    assert LISTS.samefile(str(resources.files("flare").joinpath("data/world")))  # where names.py reads them


def test_the_word_list_and_score_commands_say_their_usage_in_one_line() -> None:
    for module in ("flare.evaluate.world.wordlists", "flare.evaluate.world.score"):
        run = subprocess.run([sys.executable, "-W", "error", "-m", module], capture_output=True, text=True,
                             timeout=60, check=False)  # fmt: skip
        assert run.returncode == 2 and run.stderr.count("\n") == 1 and run.stderr.startswith("usage:"), run.stderr


def test_old_figures_are_dated_so_a_year_filter_removes_them(world: World) -> None:
    old = [p for p in world.passages.values() if not world.facts[p.fact_ids[0]].current]
    assert old and all(p.year < 2020 for p in old)
    assert all(p.year >= 2020 for p in world.passages.values() if world.facts[p.fact_ids[0]].current)


def test_the_question_alone_misses_the_bridge_passages_with_real_bm25(world: World, tmp_path: Path) -> None:
    folder = write_world(world, tmp_path / "world")
    build_retriever(str(tmp_path / "index"), load_corpus(folder / "corpus.jsonl"))
    retriever = open_retriever(str(tmp_path / "index"))
    share_q, share_f = bridge_misses(world, retriever, k=5)
    print(f"top-5 BM25 with the question misses a bridge fact for {share_q:.2f} of questions, "
          f"{share_f:.2f} of bridge facts")
    assert share_q >= 0.8 and share_f >= 0.8
    found = total = 0  # while the head's own facts are found: the first hop is not hopeless
    for q in world.questions:
        top = {h.passage.id for h in retriever.search(q.question, k=5)}
        for f in (world.facts[i] for i in q.fact_ids):
            if not world.is_bridge(q.head, f):
                total += 1
                found += bool(set(f.passage_ids) & top)
    assert found / total >= 0.6


def test_spelled_numbers_read_back_as_the_same_value() -> None:
    for n in [0, 2, 12, 20, 21, 99, 100, 105, 340, 999, 1000, 1001, 12_000, 12_400, 40_050, 95_310, 999_999]:
        assert [x.value for x in numbers(spell(n))] == [float(n)], spell(n)
    assert surfaces("price", 1299)[:3] == ("$1,299", "$1299", "1,299 dollars")
    with pytest.raises(ValueError, match="cannot spell"):
        spell(1_000_000)


# -- the dataset folder and the command ---------------------------------------------------------


def test_folder_loads_as_a_long_form_dataset_and_reads_back_as_the_same_world(world: World, tmp_path: Path) -> None:
    folder = write_world(world, tmp_path / "world")
    ds = load_dataset(folder)
    assert ds.name == "world" and task_of(ds.name, ds.examples) == "long"
    ex = ds.examples[0]
    assert ex.extra["split"] == "dev" and len(ex.extra["facts"]) == 4 and len(ex.qa_pairs) == 4
    assert set(ex.supporting_ids) == {p for f in ex.extra["facts"] for p in f["passage_ids"]}
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines()]
    assert all(set(r) == {"id", "title", "text", "meta"} and set(r["meta"]) == {"year"} for r in corpus)
    assert not any(re.search(r"\bf\d{5}\b|\be\d{4}\b", r["text"]) for r in corpus)  # no ground truth in text
    assert load_world(folder) == world


def test_command_writes_atomically_and_refuses_bad_arguments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "w"
    assert main(["--out", str(out), "--questions", "12", "--dev", "4"]) == 0
    before = (out / "corpus.jsonl").read_bytes()
    assert main(["--out", str(out), "--questions", "12", "--dev", "4", "--seed", "1"]) == 2
    assert "already exists" in capsys.readouterr().err and (out / "corpus.jsonl").read_bytes() == before
    assert main(["--out", str(out), "--questions", "12", "--dev", "4", "--seed", "1", "--force"]) == 0
    assert (out / "corpus.jsonl").read_bytes() != before
    assert main(["--out", str(tmp_path / "x"), "--questions", "5", "--dev", "5"]) == 2
    assert "0 <= dev < questions" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["--out", str(tmp_path / "file" / "w"), "--questions", "5", "--dev", "1"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "w"]  # no temporary folder left


def test_command_line_errors_are_one_line_without_traceback(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "flare.evaluate.world", "--out", str(tmp_path), "--questions", "x"],
                         capture_output=True, text=True, timeout=60, check=False)
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "invalid int value" in run.stderr


def test_load_world_says_what_is_missing_or_broken(world: World, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a world folder"):
        load_world(tmp_path)
    folder = write_world(world, tmp_path / "world")
    with (folder / "truth.jsonl").open("a") as fh:
        fh.write('{"type": "fact", "id": \n')
    with pytest.raises(InputError, match=r"truth.jsonl:\d+: not JSON"):
        load_world(folder)


# -- ground-truth support of hand-built answers --------------------------------------------------


def test_reference_answers_citing_their_passages_are_fully_supported(world: World, judge_: Judge) -> None:
    for q in world.questions:
        answer = [(s, world.facts[f].passage_ids) for s, f in zip(q.reference, q.fact_ids, strict=True)]
        v = judge_.judge(q, answer)
        assert all(s.supported for s in v.sentences), [(s.text, s.failed) for s in v.sentences]
        assert v.fact_recall == v.supported_fact_recall == 1.0
        assert v.fact_precision == v.citation_precision == v.citation_recall == 1.0
        assert v.unsupported_share == v.cited_unsupported == 0.0


def test_right_value_with_the_wrong_subject_is_unsupported(world: World, judge_: Judge) -> None:
    q = _q(world, "company_founder")
    company, town = world.entities[q.head], world.entities[str(_fact(world, q, "born_in").value)]
    settled = _current(world, town.id, "founded_year")
    cited = [*settled.passage_ids, *_current(world, company.id, "founded_year").passage_ids]
    v = judge_.judge(q, [(f"{town.name} is a town.", settled.passage_ids),
                         (f"{company.name} was founded in {settled.value}.", cited)])
    s = v.sentences[1]
    assert s.status == "unsupported" and str(settled.value) in s.failed
    assert s.true_items < s.items  # not true in the world either: precision counts it
    assert _fact(world, q, "founded_year").id not in v.gold_stated


def test_invented_numbers_and_names_are_unsupported_even_when_cited(world: World, judge_: Judge) -> None:
    q = _q(world, "company_founder")
    company = world.entities[q.head]
    year = _fact(world, q, "founded_year")
    known = {float(f.value) for f in world.facts.values() if f.kind != "entity"}
    invented = next(y for y in range(1700, 2100) if float(y) not in known)
    v = judge_.judge(q, [(f"{company.name} was founded in {invented}.", year.passage_ids),
                         (f"{company.name} was founded by Albert Einstein.", year.passage_ids)])
    assert v.sentences[0].foreign == (str(invented),) and not v.sentences[0].supported
    assert "Einstein" in v.sentences[1].foreign and not v.sentences[1].supported
    assert v.unsupported_share == v.cited_unsupported == 1.0 and v.fact_precision is not None
    assert v.fact_precision < 1.0


def test_twelve_and_12_are_the_same_value(world: World, judge_: Judge) -> None:
    q = _q(world, "product_maker")
    product = world.entities[q.head]
    warranty = _fact(world, q, "warranty")
    n = int(warranty.value)
    for written_as in (str(n), spell(n)):
        v = judge_.judge(q, [(f"The {product.bare} comes with a {written_as}-year warranty.", warranty.passage_ids)])
        assert v.sentences[0].supported and v.gold_stated == (warranty.id,), written_as


def test_a_pronoun_takes_its_subject_from_the_previous_sentence(world: World, judge_: Judge) -> None:
    q = _q(world, "company_founder")
    by, born = _fact(world, q, "founded_by"), _fact(world, q, "born_in")
    person, town = world.entities[str(by.value)], world.entities[str(born.value)]
    pron = person.pronoun.capitalize()
    second = f"{pron} was born in {town.name}."
    v = judge_.judge(q, [(f"{world.entities[q.head].name} was founded by {person.name}.", by.passage_ids),
                         (second, born.passage_ids)])
    assert v.sentences[1].supported and born.id in v.gold_stated and person.id in v.sentences[1].scope
    alone = judge_.judge(q, [(second, born.passage_ids)])  # no earlier person: "he" points nowhere
    assert not alone.sentences[0].supported and born.id not in alone.gold_stated


def test_sentences_without_claims_count_neither_way(world: World, judge_: Judge) -> None:
    q = world.questions[0]
    ref = [(s, world.facts[f].passage_ids) for s, f in zip(q.reference, q.fact_ids, strict=True)]
    v = judge_.judge(q, [("I hope this helps.", ref[0][1]), *ref[:2]])
    assert v.sentences[0].status == "no_claims" and not v.sentences[0].supported
    assert v.unsupported_share == 0.0 and v.fact_recall == 0.5
    assert v.citation_precision == pytest.approx(2 / 3)  # the no-claims sentence's citation was not needed


def test_uncited_claims_and_unneeded_citations(world: World, judge_: Judge) -> None:
    q = world.questions[0]
    (s0, f0), (s1, f1) = zip(q.reference[:2], q.fact_ids[:2], strict=True)
    other = next(p for p in world.passages if p not in world.facts[f0].passage_ids)
    v = judge_.judge(q, [(s0, []), (s1, [*world.facts[f1].passage_ids, other])])
    assert v.sentences[0].failed == ("(no citation)",) and v.sentences[1].supported
    assert v.unsupported_share == 0.5 and v.cited_unsupported == 0.0 and v.citation_precision == 0.5
    assert v.gold_stated == q.fact_ids[:2] and v.gold_supported == q.fact_ids[1:2]
    assert v.fact_recall == 0.5 and v.supported_fact_recall == 0.25


def test_an_older_figure_is_supported_by_its_dated_passage_and_counted_outdated(world: World) -> None:
    old = next(f for f in world.facts.values() if not f.current and f.relation == "employees")
    company = world.entities[old.subject]
    v = judge(world, world.questions[0], [(f"In {old.as_of}, {company.name} had {old.value} employees.",
                                           old.passage_ids)])
    assert v.sentences[0].supported and v.sentences[0].outdated == 1


def test_citation_markers_and_unknown_questions() -> None:
    world = generate(seed=3, questions=5, dev=1)
    q = world.questions[0]
    f = world.facts[q.fact_ids[0]]
    v = judge(world, q.id, [(q.reference[0].rstrip(".") + " [1].", f.passage_ids)])
    assert v.sentences[0].supported
    with pytest.raises(InputError, match="no world question"):
        judge(world, "wq999", [])


def test_sentences_come_from_answers_and_traces_with_passage_ids() -> None:
    answer = Answer("q", (Sentence("A.", True, (1,)), Sentence("B.", True, (2, 1)), Sentence("C.", False)),
                    (Citation(1, "wp0001", "t", "x"), Citation(2, "wp0002#1", "t", "y")), "end", "id")
    assert sentences_from_answer(answer) == [("A.", ["wp0001"]), ("B.", ["wp0002#1", "wp0001"]), ("C.", [])]
    trace = {"sources": [{"n": 1, "id": "wp0001"}, {"n": 2, "id": "wp0002"}],
             "steps": [{"sentence": "A.", "citations": [2]}, {"sentence": "", "citations": []},
                       {"sentence": "B.", "citations": [1, 2]}]}
    assert sentences_from_trace(trace) == [("A.", ["wp0002"]), ("B.", ["wp0001", "wp0002"])]


# -- scoring eval results ----------------------------------------------------------------------


def _record(world: World, q: WorldQuestion, method: str, *, fail: bool = False) -> dict[str, Any]:
    """A results record as the harness writes it: the reference answer, each sentence citing its passage."""
    pids = [world.facts[f].passage_ids[0] for f in q.fact_ids]
    trace = {"sources": [{"n": i + 1, "id": p} for i, p in enumerate(pids)],
             "steps": [{"sentence": s, "citations": [i + 1]} for i, s in enumerate(q.reference)]}
    return {"dataset": "world", "method": method, "id": q.id, "error": "Boom" if fail else None,
            "trace": None if fail else trace}


def test_summary_per_method_counts_failures_as_stating_nothing(world: World, judge_: Judge) -> None:
    q0, q1 = world.questions[:2]
    records = [_record(world, q0, "a"), _record(world, q1, "a"), _record(world, q0, "b"),
               _record(world, q1, "b", fail=True)]
    assert judge_record(judge_, records[3]) is None
    summary = summarize(judge_, records)
    assert summary["a"]["fact_recall"] == 1.0 and summary["a"]["cited_unsupported"] == 0.0
    assert summary["b"]["failed"] == 1 and summary["b"]["fact_recall"] == 0.5
    assert summary["b"]["citation_precision"] == 1.0  # the failed answer has no citations to count
    assert "| a | 2 | 0 | 1.000 |" in table(summary)


def test_score_command_prints_the_table_or_one_line_error(world: World, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_world(world, tmp_path / "world")
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(_record(world, q, "single")) + "\n" for q in world.questions[:3]))
    assert score_main([str(folder), str(results)]) == 0
    assert "| single | 3 | 0 | 1.000 |" in capsys.readouterr().out
    assert score_main([str(tmp_path / "nowhere"), str(results)]) == 2
    assert "not a world folder" in capsys.readouterr().err
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({**_record(world, world.questions[0], "x"), "dataset": "asqa"}) + "\n")
    assert score_main([str(folder), str(other)]) == 2
    assert "no records of dataset 'world'" in capsys.readouterr().err


@pytest.mark.model
def test_flare_eval_with_smollm2_on_the_world_is_judged_from_its_traces(tmp_path: Path) -> None:
    """The real path: the CLI answers world questions with the bundled model over a real index."""
    world = generate(seed=5, questions=4, dev=2)
    folder = write_world(world, tmp_path / "world")
    out = tmp_path / "out"
    args = ["--dataset", str(folder), "--method", "single", "--limit", "2", "--model", "smollm2", "--threads", "1",
            "-k", "3", "--set", "max_output_tokens=48", "--set", "max_sentences=3", "--out", str(out),
            "--index-cache", str(tmp_path / "idx"), "--no-progress"]
    result = CliRunner().invoke(eval_command, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    records = read_results(out / RESULTS_FILE)
    assert len(records) == 2 and not [r for r in records if r["error"]]
    j = Judge(load_world(folder))
    for rec in records:
        verdict = judge_record(j, rec)
        assert verdict is not None and len(verdict.sentences) == rec["sentences"]
        assert all(p in world.passages for s in verdict.sentences for p in s.cited)
        assert all(x is None or 0.0 <= x <= 1.0 for x in verdict.scores().values())
    assert summarize(j, records)["single"]["answers"] == 2


# -- short two-hop (bridge) questions ---------------------------------------------------------


def test_bridge_questions_ask_one_fact_one_hop_away_about_the_same_world(world: World, tmp_path: Path) -> None:
    bridge = generate(seed=3, questions=60, dev=10, kind="bridge")
    assert (bridge.entities, bridge.facts, bridge.passages) == (world.entities, world.facts, world.passages)
    kinds = {q.type for q in bridge.questions}
    assert kinds == {"founder_birthplace", "maker_office", "maker_founder", "founded_staff", "based_founded"}
    for q in bridge.questions:
        (fact,) = (bridge.facts[f] for f in q.fact_ids)
        assert bridge.is_bridge(q.head, fact) and fact.subject != q.head  # its passages never name the head
        assert bridge.entities[q.head].bare in q.question or bridge.entities[q.head].name in q.question
    folder = write_world(bridge, tmp_path / "bridge")
    ds = load_dataset(folder)
    assert task_of(ds.name, ds.examples) == "short"  # scored by exact match, like 2WikiMultihopQA
    first, fact = ds.examples[0], bridge.facts[bridge.questions[0].fact_ids[0]]
    assert first.qa_pairs == () and set(first.answers) == set(bridge.aliases(fact))
    assert load_world(folder) == bridge
    assert "--kind bridge" in (folder / "README.md").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="kind must be one of long, bridge"):
        generate(seed=3, questions=60, dev=10, kind="short")


def test_committed_bridge_set_is_what_the_generator_writes_today(tmp_path: Path) -> None:
    fresh = write_world(generate(seed=0, questions=160, dev=40, kind="bridge"), tmp_path / "bridge")
    committed = COMMITTED.parent / "bridge"
    for name in ("corpus.jsonl", "questions.jsonl", "truth.jsonl"):
        assert (committed / name).read_bytes() == (fresh / name).read_bytes(), f"regenerate {committed}"
    assert (committed / "corpus.jsonl").read_bytes() == (COMMITTED / "corpus.jsonl").read_bytes()  # the same world


def test_the_bridge_questions_alone_miss_their_answer_passage_with_real_bm25(tmp_path: Path) -> None:
    bridge = generate(seed=3, questions=60, dev=10, kind="bridge")
    folder = write_world(bridge, tmp_path / "bridge")
    build_retriever(str(tmp_path / "index"), load_corpus(folder / "corpus.jsonl"))
    share_q, _ = bridge_misses(bridge, open_retriever(str(tmp_path / "index")), k=3)
    print(f"top-3 BM25 with the question misses the answer's passage for {share_q:.2f} of bridge questions")
    assert share_q >= 0.7
