// The actorserve web chat: speaks the WebSocket protocol of docs/protocol.md
// at /v1/ws. Plain JavaScript, no dependencies, no build step.
//
// One request runs at a time. Its request_id and the event_id of the last
// event rendered are kept, so that after a dropped connection the page
// reconnects (with backoff) and sends `resume`: the server replays what was
// missed, exactly once, and the answer goes on in the same bubble. Events are
// also taken strictly in event_id order (an older one is skipped, a gap asks
// for a resume), so no text is ever shown twice.
//
// Text from the server is only ever inserted as text nodes, never as HTML.
'use strict';

(() => {
  const BACKOFF_MIN_MS = 250;
  const BACKOFF_MAX_MS = 5000;
  // After this many attempts in a row without ever opening, the status line
  // suggests the likely causes (server down, API key needed).
  const HINT_AFTER_FAILURES = 4;

  const $ = (id) => document.getElementById(id);
  const els = {
    messages: $('messages'),
    emptyHint: $('empty-hint'),
    form: $('composer'),
    prompt: $('prompt'),
    send: $('send'),
    stop: $('stop'),
    newChat: $('new-chat'),
    temperature: $('temperature'),
    maxTokens: $('max_tokens'),
    status: $('status'),
    tps: $('tps'),
  };

  // The page's own ?key=... becomes the upgrade's access_token: browsers
  // cannot set an Authorization header on a WebSocket.
  const apiKey = new URLSearchParams(location.search).get('key');
  // The dashboard polls /metrics, which needs the same key.
  if (apiKey) $('dashboard-link').href = 'dashboard?key=' + encodeURIComponent(apiKey);

  function socketUrl() {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    let url = `${scheme}//${location.host}/v1/ws`;
    if (apiKey) url += `?access_token=${encodeURIComponent(apiKey)}`;
    return url;
  }

  // ------------------------------------------------------------------ state --
  let ws = null;                // the current socket, null while disconnected
  let conn = 'connecting';      // 'connecting' | 'open' | 'reconnecting'
  let everOpened = false;
  let backoffMs = BACKOFF_MIN_MS;
  let failures = 0;             // connection attempts in a row that failed
  let reconnectTimer = null;

  let sessionId = null;         // kept between turns; "New chat" drops it
  // The secret a `start` event shows: it proves, on a new connection, that the
  // session and its requests are ours (resume, cancel and the next turn need it).
  let resumeToken = null;
  let req = null;               // the running request (see newRequest)
  let phase = 'idle';           // 'idle' | 'waiting' | 'streaming' | 'stopping' | 'done' | 'error'
  let lastFinish = '';          // finish_reason of the last answer
  // Chats sent on this connection that were abandoned (New chat) before their
  // `start` came: their `start` (or refusal) is still on its way and must not
  // be taken for the next chat's. The server answers a connection in order.
  let orphanChats = 0;
  let lastCancelledId = null;   // a late refusal of this cancel is no news

  // Counters for diagnostics and tests: window.__actorserve_state().
  const stats = { connects: 0, drops: 0, resumes: 0, gaps: 0, skipped: 0, mismatches: 0 };

  function newRequest(message, bubble) {
    const textNode = document.createTextNode('');
    bubble.appendChild(textNode);
    return {
      id: null,              // known once `start` arrives
      token: null,           // its resume_token, from `start`
      lastEventId: -1,       // the last event rendered
      message,               // the user's text, put back if the chat is refused
      bubble,
      textNode,
      text: '',
      tokens: 0,
      firstTokenAt: 0,
      lastTokenAt: 0,
      resuming: false,       // a resume was sent and nothing has come back yet
      cancelRequested: false,
    };
  }

  // --------------------------------------------------------------- the DOM --
  function nearBottom() {
    const m = els.messages;
    return m.scrollHeight - m.scrollTop - m.clientHeight < 48;
  }

  function keepScrolled(wasNearBottom) {
    if (wasNearBottom) els.messages.scrollTop = els.messages.scrollHeight;
  }

  function addElement(tag, className, text) {
    const stick = nearBottom();
    if (els.emptyHint.isConnected) els.emptyHint.remove();
    const el = document.createElement(tag);
    el.className = className;
    if (text) el.textContent = text;
    els.messages.appendChild(el);
    keepScrolled(stick);
    return el;
  }

  function addUserBubble(text) {
    return addElement('div', 'msg user', text);
  }

  function addAssistantBubble() {
    const el = addElement('div', 'msg assistant');
    el.setAttribute('aria-busy', 'true');
    return el;
  }

  function addNote(text) {
    return addElement('div', 'note', text);
  }

  function errorText(ev) {
    const code = typeof ev.code === 'string' && ev.code ? ev.code : 'error';
    let text = `${code}: ${typeof ev.message === 'string' && ev.message ? ev.message : '(no message)'}`;
    if (typeof ev.retry_after_ms === 'number' && ev.retry_after_ms >= 0) {
      const s = ev.retry_after_ms / 1000;
      text += ` (retry in ${s < 10 ? s.toFixed(1) : Math.round(s)} s)`;
    }
    return text;
  }

  function addError(ev, extra) {
    const el = addElement('div', 'msg error', errorText(ev) + (extra || ''));
    el.setAttribute('role', 'alert');
    if (typeof ev.code === 'string') el.dataset.code = ev.code;
    return el;
  }

  function fmtRate(x) {
    return x >= 100 ? x.toFixed(0) : x.toFixed(1);
  }

  // Tokens per second as the page saw them arrive: the token events after the
  // first, over the seconds since the first.
  function clientRate(r) {
    if (r.tokens < 2 || r.lastTokenAt <= r.firstTokenAt) return null;
    return (r.tokens - 1) / ((r.lastTokenAt - r.firstTokenAt) / 1000);
  }

  function showLiveRate(r) {
    const rate = clientRate(r);
    els.tps.textContent = rate === null ? '' : `${fmtRate(rate)} tok/s`;
  }

  function showFinalRate(r, ev) {
    const parts = [];
    const rate = clientRate(r);
    if (rate !== null) parts.push(`${fmtRate(rate)} tok/s`);
    const t = ev.timings && typeof ev.timings === 'object' ? ev.timings : null;
    if (t) {
      const server = [];
      if (typeof t.tokens_per_s === 'number') server.push(`${fmtRate(t.tokens_per_s)} tok/s`);
      if (typeof t.ttft_ms === 'number') server.push(`first token ${Math.round(t.ttft_ms)} ms`);
      if (typeof t.total_ms === 'number') server.push(`total ${Math.round(t.total_ms)} ms`);
      if (server.length) parts.push(`server: ${server.join(', ')}`);
    }
    els.tps.textContent = parts.join(' · ');
  }

  function render() {
    let text;
    if (conn === 'open') text = 'connected';
    else if (conn === 'reconnecting') text = 'reconnecting…';
    else text = 'connecting…';
    if (conn !== 'open' && failures >= HINT_AFTER_FAILURES) {
      text += everOpened
        ? ' (the server does not answer)'
        : ' (is the server running? if it needs an API key, open this page with ?key=…)';
    }
    switch (phase) {
      case 'waiting': text += ' · waiting for the answer…'; break;
      case 'streaming': text += ' · generating…'; break;
      case 'stopping': text += ' · stopping…'; break;
      case 'done': text += ` · done (${lastFinish})`; break;
      case 'error': text += ' · error'; break;
      default: break;
    }
    els.status.textContent = text;
    els.status.dataset.conn = conn;
    els.status.dataset.state = phase;
    els.send.disabled = conn !== 'open' || req !== null;
    els.stop.disabled = req === null || req.cancelRequested;
  }

  // -------------------------------------------------------------- sending --
  function send(obj) {
    if (!ws || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(obj));
    return true;
  }

  function withToken(msg, token) {
    if (token) msg.resume_token = token;
    return msg;
  }

  function sendCancel(r) {
    if (r.id && send(withToken({ type: 'cancel', request_id: r.id }, r.token))) lastCancelledId = r.id;
  }

  function sendResume(r) {
    if (send(withToken({ type: 'resume', request_id: r.id, last_event_id: r.lastEventId }, r.token))) {
      r.resuming = true;
      stats.resumes += 1;
    }
  }

  function readSettings() {
    const temperature = Number(els.temperature.value);
    const maxTokens = Number(els.maxTokens.value);
    els.temperature.setCustomValidity(
      els.temperature.value !== '' && Number.isFinite(temperature) && temperature >= 0
        ? '' : 'Temperature is a number ≥ 0.');
    els.maxTokens.setCustomValidity(
      els.maxTokens.value !== '' && Number.isInteger(maxTokens) && maxTokens >= 1
        ? '' : 'Max tokens is a whole number ≥ 1.');
    if (!els.temperature.reportValidity() || !els.maxTokens.reportValidity()) return null;
    return { temperature, maxTokens };
  }

  function submit() {
    if (req !== null || conn !== 'open') return;
    const message = els.prompt.value;
    if (!message.trim()) return;
    const settings = readSettings();
    if (!settings) return;
    const chat = {
      type: 'chat',
      message,
      max_tokens: settings.maxTokens,
      temperature: settings.temperature,
      stream: true,
    };
    if (sessionId) {
      chat.session_id = sessionId;
      if (resumeToken) chat.resume_token = resumeToken;
    }
    if (!send(chat)) return;
    addUserBubble(message);
    req = newRequest(message, addAssistantBubble());
    phase = 'waiting';
    els.prompt.value = '';
    els.tps.textContent = '';
    render();
  }

  function stop() {
    if (!req || req.cancelRequested) return;
    req.cancelRequested = true;
    phase = 'stopping';
    // Without a request_id yet (or a connection), the cancel goes out as soon
    // as `start` comes (or after the resume).
    if (req.id && conn === 'open') sendCancel(req);
    render();
  }

  function newChat() {
    if (req) {
      if (req.id) sendCancel(req);
      else if (conn === 'open') orphanChats += 1;
      req = null;
    }
    sessionId = null;
    resumeToken = null;
    phase = 'idle';
    lastFinish = '';
    els.messages.replaceChildren(els.emptyHint);
    els.tps.textContent = '';
    render();
    els.prompt.focus();
  }

  // ------------------------------------------------------- ending a request --
  function endRequest(newPhase) {
    const r = req;
    r.bubble.setAttribute('aria-busy', 'false');
    if (!r.text) r.bubble.classList.add('empty');
    req = null;
    phase = newPhase;
  }

  function finish(ev) {
    const r = req;
    const doneText = typeof ev.text === 'string' ? ev.text : '';
    r.bubble.dataset.doneText = doneText;
    r.bubble.dataset.finishReason = String(ev.finish_reason || '');
    r.bubble.dataset.requestId = r.id;
    if (doneText !== r.text) {
      // The protocol promises the token pieces joined are done.text.
      stats.mismatches += 1;
      console.warn('actorserve: streamed text differs from done.text', { streamed: r.text, done: doneText });
    }
    lastFinish = String(ev.finish_reason || 'done');
    const meta = [lastFinish];
    const usage = ev.usage && typeof ev.usage === 'object' ? ev.usage : null;
    if (usage && typeof usage.completion_tokens === 'number') meta.push(`${usage.completion_tokens} tokens`);
    if (usage && typeof usage.cached_tokens === 'number' && usage.cached_tokens > 0) {
      meta.push(`${usage.cached_tokens} of ${usage.prompt_tokens} prompt tokens cached`);
    }
    showFinalRate(r, ev);
    endRequest('done');
    addNote(meta.join(' · '));
  }

  function fail(ev, extra) {
    const r = req;
    r.bubble.dataset.requestId = r.id || '';
    endRequest('error');
    if (!r.text) r.bubble.remove();
    addError(ev, extra);
  }

  // -------------------------------------------------------------- receiving --
  function appendToken(text) {
    if (typeof text !== 'string' || text === '') return;
    const r = req;
    const stick = nearBottom();
    r.textNode.appendData(text);
    r.text += text;
    r.tokens += 1;
    const now = performance.now();
    if (r.tokens === 1) r.firstTokenAt = now;
    r.lastTokenAt = now;
    keepScrolled(stick);
    showLiveRate(r);
  }

  function onRequestEvent(ev) {
    if (req && req.id === null && ev.type === 'start' && orphanChats === 0) {
      req.id = ev.request_id;
      req.token = typeof ev.resume_token === 'string' ? ev.resume_token : null;
      req.bubble.dataset.requestId = ev.request_id;
    } else if (ev.type === 'start' && ev.event_id === 0 && orphanChats > 0 && (!req || req.id !== ev.request_id)) {
      // The start of a chat abandoned by "New chat": end it.
      orphanChats -= 1;
      if (send({ type: 'cancel', request_id: ev.request_id })) lastCancelledId = ev.request_id;
      return;
    }
    if (!req || ev.request_id !== req.id) return;  // an ended or abandoned request

    const id = ev.event_id;
    if (ev.type === 'error' && typeof id !== 'number') {
      fail(ev, req.resuming ? ' — the answer could not be resumed' : '');
      render();
      return;
    }
    if (typeof id !== 'number' || id <= req.lastEventId) {
      stats.skipped += 1;                          // seen already
      return;
    }
    if (id !== req.lastEventId + 1) {
      // Something was missed: ask for it again; what is in flight until the
      // replay comes is skipped by the checks above and below.
      stats.gaps += 1;
      if (!req.resuming) sendResume(req);
      return;
    }
    req.lastEventId = id;
    req.resuming = false;

    switch (ev.type) {
      case 'start':
        if (typeof ev.session_id === 'string' && ev.session_id) sessionId = ev.session_id;
        if (typeof ev.resume_token === 'string' && ev.resume_token) resumeToken = ev.resume_token;
        if (phase === 'waiting') phase = 'streaming';
        if (req.cancelRequested) sendCancel(req);
        break;
      case 'token':
        if (phase === 'waiting') phase = 'streaming';
        appendToken(ev.text);
        break;
      case 'done':
        finish(ev);
        break;
      case 'error':
        fail(ev);
        break;
      default:
        break;
    }
    render();
  }

  // An error about a message that started no request: a refused chat, a
  // resume of a request the server no longer has, or a late answer to a cancel.
  function onLooseError(ev) {
    if (orphanChats > 0) {
      // The server answers a connection in order: this is the refusal of
      // the chat abandoned by "New chat", not of anything sent after it.
      orphanChats -= 1;
      return;
    }
    if (lastCancelledId && typeof ev.message === 'string' && ev.message.includes(lastCancelledId)) {
      lastCancelledId = null;
      return;
    }
    if (req && req.id === null) {
      let extra = '';
      if (ev.code === 'not_found' && sessionId) {
        sessionId = null;
        extra = ' — the conversation has expired; the next message starts a new one';
      }
      const message = req.message;
      fail(ev, extra);
      if (!els.prompt.value) els.prompt.value = message;   // ready to send again
    } else if (req && req.resuming) {
      fail(ev, ' — the answer could not be resumed');
    } else {
      addError(ev);
    }
    render();
  }

  function onMessage(data) {
    if (typeof data !== 'string') return;
    let ev;
    try {
      ev = JSON.parse(data);
    } catch (e) {
      console.warn('actorserve: a message that is not JSON', data);
      return;
    }
    if (!ev || typeof ev !== 'object') return;
    if (typeof ev.request_id === 'string') onRequestEvent(ev);
    else if (ev.type === 'error') onLooseError(ev);
  }

  // ------------------------------------------------------------ connection --
  function onOpen() {
    conn = 'open';
    everOpened = true;
    failures = 0;
    backoffMs = BACKOFF_MIN_MS;
    stats.connects += 1;
    orphanChats = 0;
    if (req) {
      if (req.id) {
        sendResume(req);
        if (req.cancelRequested) sendCancel(req);
      } else {
        // The chat went out on the lost connection and its `start` never
        // came: there is nothing to resume.
        const message = req.message;
        fail({ code: 'connection_lost', message: 'the connection dropped before the answer started; send the message again' });
        if (!els.prompt.value) els.prompt.value = message;
      }
    }
    render();
  }

  function onDropped() {
    if (conn === 'open') stats.drops += 1;
    else failures += 1;
    ws = null;
    conn = everOpened ? 'reconnecting' : 'connecting';
    if (req) req.resuming = false;
    if (reconnectTimer === null) {
      const delay = backoffMs;
      backoffMs = Math.min(backoffMs * 2, BACKOFF_MAX_MS);
      reconnectTimer = setTimeout(connect, delay);
    }
    render();
  }

  function connect() {
    reconnectTimer = null;
    let sock;
    try {
      sock = new WebSocket(socketUrl());
    } catch (e) {
      console.warn('actorserve: cannot open the WebSocket', e);
      onDropped();
      return;
    }
    ws = sock;
    // Handlers of a socket that is no longer the current one do nothing.
    sock.onopen = () => { if (ws === sock) onOpen(); };
    sock.onmessage = (e) => { if (ws === sock) onMessage(e.data); };
    sock.onclose = () => { if (ws === sock) onDropped(); };
    sock.onerror = () => {};  // a close event follows
  }

  // Closes the socket as if the network had dropped it (for tests).
  window.__actorserve_test_drop = () => {
    const sock = ws;
    if (!sock) return false;
    ws = null;
    sock.onopen = sock.onmessage = sock.onclose = null;
    try { sock.close(); } catch (e) { /* already closing */ }
    onDropped();
    return true;
  };

  window.__actorserve_state = () => ({
    conn,
    phase,
    sessionId,
    request: req && { id: req.id, lastEventId: req.lastEventId, tokens: req.tokens, resuming: req.resuming },
    ...stats,
  });

  // ------------------------------------------------------------------ input --
  els.form.addEventListener('submit', (e) => { e.preventDefault(); submit(); });
  els.prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  });
  els.stop.addEventListener('click', stop);
  els.newChat.addEventListener('click', newChat);

  render();
  connect();
  els.prompt.focus();
})();
