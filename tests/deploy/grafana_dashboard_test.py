#!/usr/bin/env python3
"""The Grafana dashboard (configs/grafana/actorserve.json) against a live server's /metrics.

Run against a live server (tests/net/run_server_test.sh starts one; the standard library only):

    ACTORSERVE_URL=http://127.0.0.1:8080 python3 tests/deploy/grafana_dashboard_test.py [DASHBOARD]

Checks the dashboard's structure as Grafana's import needs it (a DS_PROMETHEUS input, unique
panel ids, a gridPos on every panel, inside the 24 columns and not overlapping, a datasource
and targets with an expr on every panel), then that every metric name an expr or a variable
query uses is a series name the server's /metrics really exports (histograms as _bucket, _sum
or _count), that rate() and friends are taken of counters and histogram series only, and that
every label an expr names (in a selector, by, without, on, ignoring) is one the metric has, or
job/instance (which Prometheus adds). A self-check first makes sure the checker catches a
metric that does not exist. Prints one line per check and "N passed, N failed".
"""

import json
import os
import re
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DASHBOARD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "configs", "grafana", "actorserve.json")
URL = os.environ.get("ACTORSERVE_URL", "http://127.0.0.1:8080").rstrip("/")
DS_UID = "${DS_PROMETHEUS}"
COLUMNS = 24
# Labels Prometheus adds at scrape time, and le, which every _bucket series has.
TARGET_LABELS = {"job", "instance"}
# Functions whose argument must be a counter (or a histogram's _bucket/_sum/_count).
COUNTER_FUNCS = {"rate", "irate", "increase", "resets"}

passed = 0
failed = 0


def check(name, fn, *args):
    global passed, failed
    try:
        problems = fn(*args)
    except Exception as e:  # noqa: BLE001 (a crash is a failure of this check)
        problems = [f"{type(e).__name__}: {e}"]
    if problems:
        failed += 1
        print(f"FAIL {name}:")
        for p in problems:
            print(f"       {p}")
    else:
        passed += 1
        print(f"ok   {name}")


# ------------------------------------------------------------------ /metrics --

SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+(?:\s+-?\d+)?$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(deadline_s=30):
    """The server's /metrics: {series name: {label: set of values}}, {family: type}."""
    end = time.monotonic() + deadline_s
    while True:
        try:
            with urllib.request.urlopen(URL + "/metrics", timeout=10) as r:
                text = r.read().decode("utf-8")
            break
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(1)
    series, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            types[name] = kind
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE_RE.match(line)
        assert m, f"/metrics line not understood: {line!r}"
        labels = series.setdefault(m.group(1), {})
        for k, v in LABEL_RE.findall(m.group(2) or ""):
            labels.setdefault(k, set()).add(v)
    return series, types


def kind_of(name, types):
    """A series name's type: its family's (a histogram's _bucket/_sum/_count are 'histogram')."""
    if name in types:
        return types[name]
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
            return "histogram"
    return None


# ------------------------------------------------------------------- PromQL --

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
            "offset", "inf", "nan", "atan2"}
GROUPING_RE = re.compile(r'\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)')
SELECTOR_RE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}')
MATCHER_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?')
IDENT_RE = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*')


def strip(expr):
    """The expr without its string literals, label matchers, ranges, variables and numbers."""
    e = re.sub(r'\$\{[^}]*\}|\$[a-zA-Z_][a-zA-Z0-9_]*', ' 1 ', expr)
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', e)
    e = re.sub(r'\{[^}]*\}', ' ', e)
    e = re.sub(r'\[[^\]]*\]', ' ', e)
    e = GROUPING_RE.sub(' ', e)
    e = re.sub(r'(?<![a-zA-Z_:])\d+(\.\d+)?([eE][-+]?\d+)?', ' ', e)
    return e


def metric_names(expr):
    """Every metric name in a PromQL expr (identifiers that are not functions or keywords)."""
    names = []
    e = strip(expr)
    for m in IDENT_RE.finditer(e):
        word = m.group(0)
        if word.lower() in KEYWORDS:
            continue
        if re.match(r'\s*\(', e[m.end():]):  # a function call
            continue
        names.append(word)
    return names


def counter_args(expr):
    """Metric names given to rate(), increase() and the like."""
    out = []
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    for m in re.finditer(r'\b(' + '|'.join(COUNTER_FUNCS) + r')\s*\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)', e):
        out.append((m.group(1), m.group(2)))
    return out


