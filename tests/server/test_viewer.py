"""The trace viewer in real headless Chromium: a served trace and a trace file.

Needs the Debian ``chromium`` package (``/usr/bin/chromium``) and the ``playwright`` Python
package; ``playwright install`` is not needed because the system browser is used.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from flare.config import Settings
from flare.engine.loop import Flare
from flare.retrieve.filters import Filters
from flare.retrieve.tantivy_index import TantivyRetriever
from flare.server import Limits, create_app
from flare.testing.memory import MemoryRetriever
from flare.testing.scripted import ScriptedLM
from flare.trace.tracers import JsonlTracer
from tests.engine.support import BARE, FANS, SONG, song_lm
from tests.server.support import (
    DRAFT_SENTINEL,
    FINANCE_KEY,
    QUESTION,
    REGEN,
    STAFF_KEY,
    TEMPLATE,
    LiveServer,
    keys,
    scripted,
)

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

if not CHROMIUM.exists():
    pytest.skip(
        "/usr/bin/chromium is absent: apt-get update && apt-get install -y chromium",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, ConsoleMessage, Page, sync_playwright  # noqa: E402


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture()
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1200, "height": 1400})
    pg = context.new_page()
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error" and "401" not in message.text and "404" not in message.text:
            errors.append(message.text)  # failed fetches we provoke on purpose are expected

    pg.on("console", on_console)
    pg.on("pageerror", lambda err: errors.append(str(err)))
    yield pg
    context.close()
    assert not errors, errors  # no script errors, no CSP violations


@pytest.fixture()
def server(index_dir: Path) -> Iterator[LiveServer]:
    engine = Flare(scripted(), TantivyRetriever(index_dir), Settings(theta=0.5, trigger="min", verify="off"),
                   template=TEMPLATE)  # fmt: skip
    with LiveServer(create_app(engine, keys(), Limits())) as live:
        yield live


def _rgb(css: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", css)[:3])


def test_viewer_renders_a_served_trace(server: LiveServer, page: Page) -> None:
    with server.client(STAFF_KEY) as http:
        answer = http.post("/v1/answers", json={"question": QUESTION}).json()
    page.goto(f"{server.url}/viewer/#trace={answer['trace_id']}")
    assert page.input_value("#trace-id") == answer["trace_id"]

    page.fill("#api-key", FINANCE_KEY)  # another caller: the trace is not theirs
    page.click("#load-trace")
    page.wait_for_selector("#status.error")
    assert "404" in page.inner_text("#status")

    page.fill("#api-key", STAFF_KEY)
    page.click("#load-trace")
    page.wait_for_selector(f"body[data-loaded='{answer['trace_id']}']")

    steps = page.locator("article.step")
    assert steps.count() == 3  # first sentence, regenerated sentence, the end
    low = page.locator("#trace .tok.low")
    assert low.count() == 1
    assert low.first.inner_text().strip() == DRAFT_SENTINEL
    assert low.first.get_attribute("data-p") == "0.05"
    red, green, blue = _rgb(low.first.evaluate("e => getComputedStyle(e).backgroundColor"))
    assert red > green > blue, "a low token is shaded on the red end of the scale"
    confident = page.locator("article.step").nth(1).locator(".tok:not(.low)").first
    assert confident.evaluate("e => getComputedStyle(e).backgroundColor") == "rgba(0, 0, 0, 0)"

    second = steps.nth(1)
    assert "retrieve" in second.locator(".decision").inner_text()
    assert second.locator("ul.queries li").count() >= 1
    assert "travel-2026" in second.locator("table").inner_text()
    assert REGEN.strip() in second.locator(".sentence").inner_text()
    assert "[1]" in second.locator(".sentence .cite").all_inner_texts()
    assert "Sources:" in page.inner_text(".answer")

    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "viewer.png"), full_page=True)
    assert (ARTIFACTS / "viewer.png").stat().st_size > 10_000


def test_viewer_asks_and_shows_the_new_trace(server: LiveServer, page: Page) -> None:
    page.goto(f"{server.url}/viewer/")
    page.fill("#api-key", STAFF_KEY)
    page.fill("#question", QUESTION)
    page.click("#ask")
    page.wait_for_selector("body[data-loaded]")
    assert page.locator("#trace .tok.low").count() == 1
    assert page.input_value("#trace-id") == page.get_attribute("body", "data-loaded")


def test_viewer_opens_a_trace_file(index_dir: Path, tmp_path: Path, page: Page, server: LiveServer) -> None:
    """A JSONL file as ``flare ask --trace`` writes it (JsonlTracer), several traces in it."""
    path = tmp_path / "trace.jsonl"
    engine = Flare(scripted(), TantivyRetriever(index_dir), Settings(theta=0.5, trigger="min", verify="off"),
                   template=TEMPLATE, tracer=JsonlTracer(path))  # fmt: skip
    staff = Filters.any_of("acl", ["staff"])
    engine.answer(QUESTION, filters=staff)
    engine.answer("How fast are travel expenses reimbursed?", filters=staff)
    page.goto(f"{server.url}/viewer/")
    page.set_input_files("#trace-file", str(path))
    page.wait_for_selector("body[data-loaded]")
    assert page.locator("#trace-pick option").count() == 2
    assert "How fast" in page.inner_text(".summary h2")
    page.select_option("#trace-pick", "0")
    page.wait_for_function("document.querySelector('.summary h2').textContent.startsWith('How are')")
    assert page.locator("#trace .tok.low").count() == 1
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "viewer-file.png"), full_page=True)


def test_viewer_marks_unsupported_words_and_shows_rejected_sentences(
    index_dir: Path, tmp_path: Path, page: Page, server: LiveServer
) -> None:
    """verify=flag: the unbacked number is marked in the sentence; verify=drop: the dropped one is listed."""
    wrong = " Trips need approval 7 working days before departure."
    path = tmp_path / "trace.jsonl"
    for mode in ("flag", "drop"):
        lm = scripted()
        lm.rules[2] = (lm.rules[2][0], ScriptedLM.sentence(wrong + " And"))
        engine = Flare(lm, TantivyRetriever(index_dir), Settings(theta=0.5, verify=mode), template=TEMPLATE,
                       tracer=JsonlTracer(path))  # fmt: skip
        engine.answer(QUESTION, filters=Filters.any_of("acl", ["staff"]))
    page.goto(f"{server.url}/viewer/")
    page.set_input_files("#trace-file", str(path))
    page.wait_for_selector("body[data-loaded]")
    page.select_option("#trace-pick", "0")  # the flagged answer
    page.wait_for_selector("#trace mark.unsupported")
    second = page.locator("article.step").nth(1)
    assert second.locator("mark.unsupported").inner_text() == "7"
    assert "support-partial" in (second.locator(".support").get_attribute("class") or "")
    # The support trigger sent the draft to search; the rewrite still said 7, and is marked.
    assert second.locator(".draft-support").inner_text() == "Its passages did not back the draft (partial: 7)."
    shown = page.inner_text(".answer")
    assert "[?]" in shown and "not found in the passages it was written from" in shown
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "viewer-unsupported.png"), full_page=True)
    page.select_option("#trace-pick", "1")  # the answer that dropped it
    page.wait_for_selector("#trace ul.rejected li")
    assert page.locator("#trace ul.rejected li").first.inner_text() == wrong.strip()
    assert wrong.strip() not in page.inner_text(".answer")


def test_viewer_shows_a_draft_dropped_before_a_names_search(tmp_path: Path, page: Page, server: LiveServer) -> None:
    """draft_before_follow: the draft that stopped at the bridge is shown with the step that searched."""
    path = tmp_path / "trace.jsonl"
    lm = song_lm(lambda p: p.rstrip().endswith("answer is Korsk."),
                  (lambda p: p.rstrip().endswith("died in Korsk."), " So the answer is Korsk."),
                  (lambda p: "She died in Korsk" in p and p.rstrip().endswith("Ulvin."), " Mara Ulvin died in Korsk."),
                  (lambda p: p.rstrip().endswith("Ulvin."), " So the answer is Mara Ulvin."))  # fmt: skip
    settings = Settings(trigger="support", k=2, verify="flag", draft_before_follow=True)
    Flare(lm, MemoryRetriever(SONG), settings, template=BARE, tracer=JsonlTracer(path)).answer(
        "Where did the performer of the song Blue Kettle die?")
    page.goto(f"{server.url}/viewer/")
    page.set_input_files("#trace-file", str(path))
    page.wait_for_selector("body[data-loaded]")
    hop = page.locator("article.step").nth(1)
    assert hop.locator(".predraft").inner_text() == (
        "Drafted before searching for new names, then dropped: So the answer is Mara Ulvin.")
    assert page.locator("article.step").nth(2).locator(".predraft").count() == 0


def test_viewer_marks_a_passage_left_unread_by_found_floor(tmp_path: Path, page: Page, server: LiveServer) -> None:
    """found_floor: the fans' page the name's search found is listed, marked as not read."""
    path = tmp_path / "trace.jsonl"
    lm = song_lm(lambda p: p.rstrip().endswith("Korsk."),
                  (lambda p: p.rstrip().endswith("Ulvin."), " Mara Ulvin died in Korsk."))  # fmt: skip
    settings = Settings(trigger="support", k=2, verify="flag", found_floor=0.9)
    Flare(lm, MemoryRetriever([*SONG, FANS]), settings, template=BARE, tracer=JsonlTracer(path)).answer(
        "Where did the performer of the song Blue Kettle die?")
    page.goto(f"{server.url}/viewer/")
    page.set_input_files("#trace-file", str(path))
    page.wait_for_selector("body[data-loaded]")
    rows = page.locator("article.step").nth(1).locator("tr")
    cells = {rows.nth(i).locator("td").first.inner_text(): rows.nth(i).locator("td").nth(1)
             for i in range(1, rows.count())}  # fmt: skip
    assert set(cells) == {"p1", "q1"}
    assert cells["q1"].inner_text() == "Ulvin fans (not read: below found_floor)"
    assert "unread" in (cells["q1"].get_attribute("class") or "") and cells["p1"].inner_text() == "Mara Ulvin"


def test_viewer_says_which_name_was_already_read(tmp_path: Path, page: Page, server: LiveServer) -> None:
    """skip_known_names: her passage was read by the question's search; her name's step says so."""
    path = tmp_path / "trace.jsonl"
    lm = song_lm(lambda p: p.rstrip().endswith("Korsk."),
                 (lambda p: p.rstrip().endswith("Ulvin."), " Mara Ulvin died in Korsk."))  # fmt: skip
    settings = Settings(trigger="support", k=3, verify="flag", skip_known_names=True)
    Flare(lm, MemoryRetriever([*SONG, FANS]), settings, template=BARE, tracer=JsonlTracer(path)).answer(
        "Where did the singer of the song Blue Kettle die?")
    page.goto(f"{server.url}/viewer/")
    page.set_input_files("#trace-file", str(path))
    page.wait_for_selector("body[data-loaded]")
    steps = page.locator("article.step")
    assert steps.nth(1).locator(".known").inner_text() == (
        "Already in the prompt, so the name was not followed to other pages: p1")
    assert steps.nth(0).locator(".known").count() == 0
