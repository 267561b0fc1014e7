#!/usr/bin/env python3
"""The metrics dashboard (web/dashboard.html) in headless Chromium, against a live server.

Run against a live server (tests/net/run_server_test.sh starts one):

    ACTORSERVE_URL=http://127.0.0.1:8080 ACTORSERVE_BUILD_DIR=build \
        .venv-test/bin/python tests/web/dashboard_test.py

Loads /dashboard and waits for its first polls of /metrics; sends a few chat
requests (POST /v1/chat/completions, max_tokens 16) and checks that the page
shows a nonzero tokens/s and, once the server is quiet, the same totals and
gauges as a scrape of /metrics, and percentiles that are histogram_quantile's of
its window's bucket increases; checks the page's parser and percentile rule
against this file's own (Prometheus' algorithm) on the server's real /metrics
text; that every plot has drawn values; that a 503 from /metrics and a loading
server (actorserve_ready 0) are shown as such; and that no JavaScript error
occurred. Screenshots go to $ACTORSERVE_BUILD_DIR/web_dashboard.png (and
web_dashboard_503.png). Uses Debian's /usr/bin/chromium. Prints one line per
check and a closing "N passed, N failed" line; exits non-zero on failure.
"""

import json
import math
import os
import re
import threading
import urllib.request

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

from checks import check, remaining_ms, run

URL = os.environ.get("ACTORSERVE_URL", "http://127.0.0.1:8080").rstrip("/")
BUILD_DIR = os.environ.get("ACTORSERVE_BUILD_DIR", ".")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SCREENSHOT = os.path.join(BUILD_DIR, "web_dashboard.png")
SCREENSHOT_503 = os.path.join(BUILD_DIR, "web_dashboard_503.png")

POLL_S = 2                   # the page's poll interval (dashboard.js POLL_MS)



# ------------------------------------------------------------ the server --

def scrape():
    with urllib.request.urlopen(URL + "/metrics", timeout=10) as r:
        assert r.status == 200, f"/metrics answered {r.status}"
        return r.read().decode("utf-8")


def chat(prompt):
    body = json.dumps({"messages": [{"role": "user", "content": prompt}],
                       "max_tokens": 16, "temperature": 0}).encode()
    req = urllib.request.Request(URL + "/v1/chat/completions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


# Prometheus text format 0.0.4, parsed independently of the page: the test's oracle.
SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$')
LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


def unescape(v):
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), v)


