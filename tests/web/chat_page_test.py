#!/usr/bin/env python3
"""The web chat page (web/) in headless Chromium, against a live server.

Run against a live server (tests/net/run_server_test.sh starts one):

    ACTORSERVE_URL=http://127.0.0.1:8080 ACTORSERVE_BUILD_DIR=build \
        .venv-test/bin/python tests/web/chat_page_test.py

Checks that an answer streams into the page token by token and ends with a
tokens/s figure (a screenshot goes to $ACTORSERVE_BUILD_DIR/web_chat.png),
then that an answer survives a dropped WebSocket: the page reconnects, sends
`resume`, and the bubble ends with exactly the `done` text, nothing repeated.
Uses Debian's /usr/bin/chromium (no browser download). Prints one line per
check and a closing "N passed, N failed" line; exits non-zero on failure.
"""

import os
import re

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

from checks import check, remaining_ms, run

URL = os.environ.get("ACTORSERVE_URL", "http://127.0.0.1:8080").rstrip("/")
BUILD_DIR = os.environ.get("ACTORSERVE_BUILD_DIR", ".")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SCREENSHOT = os.path.join(BUILD_DIR, "web_chat.png")

ANSWER_TIMEOUT_MS = 60_000   # one answer



# Records, in the page, every distinct length the last assistant bubble's
# text goes through (a MutationObserver sees each token as it lands).
RECORD_LENGTHS_JS = """
() => {
  window.__lengths = [];
  const box = document.getElementById('messages');
  const note = () => {
    const bubbles = box.querySelectorAll('.msg.assistant');
    const b = bubbles[bubbles.length - 1];
    if (!b) return;
    const n = b.textContent.length;
    const l = window.__lengths;
    if (n > 0 && l[l.length - 1] !== n) l.push(n);
  };
  if (window.__lengthObserver) window.__lengthObserver.disconnect();
  window.__lengthObserver = new MutationObserver(note);
  window.__lengthObserver.observe(box, { subtree: true, childList: true, characterData: true });
}
"""

LAST_BUBBLE_JS = """
() => {
  const bubbles = document.querySelectorAll('#messages .msg.assistant');
  const b = bubbles[bubbles.length - 1];
  if (!b) return null;
  return { text: b.textContent, done: b.dataset.doneText ?? null,
           finish: b.dataset.finishReason ?? null, busy: b.getAttribute('aria-busy') };
}
"""


def ask(page, prompt, max_tokens, temperature):
    page.fill("#temperature", str(temperature))
    page.fill("#max_tokens", str(max_tokens))
    page.fill("#prompt", prompt)
    count = page.locator("#messages .msg.assistant").count()
    page.click("#send")
    # A new assistant bubble appears at once.
    # (Predicates are written as functions: the page's Content-Security-Policy
    # forbids eval, which Playwright would use to poll a bare expression.)
    page.wait_for_function(
        f"() => document.querySelectorAll('#messages .msg.assistant').length > {count}",
        timeout=remaining_ms(5_000))


def wait_done(page, what):
    """Waits until the last answer has ended (done), returns the last bubble's state."""
    try:
        page.wait_for_function(
            "() => { const s = document.getElementById('status');"
            " return s.dataset.state === 'done' || s.dataset.state === 'error'; }",
            timeout=remaining_ms(ANSWER_TIMEOUT_MS))
    except PlaywrightError:
        raise AssertionError(f"{what}: the answer did not end in time; status: "
                             f"{page.text_content('#status')!r}, state: {page.evaluate('window.__actorserve_state()')}")
    state = page.get_attribute("#status", "data-state")
    errors = page.locator("#messages .msg.error").all_text_contents()
    assert state == "done", f"{what}: the answer ended with an error: {errors}"
    return page.evaluate(LAST_BUBBLE_JS)


def page_loads(page):
    page.goto(URL + "/", timeout=remaining_ms(20_000))
    for sel in ("#prompt", "#send", "#stop", "#messages", "#status", "#tps"):
        assert page.locator(sel).count() == 1, f"no {sel} on the page"
    try:
        page.wait_for_selector('#status[data-conn="open"]', timeout=remaining_ms(15_000))
    except PlaywrightError:
        raise AssertionError(f"the WebSocket did not connect: status {page.text_content('#status')!r}")
    assert page.is_enabled("#send"), "Send is disabled while connected and idle"
    assert page.is_disabled("#stop"), "Stop is enabled with nothing running"