def label_problems(expr, series):
    """Labels an expr names that its metrics do not have."""
    problems = []
    names = [n for n in metric_names(expr) if n in series]
    known = set(TARGET_LABELS)
    for n in names:
        known |= set(series[n])
    for m in SELECTOR_RE.finditer(expr):
        name, body = m.group(1), m.group(2)
        if name not in series:
            continue
        pos = 0
        while pos < len(body.strip()):
            mm = MATCHER_RE.match(body, pos)
            if not mm:
                problems.append(f"cannot read the matchers of {name}{{{body}}}")
                break
            label, op, value = mm.groups()
            pos = mm.end()
            if label in TARGET_LABELS:
                continue
            if label not in series[name]:
                problems.append(f"{name} has no label {label!r} (it has {sorted(series[name])})")
            elif op == "=" and "$" not in value and value not in series[name][label]:
                problems.append(f'{name}{{{label}="{value}"}}: no such value (there are {sorted(series[name][label])})')
    for m in GROUPING_RE.finditer(expr):
        for label in (x.strip() for x in m.group(2).split(",")):
            if label and label not in known:
                problems.append(f"{m.group(1)} ({label}): no metric of the expr has that label")
    return problems


def expr_problems(expr, series, types):
    problems = []
    names = metric_names(expr)
    if not names:
        problems.append("names no metric")
    for n in names:
        if n in series:
            continue
        if types.get(n) == "histogram":
            problems.append(f"{n} is a histogram: use {n}_bucket, {n}_sum or {n}_count")
        else:
            problems.append(f"{n} is not in /metrics")
    for fn, n in counter_args(expr):
        k = kind_of(n, types)
        if n in series and k not in ("counter", "histogram"):
            problems.append(f"{fn}({n}): {n} is a {k}, not a counter")
    if "histogram_quantile" in expr and not re.search(r'_bucket\b', expr):
        problems.append("histogram_quantile without a _bucket series")
    problems += label_problems(expr, series)
    return problems


# ---------------------------------------------------------------- dashboard --

def all_panels(dash):
    for p in dash.get("panels", []):
        yield p
        for q in p.get("panels", []):  # a collapsed row holds its panels
            yield q


def exprs(dash):
    """(where, expr) for every target's expr and every query variable's query."""
    out = []
    for p in all_panels(dash):
        for t in p.get("targets", []):
            out.append((f"panel {p.get('id')} {p.get('title')!r} target {t.get('refId')}", t.get("expr", "")))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            q = v.get("query")
            q = q.get("query", "") if isinstance(q, dict) else q or ""
            m = re.fullmatch(r'\s*label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*', q)
            out.append((f"variable {v.get('name')!r}", m.group(1) if m else q))
    return out


def structure_problems(dash):
    problems = []
    if not isinstance(dash.get("schemaVersion"), int) or dash["schemaVersion"] < 36:
        problems.append(f"schemaVersion {dash.get('schemaVersion')!r}: want a recent one (39)")
    for key in ("title", "uid"):
        if not dash.get(key):
            problems.append(f"no {key}")
    inputs = dash.get("__inputs", [])
    if not any(i.get("name") == "DS_PROMETHEUS" and i.get("type") == "datasource" and i.get("pluginId") == "prometheus"
               for i in inputs):
        problems.append(f"no DS_PROMETHEUS datasource input in __inputs: {inputs}")
    ids, boxes = set(), []
    panels = list(all_panels(dash))
    if not panels:
        problems.append("no panels")
    for p in panels:
        pid, title = p.get("id"), p.get("title")
        where = f"panel {pid} {title!r}"
        if not isinstance(pid, int):
            problems.append(f"{where}: id is not an integer")
        elif pid in ids:
            problems.append(f"{where}: id {pid} used twice")
        ids.add(pid)
        if not title:
            problems.append(f"{where}: no title")
        g = p.get("gridPos") or {}
        if not all(isinstance(g.get(k), int) for k in ("x", "y", "w", "h")):
            problems.append(f"{where}: gridPos {g} needs integer x, y, w, h")
            continue
        if g["x"] < 0 or g["y"] < 0 or g["w"] < 1 or g["h"] < 1 or g["x"] + g["w"] > COLUMNS:
            problems.append(f"{where}: gridPos {g} is outside the {COLUMNS} columns")
        for other, og in boxes:
            if g["x"] < og["x"] + og["w"] and og["x"] < g["x"] + g["w"] and g["y"] < og["y"] + og["h"] and og["y"] < g["y"] + g["h"]:
                problems.append(f"{where}: gridPos {g} overlaps {other} {og}")
        boxes.append((where, g))
        if p.get("type") == "row":
            continue
        ds = p.get("datasource") or {}
        if ds.get("uid") != DS_UID or ds.get("type") != "prometheus":
            problems.append(f"{where}: datasource {ds}, want {{type: prometheus, uid: {DS_UID}}}")
        targets = p.get("targets") or []
        if not targets:
            problems.append(f"{where}: no targets")
        refs = [t.get("refId") for t in targets]
        if len(set(refs)) != len(refs) or None in refs:
            problems.append(f"{where}: refIds {refs} are not unique")
        for t in targets:
            if not (t.get("expr") or "").strip():
                problems.append(f"{where}: target {t.get('refId')} has no expr")
            tds = t.get("datasource")
            if tds is not None and tds.get("uid") != DS_UID:
                problems.append(f"{where}: target {t.get('refId')} datasource {tds}")
    names = {v.get("name") for v in dash.get("templating", {}).get("list", [])}
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") == "query" and (v.get("datasource") or {}).get("uid") != DS_UID:
            problems.append(f"variable {v.get('name')!r}: datasource {v.get('datasource')}")
    for where, e in exprs(dash):
        for ref in re.findall(r'\$\{?([a-zA-Z_][a-zA-Z0-9_]*)', e):
            if not ref.startswith("__") and ref not in names:
                problems.append(f"{where}: ${ref} is not a variable of the dashboard")
    return problems


