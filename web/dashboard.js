// The actorserve dashboard: polls this server's /metrics (Prometheus text)
// every 2 s and plots the last 10 minutes on <canvas>. Plain JavaScript, no
// dependencies, no build step; nothing leaves the page but GET /metrics.
//
// Counters become rates the way Prometheus' rate() does: each poll stores its
// increase over the previous successful poll (a value lower than before is a
// counter reset, so the whole new value is the increase), and a rate is the
// sum of the increases in a window divided by the time they span. Histogram
// buckets are counters, one per `le`, and are treated the same; percentiles
// come from those bucket increases (see bucketQuantile).
//
// note: the history lives in this page only: a reload starts an empty plot.
'use strict';

(() => {
  const POLL_MS = 2000;
  const FETCH_TIMEOUT_MS = 5000;
  const HISTORY_MS = 10 * 60 * 1000;    // what the plots show
  const RATE_WINDOW_MS = 10_000;        // tokens/s and cache rates: 5 polls
  // Percentiles over 30 s: over one 2 s poll a few requests (TTFT counts one
  // observation a request) give a jumpy or empty figure.
  const QUANTILE_WINDOW_MS = 30_000;

  const $ = (id) => document.getElementById(id);

  // The page's own ?key=... is sent as the bearer key (/metrics needs one when
  // the server has API keys) and kept on the link back to the chat.
  const apiKey = new URLSearchParams(location.search).get('key');
  if (apiKey) $('chat-link').href = './?key=' + encodeURIComponent(apiKey);

  // ------------------------------------------------------------- parsing --

  // Prometheus text exposition format 0.0.4. One sample a line:
  //   name{label="value",...} value [timestamp]
  // '#' lines are comments; "# TYPE name type" is kept. Label values escape
  // backslash, double quote and newline (\\, \", \n). Values are Go floats:
  // "+Inf", "-Inf" and "NaN" spelled so. A line that does not parse is
  // counted in `malformed` and skipped.
  const NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
  const LABEL_NAME_RE = /^[a-zA-Z_][a-zA-Z0-9_]*/;

  function parseValue(s) {
    if (s === '+Inf' || s === 'Inf') return Infinity;
    if (s === '-Inf') return -Infinity;
    if (s === 'NaN') return NaN;
    if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) return undefined;
    return Number(s);
  }

  // Returns {name, labels, value} or null.
  function parseSample(line) {
    const m = NAME_RE.exec(line);
    if (!m) return null;
    const name = m[0];
    let i = name.length;
    const labels = {};
    if (line[i] === '{') {
      ++i;
      for (;;) {
        while (line[i] === ' ') ++i;
        if (line[i] === '}') { ++i; break; }
        const ln = LABEL_NAME_RE.exec(line.slice(i));
        if (!ln) return null;
        i += ln[0].length;
        while (line[i] === ' ') ++i;
        if (line[i] !== '=' ) return null;
        ++i;
        while (line[i] === ' ') ++i;
        if (line[i] !== '"') return null;
        ++i;
        let v = '';
        for (;;) {
          if (i >= line.length) return null;
          const c = line[i++];
          if (c === '"') break;
          if (c === '\\') {
            const e = line[i++];
            if (e === 'n') v += '\n';
            else if (e === '\\' || e === '"') v += e;
            else return null;
          } else {
            v += c;
          }
        }
        labels[ln[0]] = v;
        while (line[i] === ' ') ++i;
        if (line[i] === ',') ++i;
        else if (line[i] !== '}') return null;
      }
    }
    const rest = line.slice(i).trim().split(/[ \t]+/);
    if (rest.length < 1 || rest.length > 2 || rest[0] === '') return null;
    const value = parseValue(rest[0]);
    if (value === undefined) return null;
    return { name, labels, value };
  }

  // The whole text: {types: {name: type}, samples: [{name, labels, value}], malformed}.
  function parseMetrics(text) {
    const types = {};
    const samples = [];
    let malformed = 0;
    for (const raw of text.split('\n')) {
      const line = raw.trim();
      if (line === '') continue;
      if (line[0] === '#') {
        const t = /^#\s*TYPE\s+(\S+)\s+(\S+)/.exec(line);
        if (t) types[t[1]] = t[2];
        continue;
      }
      const s = parseSample(line);
      if (s) samples.push(s);
      else ++malformed;
    }
    return { types, samples, malformed };
  }

  // Samples of one name, indexed once per scrape.
  function indexSamples(parsed) {
    const by = new Map();
    for (const s of parsed.samples) {
      if (!by.has(s.name)) by.set(s.name, []);
      by.get(s.name).push(s);
    }
    return by;
  }

  // The sum over every series of a name (every model, cache, outcome);
  // undefined when the name is absent (a family the server leaves out, such
  // as the caches when they are off).
  function total(by, name) {
    const list = by.get(name);
    if (!list) return undefined;
    return list.reduce((a, s) => a + s.value, 0);
  }

  // A histogram's cumulative buckets, [{le, count}] by increasing le, summed
  // over its other labels (as sum by (le) does); undefined when absent.
  function buckets(by, family) {
    const list = by.get(family + '_bucket');
    if (!list) return undefined;
    const per = new Map();
    for (const s of list) {
      const le = parseValue(s.labels.le);
      if (le === undefined || Number.isNaN(le)) continue;
      per.set(le, (per.get(le) || 0) + s.value);
    }
    return [...per].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
  }

  // ----------------------------------------------------------- quantiles --

  // The q-quantile of cumulative buckets, as Prometheus' histogram_quantile
  // computes it (promql/quantile.go, bucketQuantile): rank = q * (the +Inf
  // bucket's count); find the first bucket whose cumulative count reaches the
  // rank; interpolate linearly inside it, between the previous bucket's upper
  // bound (0 below the first bucket) and its own. A rank in the +Inf bucket
  // gives the highest finite bound. null when there are no observations (or
  // no +Inf bucket). The dashboard feeds it bucket increases over a window,
  // which is what histogram_quantile(q, rate(x_bucket[30s])) sees: dividing
  // every bucket by the same duration changes no quantile.
  // note: an estimate, no better than the bucket bounds: a P99 between 0.25 s
  // and 0.5 s is placed by the linear rule, not measured.
  function bucketQuantile(q, bs) {
    if (!bs || bs.length < 2 || bs[bs.length - 1].le !== Infinity) return null;
    // Cumulative counts must not fall; increases summed over a reset or a
    // scrape that raced an observation could, so carry the maximum forward.
    const cum = [];
    let run = 0;
    for (const b of bs) { run = Math.max(run, b.count); cum.push(run); }
    const observations = cum[cum.length - 1];
    if (!(observations > 0)) return null;
    let rank = q * observations;
    let i = 0;
    while (i < bs.length - 1 && cum[i] < rank) ++i;
    if (i === bs.length - 1) return bs[bs.length - 2].le;
    if (i === 0 && bs[0].le <= 0) return bs[0].le;
    let start = 0;
    let count = cum[i];
    if (i > 0) {
      start = bs[i - 1].le;
      count -= cum[i - 1];
      rank -= cum[i - 1];
    }
    return start + (bs[i].le - start) * (rank / count);
  }

  // ------------------------------------------------------------- history --

  // One successful scrape, as numbers. Counters and buckets also carry their
  // increase since the previous successful scrape (inc*), `since` its time.
  const snaps = [];     // the last QUANTILE_WINDOW_MS and a little more
  const points = [];    // one per poll over HISTORY_MS: {t, ...figures or null}
  let prev = null;      // the last successful scrape

  const COUNTERS = {
    gen: 'actorserve_generation_tokens_total',
    prompt: 'actorserve_prompt_tokens_total',
    lookups: 'actorserve_cache_lookups_total',
    hits: 'actorserve_cache_hits_total',
  };
  const HISTOGRAMS = {
    ttft: 'actorserve_time_to_first_token_seconds',
    itl: 'actorserve_inter_token_latency_seconds',
  };

  function increase(now, before) {
    if (now === undefined) return undefined;
    if (before === undefined || now < before) return now; // new, or reset
    return now - before;
  }

  function bucketIncrease(now, before) {
    if (!now) return undefined;
    const same = before && before.length === now.length && before.every((b, i) => b.le === now[i].le);
    if (!same || now.some((b, i) => b.count < before[i].count)) return now.map((b) => ({ ...b })); // new, or reset
    return now.map((b, i) => ({ le: b.le, count: b.count - before[i].count }));
  }

  function snapshot(by, t) {
    const s = { t, since: prev ? prev.t : null, counters: {}, inc: {}, hist: {}, histInc: {} };
    for (const [k, name] of Object.entries(COUNTERS)) {
      s.counters[k] = total(by, name);
      if (prev) s.inc[k] = increase(s.counters[k], prev.counters[k]);
    }
    for (const [k, family] of Object.entries(HISTOGRAMS)) {
      s.hist[k] = buckets(by, family);
      if (prev) s.histInc[k] = bucketIncrease(s.hist[k], prev.hist[k]);
    }
    return s;
  }

  // The snapshots whose increases fall in the last `ms` (each covers
  // (since, t]); the first snapshot of all has no increase and is left out.
  function windowOf(ms) {
    const last = snaps[snaps.length - 1];
    return snaps.filter((s) => s.since !== null && s.t > last.t - ms);
  }

  // Per second over the window; null with no increase recorded in it yet.
  function rate(k, ms) {
    const w = windowOf(ms).filter((s) => s.inc[k] !== undefined);
    if (w.length === 0) return null;
    const span = (w[w.length - 1].t - w[0].since) / 1000;
    return span > 0 ? w.reduce((a, s) => a + s.inc[k], 0) / span : null;
  }

  // The bucket increases summed over the window (those with the newest
  // scrape's bounds), and the quantiles of that sum.
  function quantiles(k, ms) {
    const w = windowOf(ms).filter((s) => s.histInc[k]);
    if (w.length === 0) return { p50: null, p95: null, p99: null, buckets: null };
    const newest = w[w.length - 1].histInc[k];
    const sum = newest.map((b) => ({ le: b.le, count: 0 }));
    for (const s of w) {
      const inc = s.histInc[k];
      if (inc.length !== sum.length || inc.some((b, i) => b.le !== sum[i].le)) continue;
      inc.forEach((b, i) => { sum[i].count += b.count; });
    }
    return { p50: bucketQuantile(0.5, sum), p95: bucketQuantile(0.95, sum), p99: bucketQuantile(0.99, sum), buckets: sum };
  }

  function trim(now) {
    while (points.length && points[0].t < now - HISTORY_MS) points.shift();
    while (snaps.length > 1 && snaps[1].t <= now - QUANTILE_WINDOW_MS - POLL_MS) snaps.shift();
  }

  // ---------------------------------------------------------------- state --

  // 'connecting' | 'live' | 'not-ready' | 'unavailable' | 'unauthorized' | 'unreachable' | 'error'
  let state = 'connecting';
  let polls = 0;        // scrapes that answered 200 and parsed
  let failures = 0;     // polls that did not
  let malformed = 0;    // lines of the last scrape that did not parse
  let lastPollAt = null;
  let latest = null;    // the figures shown now (window.__actorserve_dashboard)

  const STATUS_TEXT = {
    live: 'live',
    'not-ready': 'server not ready',
    unavailable: 'metrics unavailable',
    unauthorized: 'API key needed',
    unreachable: 'server unreachable',
    error: 'metrics error',
  };

  function setState(next, banner) {
    state = next;
    const st = $('status');
    st.dataset.state = next;
    st.dataset.polls = String(polls);
    st.textContent = next === 'live' ? `live: polled ${polls} times, every ${POLL_MS / 1000} s` : STATUS_TEXT[next];
    const b = $('banner');
    b.hidden = !banner;
    b.dataset.state = next;
    b.textContent = banner || '';
    document.body.dataset.state = next;
  }

  // A figure: its text, and the number it shows in data-value ('' for none).
  function show(id, value, text) {
    const el = $(id);
    el.dataset.value = value === null || value === undefined || Number.isNaN(value) ? '' : String(value);
    el.textContent = el.dataset.value === '' ? '–' : text;
  }

  const fmtCount = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
  function fmtRate(v) { return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2); }
  function fmtSeconds(v) {
    if (v >= 1) return v.toFixed(2) + ' s';
    const ms = v * 1000;
    return (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2)) + ' ms';
  }
  function fmtPercent(v) { return (v * 100).toFixed(1) + '%'; }

  function ingest(parsed, t) {
    const by = indexSamples(parsed);
    malformed = parsed.malformed;
    const ready = total(by, 'actorserve_ready');
    const f = {
      ready: ready === undefined ? null : ready,
      connections: total(by, 'actorserve_open_connections') ?? null,
      requestsEnded: total(by, 'actorserve_requests_total') ?? null,
      genTotal: total(by, COUNTERS.gen) ?? null,
      promptTotal: total(by, COUNTERS.prompt) ?? null,
      running: total(by, 'actorserve_num_requests_running') ?? null,
      waiting: total(by, 'actorserve_num_requests_waiting') ?? null,
      kv: total(by, 'actorserve_kv_cache_usage_perc') ?? null,
      cacheOn: by.has(COUNTERS.lookups),
    };
    const anyModel = parsed.samples.find((s) => s.labels.model_name !== undefined);
    $('model').textContent = anyModel ? anyModel.labels.model_name : '';

    // While the model loads, /metrics answers zeros for the runtime's figures:
    // they are shown as a gap, not as a fall to zero.
    if (ready === 0) {
      prev = null;
      snaps.length = 0;
      points.push({ t });
      latest = { t, ...f };
      showSummary(f);
      return;
    }

    const s = snapshot(by, t);
    snaps.push(s);
    prev = s;
    f.genTps = rate('gen', RATE_WINDOW_MS);
    f.promptTps = rate('prompt', RATE_WINDOW_MS);
    f.lookupsRate = f.cacheOn ? rate('lookups', RATE_WINDOW_MS) : null;
    f.hitsRate = f.cacheOn ? rate('hits', RATE_WINDOW_MS) : null;
    f.hitRatio = f.lookupsRate > 0 ? f.hitsRate / f.lookupsRate : null;
    f.ttft = quantiles('ttft', QUANTILE_WINDOW_MS);
    f.itl = quantiles('itl', QUANTILE_WINDOW_MS);
    latest = { t, ...f };
    points.push({ t, ...f });
    showSummary(f);

    show('gen-tps', f.genTps, f.genTps !== null && fmtRate(f.genTps) + ' tok/s');
    show('prompt-tps', f.promptTps, f.promptTps !== null && fmtRate(f.promptTps) + ' tok/s');
    show('running', f.running, fmtCount.format(f.running));
    show('waiting', f.waiting, fmtCount.format(f.waiting));
    for (const k of ['ttft', 'itl'])
      for (const p of ['p50', 'p95', 'p99']) show(`${k}-${p}`, f[k][p], f[k][p] !== null && fmtSeconds(f[k][p]));
    show('kv-usage', f.kv, f.kv !== null && fmtPercent(f.kv));
    show('cache-lookups-rate', f.lookupsRate, f.lookupsRate !== null && fmtRate(f.lookupsRate));
    show('cache-hits-rate', f.hitsRate, f.hitsRate !== null && fmtRate(f.hitsRate));
    show('cache-hit-ratio', f.hitRatio, f.hitRatio !== null && fmtPercent(f.hitRatio));
    $('cache-off').hidden = f.cacheOn;
    const hits = total(by, COUNTERS.hits), lookups = total(by, COUNTERS.lookups);
    $('cache-hit-ratio').title = f.cacheOn ? `since start: ${fmtCount.format(hits)} hits of ${fmtCount.format(lookups)} lookups` : '';
  }

  function showSummary(f) {
    show('ready', f.ready, f.ready === 1 ? 'yes' : 'loading');
    $('ready').dataset.ready = f.ready === 1 ? 'yes' : 'no';
    show('connections', f.connections, fmtCount.format(f.connections));
    show('requests-total', f.requestsEnded, fmtCount.format(f.requestsEnded));
    show('gen-total', f.genTotal, fmtCount.format(f.genTotal));
    show('prompt-total', f.promptTotal, fmtCount.format(f.promptTotal));
  }

  // ---------------------------------------------------------------- plots --

  // A y-axis step of 1, 2 or 5 times a power of ten, about `ticks` to the top.
  function niceStep(max, ticks) {
    const raw = max / ticks;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
  }

  // series: [{key: (point) => number|null|undefined}]; opt: {fixedMax, minMax, integer, format}.
  // Draws the last HISTORY_MS, "now" at the right edge; a missing value breaks
  // the line (a failed poll, a loading server, an empty window). Sets
  // data-points on the canvas: the values drawn, all series together.
  function drawPlot(canvas, series, opt) {
    const css = getComputedStyle(document.documentElement);
    const colour = (name) => css.getPropertyValue(name).trim();
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth, h = canvas.clientHeight;
    if (w === 0 || h === 0) return;
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
    }
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);

    const now = Date.now(), t0 = now - HISTORY_MS;
    const L = 56, R = 10, T = 8, B = 20;
    const pw = w - L - R, ph = h - T - B;
    const values = series.map((s) => points.map((p) => [p.t, s.key(p)]));
    let top = opt.fixedMax;
    if (top === undefined) {
      let max = 0;
      for (const vs of values) for (const [, v] of vs) if (Number.isFinite(v)) max = Math.max(max, v);
      max = Math.max(max * 1.1, opt.minMax);
      const step = niceStep(max, 4);
      top = Math.ceil(max / step) * step;
    }
    let step = niceStep(top, 4);
    if (opt.integer) step = Math.max(1, Math.round(step));
    const x = (t) => L + ((t - t0) / HISTORY_MS) * pw;
    const y = (v) => T + ph - (Math.min(v, top) / top) * ph;

    ctx.font = '11px system-ui, sans-serif';
    ctx.lineWidth = 1;
    ctx.strokeStyle = colour('--grid');
    ctx.fillStyle = colour('--muted');
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    for (let v = 0; v <= top + step / 1000; v += step) {
      const yy = Math.round(y(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(L, yy); ctx.lineTo(L + pw, yy); ctx.stroke();
      ctx.fillText(opt.format(v), L - 6, yy);
    }
    ctx.textBaseline = 'top';
    const minutes = HISTORY_MS / 60_000;
    const every = pw >= 360 ? 2 : 5; // minutes a label; a label takes about 55 px
    for (let m = minutes; m >= 0; m -= every) {
      const xx = Math.round(x(now - m * 60_000)) + 0.5;
      ctx.beginPath(); ctx.moveTo(xx, T); ctx.lineTo(xx, T + ph); ctx.stroke();
      // the end labels inside the plot's width, clear of the y-axis labels
      ctx.textAlign = m === minutes ? 'left' : m === 0 ? 'right' : 'center';
      ctx.fillText(m === 0 ? 'now' : `−${m} min`, xx, T + ph + 4);
    }

    ctx.save();
    ctx.beginPath(); ctx.rect(L, T - 1, pw, ph + 2); ctx.clip();
    let drawn = 0;
    values.forEach((vs, si) => {
      const c = colour(`--series-${si}`);
      ctx.strokeStyle = c;
      ctx.fillStyle = c;
      ctx.lineWidth = 1.75;
      ctx.lineJoin = 'round';
      for (let i = 0; i < vs.length; ++i) {
        const [t, v] = vs[i];
        if (!Number.isFinite(v)) continue;
        ++drawn;
        const before = i > 0 && Number.isFinite(vs[i - 1][1]);
        const after = i + 1 < vs.length && Number.isFinite(vs[i + 1][1]);
        if (!before && !after) { // a lone value: a dot, as a line needs two
          ctx.beginPath(); ctx.arc(x(t), y(v), 2, 0, 2 * Math.PI); ctx.fill();
        } else if (!before) {
          ctx.beginPath(); ctx.moveTo(x(t), y(v));
        } else {
          ctx.lineTo(x(t), y(v));
          if (!after) ctx.stroke();
        }
      }
    });
    ctx.restore();
    ctx.strokeStyle = colour('--border');
    ctx.strokeRect(L + 0.5, T + 0.5, pw - 1, ph - 1);
    canvas.dataset.points = String(drawn);
  }

  const fmtTick = (v) => (v >= 1000 ? `${+(v / 1000).toFixed(1)}k` : `${+v.toFixed(2)}`);
  const fmtTickMs = (v) => (v >= 1000 ? `${+(v / 1000).toFixed(2)} s` : `${+v.toFixed(2)} ms`);
  const ms = (v) => (v === null || v === undefined ? null : v * 1000);

  const PLOTS = [
    ['plot-tokens', [{ key: (p) => p.genTps }, { key: (p) => p.promptTps }], { minMax: 1, format: fmtTick }],
    ['plot-queue', [{ key: (p) => p.running }, { key: (p) => p.waiting }], { minMax: 4, integer: true, format: fmtTick }],
    ['plot-ttft', ['p50', 'p95', 'p99'].map((q) => ({ key: (p) => ms(p.ttft && p.ttft[q]) })), { minMax: 1, format: fmtTickMs }],
    ['plot-itl', ['p50', 'p95', 'p99'].map((q) => ({ key: (p) => ms(p.itl && p.itl[q]) })), { minMax: 1, format: fmtTickMs }],
    ['plot-kv', [{ key: (p) => (p.kv === null || p.kv === undefined ? null : p.kv * 100) }],
      { fixedMax: 100, format: (v) => `${v.toFixed(0)}%` }],
    ['plot-cache', [{ key: (p) => p.lookupsRate }, { key: (p) => p.hitsRate }], { minMax: 1, format: fmtTick }],
  ];

  function drawAll() {
    for (const [id, series, opt] of PLOTS) drawPlot($(id), series, opt);
  }

  // ---------------------------------------------------------------- polls --

  // An error answer's message ({"error":{"message":...}}), or its first line.
  function errorMessage(body) {
    try {
      const j = JSON.parse(body);
      if (j && j.error && typeof j.error.message === 'string') return j.error.message;
    } catch (_) { /* not JSON */ }
    return body.split('\n')[0].slice(0, 200);
  }

  function failed(status, message) {
    ++failures;
    const t = Date.now();
    points.push({ t }); // a gap in every plot
    const retry = `Retrying every ${POLL_MS / 1000} s.`;
    if (status === 503) setState('unavailable', `Metrics unavailable: /metrics answered 503 (${message}). ${retry}`);
    else if (status === 401 || status === 403)
      setState('unauthorized', `/metrics needs an API key (${message}). Open this page as /dashboard?key=YOUR_KEY.`);
    else if (status === 0) setState('unreachable', `Server unreachable: ${message}. ${retry}`);
    else setState('error', `/metrics answered ${status} (${message}). ${retry}`);
  }

  async function poll() {
    const started = Date.now();
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT_MS);
    try {
      const headers = apiKey ? { Authorization: `Bearer ${apiKey}` } : {};
      const res = await fetch('metrics', { headers, cache: 'no-store', signal: ctl.signal });
      const body = await res.text();
      if (!res.ok) {
        failed(res.status, errorMessage(body));
      } else {
        ++polls;
        lastPollAt = Date.now();
        ingest(parseMetrics(body), lastPollAt);
        if (latest.ready === 0)
          setState('not-ready', 'Server not ready: the model is loading (actorserve_ready is 0). The plots start when it is served.');
        else setState('live', null);
        $('last-poll').textContent = `last poll ${new Date(lastPollAt).toLocaleTimeString('en-GB')}`;
      }
    } catch (e) {
      failed(0, e.name === 'AbortError' ? `no answer within ${FETCH_TIMEOUT_MS / 1000} s` : e.message);
    } finally {
      clearTimeout(timer);
    }
    trim(Date.now());
    drawAll();
    setTimeout(poll, Math.max(0, POLL_MS - (Date.now() - started)));
  }

  window.addEventListener('resize', drawAll);
  window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', drawAll);

  // For tests and diagnostics: the state, and the parser and quantile rule on
  // any text (tests/web/dashboard_test.py checks them against /metrics).
  window.__actorserve_dashboard = {
    state: () => ({ state, polls, failures, malformed, lastPollAt, points: points.length, latest }),
    parse: (text) => parseMetrics(text),
    quantile: (q, text, family) => bucketQuantile(q, buckets(indexSamples(parseMetrics(text)), family)),
  };

  poll();
})();
