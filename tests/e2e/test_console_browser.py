"""The memory console (``GET /console``) driven in a real Chromium, against `langgraph dev`.

Two shared scripted servers run on loopback: ``dev_tokens``, with the project's custom
auth and dev tokens (``tok-alice``, ``tok-bob``), and ``scripted``, without auth, where the
page takes ``?user_id=``. Memory is seeded through langgraph-sdk runs; everything after
that happens in the page (typing, clicking, a ``window.prompt``), and what the page did
is checked again through langgraph-sdk.

The browser is Debian's ``/usr/bin/chromium`` (no Playwright browser download). Without
it the module is skipped, or fails when ``CI`` is set (CI installs it in ``.ci/run``).
The browser may reach only 127.0.0.1: every other request is aborted and fails the test.

The auth test takes a full-page screenshot of alice's console. It goes to the test's
temp directory; set ``ASSISTANT_CONSOLE_SCREENSHOT=docs/console.png`` to refresh the
README's picture.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from e2e_helpers import DEV_TOKENS, connect, new_thread, run_turn, thread_values
from langgraph_sdk.client import LangGraphClient
from playwright.async_api import (
    Browser,
    BrowserContext,
    Dialog,
    Locator,
    Page,
    Route,
    async_playwright,
    expect,
)

from devserver import DevServer

pytestmark = [pytest.mark.e2e]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
]
"""Headless, no background traffic, and no name resolves except localhost."""

LOOPBACK = frozenset({"127.0.0.1", "localhost"})
TIMEOUT_MS = 10_000
"""How long an expectation waits for the page."""

TOKENS = {user: DEV_TOKENS[user] for user in ("alice", "bob")}
"""This module's users on the shared ``dev_tokens`` server, and their tokens."""

BUDGETS = {"max_context_tokens": 300, "keep_recent_tokens": 120, "summary_max_tokens": 100}
"""Small budgets, so a handful of turns compress the trip thread into a summary."""

ABOUT_ALICE = [
    "Hi, my name is Alice and I live in Hangzhou. I'm allergic to peanuts.",
    "我喜欢喝龙井茶。",
    "我的猫叫年糕。",
    "Thanks!",
]
TRIP = [
    "I moved from Hangzhou to Chengdu.",
    "Let's plan a weekend trip to Leshan to see the Giant Buddha.",
    "I'd like to take the high-speed train on Saturday morning.",
    "Please suggest a vegetarian lunch near the scenic area.",
    "On Sunday we could visit Emei Shan if the weather is good.",
    "Remind me to pack a raincoat and walking shoes.",
]
CORRECTED = "Allergic to peanuts and shellfish"
MARKUP = 'ok <b>thanks</b> & <img src=x onerror="document.title=1">'
"""A message that would be markup if the page inserted it as HTML."""

OUTCOME_WORDS = {
    "kept": "kept",
    "nothing": "nothing to keep",
    "held": "held for a batch",
    "skipped": "skipped",
}
"""How the page words an extraction outcome (a failure adds its reason, as skipped does)."""


# --------------------------------------------------------------------------- browser