def answer_streams(page):
    page.evaluate(RECORD_LENGTHS_JS)
    ask(page, "Write three sentences about the sea.", max_tokens=64, temperature=0.7)
    try:
        page.wait_for_function(
            "() => { const b = [...document.querySelectorAll('#messages .msg.assistant')].pop();"
            " return b && b.textContent.length > 0; }",
            timeout=remaining_ms(ANSWER_TIMEOUT_MS))
    except PlaywrightError:
        raise AssertionError("no text appeared in the assistant bubble")
    streaming = page.get_attribute("#status", "data-state")
    bubble = wait_done(page, "first answer")
    lengths = page.evaluate("window.__lengths")
    assert bubble["text"], "the answer is empty"
    assert len(set(lengths)) >= 2, (
        f"the text did not grow token by token: lengths seen {lengths} (state when the first text "
        f"appeared: {streaming})")
    assert bubble["done"] is not None, "the bubble has no data-done-text after done"
    assert bubble["text"] == bubble["done"], \
        f"bubble text {bubble['text']!r} != done.text {bubble['done']!r}"
    assert page.is_enabled("#send"), "Send is not enabled again after the answer"
    assert page.is_disabled("#stop"), "Stop is still enabled after the answer"
    print(f"     {len(lengths)} lengths seen, {bubble['finish']}: {bubble['text'][:80]!r}...")


def tps_shown(page):
    tps = page.text_content("#tps") or ""
    assert re.search(r"\d+(\.\d+)?\s*tok/s", tps), f"#tps shows no tokens/s figure: {tps!r}"
    status = page.text_content("#status") or ""
    assert "done" in status, f"#status does not say done: {status!r}"
    print(f"     #tps: {tps!r}; #status: {status!r}")


def screenshot(page):
    os.makedirs(BUILD_DIR, exist_ok=True)
    page.screenshot(path=SCREENSHOT, full_page=True)
    assert os.path.getsize(SCREENSHOT) > 0, "empty screenshot"
    print(f"     {SCREENSHOT}")


def survives_a_drop(page):
    ask(page, "Tell me a long story about a dragon who learns to bake bread.",
        max_tokens=200, temperature=0)
    # Drop the connection once a few tokens have been rendered.
    try:
        page.wait_for_function(
            "() => { const s = window.__actorserve_state();"
            " return (s.request && s.request.tokens >= 8) || s.phase !== 'waiting' && !s.request; }",
            timeout=remaining_ms(ANSWER_TIMEOUT_MS))
    except PlaywrightError:
        raise AssertionError(f"the second answer did not start streaming: {page.evaluate('window.__actorserve_state()')}")
    before = page.evaluate("window.__actorserve_state()")
    assert before["request"] is not None, f"the answer ended before the drop could be tested: {before}"
    text_at_drop = page.evaluate(LAST_BUBBLE_JS)["text"]
    assert page.evaluate("window.__actorserve_test_drop()") is True, "the test hook found no socket"
    status = page.text_content("#status") or ""
    assert "reconnecting" in status, f"#status does not say reconnecting after the drop: {status!r}"
    bubble = wait_done(page, "answer after the drop")
    after = page.evaluate("window.__actorserve_state()")
    assert after["drops"] >= before["drops"] + 1, f"no drop counted: {before} -> {after}"
    assert after["resumes"] >= before["resumes"] + 1, f"no resume sent: {before} -> {after}"
    assert after["connects"] >= before["connects"] + 1, f"no reconnect: {before} -> {after}"
    assert bubble["done"] is not None, "the bubble has no data-done-text after done"
    assert bubble["text"] == bubble["done"], (
        f"bubble text differs from done.text (repeated or lost text):\n  bubble: {bubble['text']!r}\n"
        f"  done:   {bubble['done']!r}")
    assert bubble["text"].startswith(text_at_drop), \
        f"the text rendered before the drop is not a prefix of the final text: {text_at_drop!r}"
    assert len(bubble["text"]) > len(text_at_drop), \
        f"the answer did not continue after the drop ({len(text_at_drop)} chars at the drop, {bubble['finish']})"
    assert len(page.locator("#messages .msg.assistant").all()) == 2, "the resumed answer opened another bubble"
    assert page.is_enabled("#send"), "Send is not enabled again after the resumed answer"
    print(f"     dropped at {before['request']['tokens']} tokens ({len(text_at_drop)} chars), "
          f"ended with {len(bubble['text'])} chars ({bubble['finish']}); "
          f"{after['gaps']} gaps, {after['skipped']} skipped events")


def no_page_errors(console_errors):
    uncaught = [e for e in console_errors if e.startswith("uncaught:")]
    assert not uncaught, f"uncaught errors in the page: {uncaught} (console errors: {console_errors})"


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        try:
            page = browser.new_page(viewport={"width": 900, "height": 700})
            page.set_default_timeout(30_000)
            console_errors = []
            page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: console_errors.append(f"uncaught: {e}"))

            if check("the page loads and connects", page_loads, page) is None:
                return
            if check("an answer streams in token by token", answer_streams, page) is not None:
                check("#tps shows tokens/s when done", tps_shown, page)
                check(f"screenshot {os.path.basename(SCREENSHOT)}", screenshot, page)
            check("an answer survives a dropped WebSocket (resume, no repeated text)",
                  survives_a_drop, page)
            check("no uncaught JavaScript errors", no_page_errors, console_errors)
        finally:
            browser.close()


run(main)