def parse(text):
    samples = []
    for line in text.split("\n"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        assert m, f"the oracle cannot parse {line!r}"
        labels = {}
        if m.group(2):
            pos = 0
            while pos < len(m.group(2)):
                lm = LABEL_RE.match(m.group(2), pos)
                assert lm, f"the oracle cannot parse the labels of {line!r}"
                labels[lm.group(1)] = unescape(lm.group(2))
                pos = lm.end()
        samples.append((m.group(1), labels, float(m.group(3))))
    return samples


def value(samples, name, **match):
    """The sum over the series of `name` whose labels include `match`; None when there are none."""
    vs = [v for n, l, v in samples if n == name and all(l.get(k) == x for k, x in match.items())]
    return sum(vs) if vs else None


def buckets(samples, family):
    per = {}
    for n, l, v in samples:
        if n == family + "_bucket":
            le = float(l["le"])
            per[le] = per.get(le, 0) + v
    return sorted(per.items())


def bucket_quantile(q, bs):
    """histogram_quantile's rule (Prometheus promql/quantile.go, bucketQuantile)."""
    if len(bs) < 2 or not math.isinf(bs[-1][0]):
        return None
    observations = bs[-1][1]
    if observations == 0:
        return None
    rank = q * observations
    b = next((i for i in range(len(bs) - 1) if bs[i][1] >= rank), len(bs) - 1)
    if b == len(bs) - 1:
        return bs[-2][0]
    if b == 0 and bs[0][0] <= 0:
        return bs[0][0]
    start, end, count = 0.0, bs[b][0], bs[b][1]
    if b > 0:
        start = bs[b - 1][0]
        count -= bs[b - 1][1]
        rank -= bs[b - 1][1]
    return start + (end - start) * (rank / count)


def close(a, b, rel=1e-9):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


# -------------------------------------------------------------- the page --

# (Predicates are functions: the page's Content-Security-Policy forbids eval,
# which Playwright would use to poll a bare expression.)
STATE_JS = "() => window.__actorserve_dashboard.state()"

FIGURES = ("ready", "connections", "requests-total", "gen-total", "prompt-total", "gen-tps",
           "prompt-tps", "running", "waiting", "ttft-p50", "ttft-p95", "ttft-p99", "itl-p50",
           "itl-p95", "itl-p99", "kv-usage", "cache-lookups-rate", "cache-hits-rate",
           "cache-hit-ratio")
PLOTS = ("plot-tokens", "plot-queue", "plot-ttft", "plot-itl", "plot-kv", "plot-cache")


def figure(page, fid):
    """A figure's number (its data-value), None when it shows none."""
    v = page.get_attribute(f"#{fid}", "data-value")
    return None if v in (None, "") else float(v)


def wait_polls(page, n, what):
    """Waits until the page has polled successfully n more times; returns its state."""
    start = page.evaluate(STATE_JS)["polls"]
    try:
        page.wait_for_function(
            f"() => {{ const s = window.__actorserve_dashboard.state();"
            f" return s.polls >= {start + n} && s.state === 'live'; }}",
            timeout=remaining_ms((n + 3) * POLL_S * 1000))
    except PlaywrightError:
        raise AssertionError(f"{what}: the page did not poll {n} more times: {page.evaluate(STATE_JS)}")
    return page.evaluate(STATE_JS)


def page_loads(page):
    page.goto(URL + "/dashboard", timeout=remaining_ms(20_000))
    for fid in FIGURES + PLOTS + ("status", "banner", "chat-link"):
        assert page.locator(f"#{fid}").count() == 1, f"no #{fid} on the page"
    st = wait_polls(page, 3, "first polls")
    assert st["malformed"] == 0, f"{st['malformed']} lines of /metrics did not parse"
    assert page.is_hidden("#banner"), f"a banner shows while live: {page.text_content('#banner')!r}"
    assert figure(page, "ready") == 1, "#ready does not show 1"
    assert page.get_attribute("#chat-link", "href") == "./", "the link to the chat is not ./"
    print(f"     {st['polls']} polls; status {page.text_content('#status')!r}")


# Cases the server does not write but the format allows: escapes in label
# values, a timestamp, spacing, special values, comments.
EDGE_TEXT = "\n".join([
    "# HELP x_total A help text with \\\\ and \\n.",
    "# TYPE x_total counter",
    'x_total{a="q\\"uote",b="back\\\\slash",c="new\\nline"} 3 1700000000000',
    'x_total{ a = "sp aced" , } 4',
    "plain_gauge -1.5e-3",
    'h_bucket{le="0.5"} 1', 'h_bucket{le="1"} 3', 'h_bucket{le="+Inf"} 4',
    "special{v=\"inf\"} +Inf", "special{v=\"nan\"} NaN", "special{v=\"ninf\"} -Inf",
    "", "   ", "not a sample line", 'broken{a="x} 1',
])


def parser_agrees(page):
    text = scrape()
    want = parse(text)
    got = page.evaluate("([t]) => window.__actorserve_dashboard.parse(t)", [text])
    assert got["malformed"] == 0, f"the page found {got['malformed']} malformed lines in /metrics"
    assert len(got["samples"]) == len(want), f"{len(got['samples'])} samples parsed, the oracle has {len(want)}"
    for s, (n, labels, v) in zip(got["samples"], want):
        assert (s["name"], s["labels"]) == (n, labels), f"{s} != {(n, labels, v)}"
        assert s["value"] == v or (math.isnan(s["value"]) and math.isnan(v)), f"{s} != {(n, labels, v)}"
    types = got["types"]
    assert types.get("actorserve_time_to_first_token_seconds") == "histogram", f"TYPE not read: {types}"
    assert types.get("actorserve_generation_tokens_total") == "counter", f"TYPE not read: {types}"

    edge = page.evaluate("([t]) => window.__actorserve_dashboard.parse(t)", [EDGE_TEXT])
    assert edge["malformed"] == 2, f"expected the 2 broken lines counted malformed: {edge}"
    by = [(s["name"], s["labels"], s["value"]) for s in edge["samples"]]
    assert by[0] == ("x_total", {"a": 'q"uote', "b": "back\\slash", "c": "new\nline"}, 3), by[0]
    assert by[1] == ("x_total", {"a": "sp aced"}, 4), by[1]
    assert by[2] == ("plain_gauge", {}, -0.0015), by[2]
    special = {s[1]["v"]: s[2] for s in by if s[0] == "special"}
    assert special["inf"] == math.inf and special["ninf"] == -math.inf and math.isnan(special["nan"]), special
    print(f"     {len(want)} samples of /metrics, {len(edge['samples'])} of the edge cases")


def quantiles_agree(page):
    # The server's histograms (cumulative since start) and small hand-made ones.
    text = scrape()
    samples = parse(text)
    families = sorted({n[:-len("_bucket")] for n, _, _ in samples if n.endswith("_bucket")})
    assert "actorserve_time_to_first_token_seconds" in families, f"no TTFT histogram in /metrics: {families}"
    cases = [(text, f, bucket_quantile, buckets(samples, f)) for f in families]
    hand = [
        [(0.1, 0), (0.2, 10), (math.inf, 10)],    # all in one bucket
        [(0.1, 5), (0.2, 5), (math.inf, 10)],     # half above the last bound: P95 is that bound
        [(0.1, 0), (0.2, 0), (math.inf, 0)],      # no observations: none
        [(1, 1), (2, 2), (4, 3), (math.inf, 4)],
    ]
    for bs in hand:
        t = "\n".join(f'h_bucket{{le="{"+Inf" if math.isinf(le) else le}"}} {c}' for le, c in bs)
        cases.append((t, "h", bucket_quantile, bs))
    n = 0
    for t, family, oracle, bs in cases:
        for q in (0.5, 0.95, 0.99):
            got = page.evaluate("([q, t, f]) => window.__actorserve_dashboard.quantile(q, t, f)", [q, t, family])
            want = oracle(q, bs)
            assert close(got, want), f"{family} q={q}: the page says {got}, histogram_quantile {want} (buckets {bs})"
            n += 1
    print(f"     {n} quantiles, {len(families)} histograms of /metrics and {len(hand)} by hand")


PROMPTS = [
    "Name three rivers in Europe.",
    "Write a haiku about autumn leaves.",
    "What is 17 times 23? Explain the steps.",
    "List four colours of the rainbow.",
    "Describe a lighthouse in one sentence.",
]


def figures_move(page):
    before = page.evaluate(STATE_JS)["latest"]
    results, errors = [], []

    def send(prompts):
        for p in prompts:
            try:
                results.append(chat(p))
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(f"{p!r}: {e}")

    # Two clients at once, so the queue has something in it; then the first
    # prompt once more, which the exact cache answers.
    threads = [threading.Thread(target=send, args=(PROMPTS[i::2],)) for i in range(2)]
    for t in threads:
        t.start()
    try:
        page.wait_for_function(
            "() => +document.getElementById('gen-tps').dataset.value > 0",
            timeout=remaining_ms(60_000))
    except PlaywrightError:
        raise AssertionError(f"#gen-tps stayed at {figure(page, 'gen-tps')} while requests ran")
    tps = figure(page, "gen-tps")
    for t in threads:
        t.join(timeout=remaining_ms(90_000) / 1000)
    assert not errors, f"chat requests failed: {errors}"
    assert len(results) == len(PROMPTS), f"{len(results)} of {len(PROMPTS)} chat requests answered"
    again = chat(PROMPTS[0])
    results.append(again)
    generated = sum(r["usage"]["completion_tokens"] for r in results if not r.get("cached"))
    cached = sum(1 for r in results if r.get("cached"))
    assert generated > 0, f"no tokens generated: {results}"

    try:
        page.wait_for_function(
            "() => +document.getElementById('cache-hits-rate').dataset.value > 0",
            timeout=remaining_ms(15_000))
        hits_rate = figure(page, "cache-hits-rate")
    except PlaywrightError:
        hits_rate = None
    if cached:
        assert hits_rate, f"{cached} answers came from the cache, but #cache-hits-rate showed none"
    print(f"     #gen-tps {tps} tok/s while running; {generated} tokens generated, "
          f"{cached} answers cached, #cache-hits-rate {hits_rate}")
    return before, generated


def figures_agree(page, before, generated):
    # The server is quiet now: two polls later the page's figures are the scrape's.
    wait_polls(page, 2, "after the requests")
    text = scrape()
    samples = parse(text)
    shown = {fid: figure(page, fid) for fid in FIGURES}
    expect = {
        "gen-total": value(samples, "actorserve_generation_tokens_total"),
        "prompt-total": value(samples, "actorserve_prompt_tokens_total"),
        "requests-total": value(samples, "actorserve_requests_total"),
        "running": value(samples, "actorserve_num_requests_running"),
        "waiting": value(samples, "actorserve_num_requests_waiting"),
        "kv-usage": value(samples, "actorserve_kv_cache_usage_perc"),
        "ready": value(samples, "actorserve_ready"),
    }
    for fid, want in expect.items():
        assert shown[fid] is not None and close(shown[fid], want), \
            f"#{fid} shows {shown[fid]}, /metrics says {want}"
    assert expect["running"] == 0 and expect["waiting"] == 0, f"the server is not quiet: {expect}"
    grew = shown["gen-total"] - before["genTotal"]
    assert grew == generated, \
        f"#gen-total grew by {grew} over the requests, their uncached completion_tokens add to {generated}"
    # The percentiles shown are histogram_quantile's of the bucket increases in
    # the page's 30 s window; those increases are at most the server's counts
    # since start, and all of them when every observation is in the window
    # (this server served nothing before the page loaded).
    latest = page.evaluate(STATE_JS)["latest"]
    windows = {}
    for k, family in (("ttft", "actorserve_time_to_first_token_seconds"),
                      ("itl", "actorserve_inter_token_latency_seconds")):
        win = latest[k]["buckets"]
        assert win, f"no {k} window 30 s after the requests: {latest[k]}"
        win = [(b["le"], b["count"]) for b in win]
        since_start = buckets(samples, family)
        assert [le for le, _ in win] == [le for le, _ in since_start], f"{k}: bounds {win} vs {since_start}"
        assert all(0 <= c <= s for (_, c), (_, s) in zip(win, since_start)), \
            f"{k}: window {win} is not within the counts since start {since_start}"
        assert win[-1][1] > 0, f"{k}: no observations in the window: {win}"
        if win[-1][1] == since_start[-1][1]:
            assert win == since_start, f"{k}: every observation is in the window, but {win} != {since_start}"
        for p in ("p50", "p95", "p99"):
            want = bucket_quantile(int(p[1:]) / 100, win)
            assert close(shown[f"{k}-{p}"], want), f"#{k}-{p} shows {shown[f'{k}-{p}']}, its window gives {want}"
            assert 0 < want < math.inf, f"#{k}-{p}: {want}"
        windows[k] = f"{win[-1][1]:g} of {since_start[-1][1]:g} observations in the window"
    for fid in ("gen-tps", "ttft-p50", "itl-p50", "kv-usage"):
        text_shown = page.text_content(f"#{fid}")
        assert text_shown and text_shown != "–", f"#{fid} shows {text_shown!r}"
    print("     " + ", ".join(f"{k} {shown[k]}" for k in ("gen-total", "prompt-total", "requests-total",
                                                          "ttft-p50", "itl-p99", "kv-usage")))
    print(f"     ttft: {windows['ttft']}; itl: {windows['itl']}")


def plots_drawn(page):
    drawn = {pid: int(page.get_attribute(f"#{pid}", "data-points") or 0) for pid in PLOTS}
    st = page.evaluate(STATE_JS)
    for pid, n in drawn.items():
        assert n >= 2, f"#{pid} drew {n} values after {st['polls']} polls ({drawn})"
    # The canvas holds pixels in a series colour, not only the axes.
    coloured = page.evaluate("""() => {
      const c = document.getElementById('plot-tokens');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && Math.abs(d[i] - d[i + 2]) > 60) ++n;
      return n;
    }""")
    assert coloured > 20, f"#plot-tokens has {coloured} coloured pixels"
    print(f"     values drawn: {drawn}")


def screenshot(page, path):
    os.makedirs(BUILD_DIR, exist_ok=True)
    page.screenshot(path=path, full_page=True)
    assert os.path.getsize(path) > 0, "empty screenshot"
    print(f"     {path}")


def no_page_errors(console_errors):
    assert not console_errors, f"console errors: {console_errors}"


LOADING_METRICS = "\n".join([
    "# TYPE actorserve_num_requests_running gauge",
    'actorserve_num_requests_running{model_name="m"} 0',
    "# TYPE actorserve_ready gauge",
    "actorserve_ready 0",
    "",
])


def failures_shown(page):
    def wait_state(state, what):
        try:
            page.wait_for_function(
                f"() => window.__actorserve_dashboard.state().state === '{state}'",
                timeout=remaining_ms(4 * POLL_S * 1000))
        except PlaywrightError:
            raise AssertionError(f"{what}: the page did not go to {state}: {page.evaluate(STATE_JS)}")
        banner = page.text_content("#banner") or ""
        return banner, page.is_visible("#banner")

    error = json.dumps({"error": {"type": "overloaded_error", "code": 503,
                                  "message": "/metrics: the runtime's metrics did not answer within 2 s"}})
    page.route("**/metrics", lambda route: route.fulfill(
        status=503, content_type="application/json", headers={"Retry-After": "1"}, body=error))
    banner, visible = wait_state("unavailable", "a 503")
    assert visible and "Metrics unavailable" in banner and "did not answer within 2 s" in banner, \
        f"the banner for a 503: {banner!r} (visible: {visible})"
    screenshot(page, SCREENSHOT_503)
    page.unroute("**/metrics")

    page.route("**/metrics", lambda route: route.fulfill(
        status=200, content_type="text/plain; version=0.0.4", body=LOADING_METRICS))
    banner, visible = wait_state("not-ready", "actorserve_ready 0")
    assert visible and "Server not ready" in banner, f"the banner while loading: {banner!r}"
    assert page.text_content("#ready") == "loading", f"#ready shows {page.text_content('#ready')!r} while loading"
    page.unroute("**/metrics")

    wait_state("live", "the real /metrics again")
    assert page.is_hidden("#banner"), "the banner stays once /metrics answers again"
    print(f"     503 -> {page.text_content('#status')!r} again")


def main():
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)
            console_errors = []
            page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: console_errors.append(f"uncaught: {e}"))

            if check("/dashboard loads and polls /metrics", page_loads, page) is None:
                return
            moved = check("chat requests show as a nonzero tokens/s", figures_move, page)
            if moved is not None:
                check("the figures shown agree with /metrics", figures_agree, page, *moved)
            # On /metrics after the requests: latencies (floats), histograms with counts.
            check("the page parses /metrics as the oracle does (and the format's edge cases)", parser_agrees, page)
            check("the page's percentiles are histogram_quantile's", quantiles_agree, page)
            check("every plot has drawn values", plots_drawn, page)
            check(f"screenshot {os.path.basename(SCREENSHOT)}", screenshot, page, SCREENSHOT)
            check("no JavaScript errors while live", no_page_errors, list(console_errors))
            # The 503s below are logged by Chromium itself ("Failed to load resource").
            n = len(console_errors)
            check("a 503 and a loading server are shown, then live again", failures_shown, page)
            check("no JavaScript errors but the 503s' own", no_page_errors,
                  [e for e in console_errors[n:] if "503" not in e])
        finally:
            browser.close()


run(main)