def metric_problems(dash, series, types):
    problems = []
    for where, e in exprs(dash):
        problems += [f"{where}: {p}  [{e}]" for p in expr_problems(e, series, types)]
    return problems


def required_panels(dash):
    """The figures the dashboard is for: each is used by some expr."""
    used = " ".join(e for _, e in exprs(dash))
    want = ["actorserve_requests_total", "actorserve_generation_tokens_total", "actorserve_prompt_tokens_total",
            "actorserve_time_to_first_token_seconds_bucket", "actorserve_inter_token_latency_seconds_bucket",
            "actorserve_e2e_request_latency_seconds_bucket", "actorserve_num_requests_waiting",
            "actorserve_num_requests_running", "actorserve_kv_cache_usage_perc", "actorserve_cache_hits_total",
            "actorserve_cache_lookups_total", "actorserve_open_connections", "actorserve_ready"]
    problems = [f"no expr uses {w}" for w in want if not re.search(r'\b' + re.escape(w) + r'\b', used)]
    if "by (outcome)" not in used:
        problems.append("no expr shows requests by outcome")
    for q in ("0.5", "0.95", "0.99"):
        for fam in ("time_to_first_token", "inter_token_latency"):
            if not re.search(rf'histogram_quantile\({q}, [^\n]*actorserve_{fam}_seconds_bucket', used):
                problems.append(f"no P{q[2:].ljust(2, '0')} of actorserve_{fam}_seconds")
    return problems


def self_check(series, types):
    """The checker itself catches what it is for (else a pass would mean nothing)."""
    problems = []
    bad = {
        "rate(actorserve_no_such_metric_total[5m])": "not in /metrics",
        "histogram_quantile(0.9, rate(actorserve_time_to_first_token_seconds[5m]))": "is a histogram",
        "rate(actorserve_num_requests_running[5m])": "not a counter",
        'sum by (flavour) (actorserve_requests_total)': "no metric of the expr has that label",
        'actorserve_requests_total{outcome="stopped"}': "no such value",
        'actorserve_ready{model_name="x"}': "has no label",
    }
    for e, why in bad.items():
        found = expr_problems(e, series, types)
        if not any(why in p for p in found):
            problems.append(f"{e!r} should be refused ({why}); the checker says {found}")
    good = ['sum by (le) (rate(actorserve_inter_token_latency_seconds_bucket{job=~"$job"}[$__rate_interval]))',
            'actorserve_requests_total{outcome="stop"} / on (model_name) group_left actorserve_ready',
            '1 - sum(rate(actorserve_cache_misses_total[5m])) / 2e3']
    for e in good:
        found = expr_problems(e, series, types)
        if found:
            problems.append(f"{e!r} should pass; the checker says {found}")
    return problems


def main():
    with open(DASHBOARD, encoding="utf-8") as f:
        dash = json.load(f)
    series, types = scrape()
    print(f"     {os.path.relpath(DASHBOARD, ROOT)}: {sum(1 for _ in all_panels(dash))} panels, "
          f"{len(exprs(dash))} queries; /metrics: {len(series)} series names")
    check("the checker refuses unknown metrics, bare histograms, rates of gauges, unknown labels", self_check,
          series, types)
    check("structure: inputs, unique ids, gridPos, datasources, targets with expr", structure_problems, dash)
    check("every metric and label of every expr is in the server's /metrics", metric_problems, dash, series, types)
    check("the panels cover requests, tokens, TTFT/ITL/e2e percentiles, queue, KV, caches, connections, ready",
          required_panels, dash)


try:
    main()
except Exception as e:  # noqa: BLE001
    failed += 1
    print(f"FAIL the test could not run: {type(e).__name__}: {e}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed or not passed else 0)