def _chromium() -> Path:
    if CHROMIUM.exists():
        return CHROMIUM
    reason = f"{CHROMIUM} is missing (apt-get install chromium); the console browser test needs it"
    if os.environ.get("CI"):
        pytest.fail(reason + " and CI is set, so it must run", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    """Headless Debian Chromium, shared by the module."""
    executable = _chromium()
    expect.set_options(timeout=TIMEOUT_MS)
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(
            executable_path=str(executable), args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            await chromium.close()


@dataclass
class Tab:
    """A page in a fresh browser context (so a fresh sessionStorage)."""

    page: Page
    offsite: list[str] = field(default_factory=list)
    """Requests the page tried to send anywhere but loopback (all aborted)."""
    errors: list[str] = field(default_factory=list)
    """Uncaught exceptions in the page's script."""

    def check_clean(self) -> None:
        assert not self.offsite, f"the page tried to leave loopback: {self.offsite}"
        assert not self.errors, f"uncaught errors in the page: {self.errors}"


OpenTab = Callable[[str], Awaitable[Tab]]


@pytest.fixture
async def open_tab(browser: Browser) -> AsyncIterator[OpenTab]:
    """``await open_tab(url)``: a fresh 1280 px wide tab on ``url``, closed after the test."""
    contexts: list[BrowserContext] = []

    async def open_(url: str) -> Tab:
        context = await browser.new_context(viewport={"width": 1280, "height": 900})
        contexts.append(context)
        context.set_default_timeout(TIMEOUT_MS)
        page = await context.new_page()
        tab = Tab(page)

        async def only_loopback(route: Route) -> None:
            if urlsplit(route.request.url).hostname in LOOPBACK:
                await route.continue_()
            else:
                tab.offsite.append(route.request.url)
                await route.abort()

        await context.route("**/*", only_loopback)
        page.on("pageerror", lambda error: tab.errors.append(str(error)))
        await page.goto(url)
        return tab

    yield open_
    for context in contexts:
        await context.close()


def fact_row(page: Page, text: str) -> Locator:
    """The facts-table row whose fact reads exactly ``text`` (tags and history aside)."""
    assert "'" not in text
    return page.locator(f"xpath=//tbody[@id='facts']/tr[.//*[@class='fact-text'] = '{text}']")


async def facts_shown(page: Page) -> list[str]:
    """The facts in the table, tags and history left out."""
    return await page.locator("#facts tr[data-key] .fact-text").all_text_contents()


def heard_row(page: Page, excerpt: str) -> Locator:
    """The "What memory heard" row for the message that reads exactly ``excerpt``."""
    return page.locator("#heard tr").filter(
        has=page.locator("td.excerpt").get_by_text(excerpt, exact=True)
    )


def memory_words(metrics: dict[str, Any]) -> str:
    """What the page says memory made of a turn, from the turn's metrics."""
    outcome, reason = metrics["extraction"], metrics.get("extraction_reason", "")
    if outcome == "failed":
        return f"extraction FAILED: {reason}"
    return OUTCOME_WORDS[outcome] + (f": {reason}" if outcome == "skipped" else "")


async def sign_in(page: Page, token: str) -> None:
    await page.fill("#token", token)
    await page.click("#save-token")


# --------------------------------------------------------------------------- servers


def sdk_for(server: DevServer, user: str | None = None) -> LangGraphClient:
    return connect(server, TOKENS[user] if user else None)


@dataclass(frozen=True)
class Seeded:
    about_thread: str
    trip_thread: str


@pytest.fixture(scope="module")
async def seeded(dev_tokens_server: DevServer) -> AsyncIterator[Seeded]:
    """Alice's memory (facts, a superseded home, a compressed trip thread) and Bob's name."""
    alice, bob = sdk_for(dev_tokens_server, "alice"), sdk_for(dev_tokens_server, "bob")
    try:
        about = await new_thread(alice)
        for text in ABOUT_ALICE:
            await run_turn(dev_tokens_server, alice, about, text)
        trip = await new_thread(alice)
        for text in TRIP:
            await run_turn(dev_tokens_server, alice, trip, text, **BUDGETS)
        assert (await thread_values(alice, trip)).get("summary"), "the trip never compressed"
        await run_turn(dev_tokens_server, bob, await new_thread(bob), "My name is Bob.")
        yield Seeded(about_thread=about, trip_thread=trip)
    finally:
        await alice.aclose()
        await bob.aclose()


# --------------------------------------------------------------------------- tests


async def test_console_with_auth(
    browser: Browser,
    dev_tokens_server: DevServer,
    seeded: Seeded,
    open_tab: OpenTab,
    tmp_path: Path,
) -> None:
    tab = await open_tab(f"{dev_tokens_server.url}/console")
    page = tab.page

    # No token: a clear 401 instead of data.
    await expect(page.locator("#error")).to_contain_text("401: Missing bearer token")
    await expect(page.locator("#facts tr[data-key]")).to_have_count(0)
    await expect(page.locator("#who")).to_have_text("not signed in")

    # Alice's token: her current facts, English and Chinese; her old home is not current.
    await sign_in(page, TOKENS["alice"])
    await expect(page.locator("#who")).to_have_text("signed in as alice")
    await expect(page.locator("#error")).to_be_empty()
    await expect(fact_row(page, "喜欢喝龙井茶")).to_have_count(1)
    assert sorted(await facts_shown(page)) == sorted(
        ["Name is Alice", "Allergic to peanuts", "喜欢喝龙井茶", "猫叫年糕", "Lives in Chengdu"]
    )
    assert await page.evaluate("sessionStorage.getItem('assistant-token')") == TOKENS["alice"]

    # Search (hybrid recall): the allergy ranks first for "peanut".
    await page.fill("#search", "peanut")
    await page.click("#search-button")
    await expect(page.locator("#facts .fact-text").first).to_have_text("Allergic to peanuts")
    await page.click("#clear-search")
    await expect(page.locator("#facts tr[data-key]")).to_have_count(5)

    # Superseded facts, with their history line and no actions.
    await page.check("#show-superseded")
    hangzhou = fact_row(page, "Lives in Hangzhou")
    await expect(hangzhou).to_have_class("superseded")
    await expect(hangzhou).to_contain_text("superseded")
    await expect(hangzhou.locator(".history")).to_have_text(
        re.compile(r"^superseded \d{4}-\d\d-\d\d \d\d:\d\d → Lives in Chengdu$")
    )
    await expect(hangzhou.locator("button")).to_have_count(0)
    await expect(fact_row(page, "Lives in Chengdu")).not_to_have_class("superseded")

    # Correct: window.prompt offers the current wording; the old one becomes history.
    prompts: list[tuple[str, str]] = []

    async def answer(dialog: Dialog) -> None:
        prompts.append((dialog.type, dialog.default_value))
        await dialog.accept(CORRECTED)

    page.once("dialog", answer)
    await fact_row(page, "Allergic to peanuts").locator("button.edit").click()
    await expect(fact_row(page, CORRECTED)).to_have_count(1)
    assert prompts == [("prompt", "Allergic to peanuts")]
    await expect(fact_row(page, "Allergic to peanuts")).to_have_class("superseded")
    correction = page.locator("#audit tr").filter(has_text="correct: Allergic to peanuts")
    await expect(correction).to_contain_text(f"→ {CORRECTED}")
    await expect(correction).to_contain_text("api (console) · alice")  # the name it gave

    # Forget asks first: dismissed, nothing goes; confirmed, the row goes, and the audit
    # trail says who did it from where.
    asked: list[str] = []
    answered = asyncio.Event()

    def confirm_with(accept: bool) -> Callable[[Dialog], Awaitable[None]]:
        async def handle(dialog: Dialog) -> None:
            asked.append(dialog.message)
            await (dialog.accept() if accept else dialog.dismiss())
            answered.set()

        return handle

    page.once("dialog", confirm_with(False))
    await fact_row(page, "喜欢喝龙井茶").locator("button.forget").click()
    await asyncio.wait_for(answered.wait(), timeout=10)
    await expect(fact_row(page, "喜欢喝龙井茶")).to_have_count(1)
    await expect(page.locator("#audit tr").filter(has_text="forget:")).to_have_count(0)
    page.once("dialog", confirm_with(True))
    await fact_row(page, "喜欢喝龙井茶").locator("button.forget").click()
    await expect(fact_row(page, "喜欢喝龙井茶")).to_have_count(0)
    assert len(asked) == 2 and "喜欢喝龙井茶" in asked[0], asked
    forgotten = page.locator("#audit tr").filter(has_text="forget: [forgotten]")
    await expect(forgotten).to_contain_text("api (console) · alice")
    await expect(page.locator("#audit")).not_to_contain_text("龙井")  # its words are gone
    # The move to Chengdu (superseded in chat), the correction and the forget.
    moved = page.locator("#audit tr").filter(has_text="supersede: Lives in Hangzhou")
    await expect(moved).to_contain_text("→ Lives in Chengdu")
    await expect(moved).to_contain_text("chat · alice")
    await expect(page.locator("#audit tr")).to_have_count(3)

    # What memory heard: every message alice sent, newest first, with what memory made of it.
    heard = page.locator("#heard tr")
    await expect(heard).to_have_count(len(ABOUT_ALICE) + len(TRIP))
    await expect(heard.first.locator("td.excerpt")).to_have_text(TRIP[-1])
    await expect(heard_row(page, ABOUT_ALICE[0]).locator(".outcome")).to_have_text("kept")
    await expect(heard_row(page, TRIP[0]).locator(".outcome")).to_have_text("kept")
    await expect(heard_row(page, "Thanks!").locator(".outcome")).to_have_text(
        "skipped: an acknowledgement"
    )
    await expect(heard_row(page, "Thanks!")).to_have_attribute("data-outcome", "skipped")

    # The store agrees, through the SDK with alice's token.
    alice = sdk_for(dev_tokens_server, "alice")
    try:
        items = (await alice.store.search_items(["user_facts", "alice"], limit=100))["items"]
        trip_values = await thread_values(alice, seeded.trip_thread)
        history = await alice.threads.get_history(seeded.trip_thread, limit=500)
    finally:
        await alice.aclose()
    stored = {item["value"]["content"]: item["value"]["status"] for item in items}
    assert "喜欢喝龙井茶" not in stored
    assert stored[CORRECTED] == "current"
    assert stored["Allergic to peanuts"] == stored["Lives in Hangzhou"] == "superseded"

    # Past conversations: the trip thread's episode.
    episodes = page.locator("#episodes")
    await expect(episodes).to_contain_text(f"thread {seeded.trip_thread}")
    await expect(episodes).to_contain_text("Giant Buddha")

    # Threads: both of alice's; open the trip for its summary and one bar per turn.
    await expect(page.locator("#threads tr")).to_have_count(2)
    await page.click(f"button.open-thread[data-id='{seeded.trip_thread}']")
    detail = page.locator("#thread-detail")
    await expect(detail).to_contain_text(f"Thread {seeded.trip_thread[-12:]}")
    await expect(detail.locator(".summary")).to_have_text(trip_values["summary"])
    bars = detail.locator("svg rect")
    await expect(bars).to_have_count(len(TRIP))
    per_turn: dict[str, dict[str, Any]] = {}  # oldest first, as the page reads it
    for checkpoint in reversed(history):
        metrics = checkpoint["values"].get("metrics") or {}
        if metrics.get("message_id"):
            per_turn[metrics["message_id"]] = metrics
    expected = [
        f"turn {number}: {m.get('prompt_tokens', 0)} prompt tokens, "
        f"{len(m.get('recalled_fact_ids', [])) + len(m.get('profile_fact_ids', []))} facts"
        + (", compressed" if m.get("compressed") else "")
        + f", memory {memory_words(m)}"
        for number, m in enumerate(per_turn.values(), start=1)
    ]
    assert await bars.locator("title").all_text_contents() == expected
    assert any(", compressed, memory" in title for title in expected)
    # The move to Chengdu was kept in its turn, or held and kept with the next messages (its
    # row under "What memory heard" says kept, checked above).
    assert expected[0].endswith((", memory kept", ", memory held for a batch")), expected[0]
    outcomes = [m["extraction"] for m in per_turn.values()]
    await expect(detail.locator(".memory-summary")).to_contain_text(
        f"Memory per turn: kept {outcomes.count('kept')}"
    )
    await expect(detail.locator(".error")).to_have_count(0)

    # The README's picture: facts with history, the audit trail, the opened thread.
    await page.locator("#search").blur()
    shot = Path(os.environ.get("ASSISTANT_CONSOLE_SCREENSHOT") or tmp_path / "console.png")
    shot.parent.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000

    # A wrong token: a 401, and none of alice's data left on the page.
    await sign_in(page, "tok-mallory")
    await expect(page.locator("#error")).to_contain_text("401: Unknown token")
    await expect(page.locator("#facts tr[data-key]")).to_have_count(0)
    await expect(page.locator("#heard tr")).to_have_count(0)
    await expect(page.locator("#thread-detail")).to_be_empty()
    await expect(page.locator("#who")).to_have_text("not signed in")
    assert "Alice" not in await page.locator("main").inner_text()
    tab.check_clean()

    # Bob, in another browser: his name only, none of alice's facts, threads or episodes.
    bob_tab = await open_tab(f"{dev_tokens_server.url}/console")
    bob_page = bob_tab.page
    await sign_in(bob_page, TOKENS["bob"])
    await expect(bob_page.locator("#who")).to_have_text("signed in as bob")
    await expect(fact_row(bob_page, "Name is Bob")).to_have_count(1)
    assert await facts_shown(bob_page) == ["Name is Bob"]
    await expect(bob_page.locator("#threads tr")).to_have_count(1)
    await expect(bob_page.locator("#episodes")).to_have_text(
        "No past conversations summarised yet."
    )
    await expect(bob_page.locator("#audit")).to_contain_text("No deletions or corrections yet.")
    await expect(bob_page.locator("#heard tr")).to_have_count(1)
    await expect(heard_row(bob_page, "My name is Bob.").locator(".outcome")).to_have_text("kept")
    await bob_page.check("#show-superseded")
    await expect(bob_page.locator("#facts tr[data-key]")).to_have_count(1)
    text = await bob_page.locator("main").inner_text()
    for secret in ("Alice", "Chengdu", "Hangzhou", "peanut", "龙井", "年糕", "Leshan"):
        assert secret not in text, f"bob's console shows {secret!r}"
    bob_tab.check_clean()


async def test_console_without_auth(browser: Browser, server: DevServer, open_tab: OpenTab) -> None:
    sdk = sdk_for(server)
    try:
        alice_thread = await new_thread(sdk)
        await run_turn(server, sdk, alice_thread, ABOUT_ALICE[0], user_id="alice")
        await run_turn(server, sdk, await new_thread(sdk), "My name is Bob.", user_id="bob")
        await run_turn(server, sdk, await new_thread(sdk), MARKUP, user_id="alice")

        tab = await open_tab(f"{server.url}/console?user_id=alice")
        page = tab.page
        await expect(page.locator("#who")).to_have_text("signed in as alice")
        await expect(fact_row(page, "Lives in Hangzhou")).to_have_count(1)
        assert sorted(await facts_shown(page)) == [
            "Allergic to peanuts",
            "Lives in Hangzhou",
            "Name is Alice",
        ]

        # What memory heard shows the message as text, never as markup.
        await expect(page.locator("#heard tr")).to_have_count(2)
        await expect(heard_row(page, MARKUP)).to_have_count(1)
        await expect(page.locator("#heard b, #heard img")).to_have_count(0)
        assert await page.title() == "Memory console · assistant"
        await expect(heard_row(page, ABOUT_ALICE[0]).locator(".outcome")).to_have_text("kept")

        page.once("dialog", lambda dialog: dialog.accept())
        await fact_row(page, "Lives in Hangzhou").locator("button.forget").click()
        await expect(fact_row(page, "Lives in Hangzhou")).to_have_count(0)
        forgotten = page.locator("#audit tr").filter(has_text="forget: [forgotten]")
        await expect(forgotten).to_contain_text("api (console) · alice")
        await expect(page.locator("#audit")).not_to_contain_text("Hangzhou")
        items = (await sdk.store.search_items(["user_facts", "alice"], limit=100))["items"]
        assert sorted(item["value"]["content"] for item in items) == [
            "Allergic to peanuts",
            "Name is Alice",
        ]
        tab.check_clean()

        bob_tab = await open_tab(f"{server.url}/console?user_id=bob")
        await expect(bob_tab.page.locator("#who")).to_have_text("signed in as bob")
        await expect(fact_row(bob_tab.page, "Name is Bob")).to_have_count(1)
        assert await facts_shown(bob_tab.page) == ["Name is Bob"]
        await expect(bob_tab.page.locator("#audit")).not_to_contain_text("Hangzhou")
        bob_tab.check_clean()

        # A failed extraction reads as an error, with the server's reason as text.
        failed_tab = await open_tab(f"{server.url}/console?user_id=alice")
        failure = {
            "at": "2026-12-02T07:50:01+00:00",
            "thread_id": alice_thread,
            "message_id": "m-failed",
            "excerpt": "I'm allergic to shellfish",
            "outcome": "failed",
            "reason": "<b>provider</b> timed out",
            "facts": [],
        }

        async def heard_failed(route: Route) -> None:
            await route.fulfill(json={"heard": [failure]})

        await failed_tab.page.route("**/memory/heard?*", heard_failed)
        await failed_tab.page.reload()
        shellfish = heard_row(failed_tab.page, "I'm allergic to shellfish")
        await expect(shellfish.locator(".outcome")).to_have_text(
            "failed: <b>provider</b> timed out"
        )
        await expect(shellfish).to_have_attribute("data-outcome", "failed")
        await expect(shellfish.locator(".outcome")).to_have_css("color", "rgb(192, 57, 43)")
        failed_tab.check_clean()

        bad_tab = await open_tab(f"{server.url}/console?user_id=not%20a%20user")
        await expect(bad_tab.page.locator("#error")).to_contain_text("400: ")
        await expect(bad_tab.page.locator("#facts tr[data-key]")).to_have_count(0)
        bad_tab.check_clean()
    finally:
        await sdk.aclose()
