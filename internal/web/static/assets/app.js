// The web chat page: a client of the companion API in plain JavaScript.
//
// It uses the API as any client would: the threads API for the thread list
// and a thread's history, POST .../stream in the seed dialect for a turn
// (Server-Sent Events read from fetch, since the request is a POST; the
// notices told with a reply come in its start, a safety check's stop in its
// run-finish), the run's resume stream with Last-Event-ID when the
// connection breaks, and the run's cancel for the stop button; the memory
// API for what the companion knows of the person (its working memory, read
// and edited), the search over past conversations, and forgetting
// everything. Every node is built with
// the DOM API and text goes in as text: the page never parses HTML.

const AGENT = '/api/agents/companionAgent';
const PERSONALITIES = ['friend', 'guru', 'wanderer', 'philosopher'];
// Resumes tried after a broken stream before giving up; the service keeps
// an abandoned run going for -resume-grace (30 seconds by default).
const MAX_RESUMES = 8;
const TITLE_LENGTH = 60;

const $ = (id) => document.getElementById(id);
const els = {
  settingsBox: $('settings-box'),
  settings: $('settings'),
  resource: $('resource'),
  apiKey: $('api-key'),
  threadsToggle: $('threads-toggle'),
  sidebar: $('sidebar'),
  newThread: $('new-thread'),
  threadList: $('thread-list'),
  threadsEmpty: $('threads-empty'),
  title: $('thread-title'),
  whoami: $('whoami'),
  status: $('status'),
  conversation: $('conversation'),
  composer: $('composer'),
  personality: $('personality'),
  message: $('message'),
  send: $('send'),
  stop: $('stop'),
  search: $('search'),
  searchQuery: $('search-query'),
  searchBox: $('search-results-box'),
  searchCount: $('search-count'),
  searchResults: $('search-results'),
  searchClear: $('search-clear'),
  memoryOpen: $('memory-open'),
  memory: $('memory'),
  memoryText: $('memory-text'),
  memoryEmpty: $('memory-empty'),
  memoryStatus: $('memory-status'),
  memorySave: $('memory-save'),
  memoryClose: $('memory-close'),
  memoryForget: $('memory-forget'),
};

const state = {
  // The user id: the one typed in Settings, or the guest id the page made.
  resource: '',
  // made is whether resource is the page's guest id, not one chosen.
  made: false,
  apiKey: '',
  personality: 'friend',
  // The thread shown, and the resource's threads as last listed.
  threadId: '',
  threads: [],
  // The turn in progress (one at a time), or null.
  run: null,
  // A message refused before its run began, kept with its id so that
  // sending it again cannot store it twice.
  retry: null,
  // Bumped on every thread switch: a history that arrives late is dropped.
  shown: 0,
  // Bumped on every search, and on every read of what the companion
  // knows: answers that arrive late are dropped.
  searched: 0,
  remembered: 0,
};

// Storage: the user id (and the guest id the page made), personality and
// last thread survive the browser; the API key stays in this tab only.
const saved = {
  get(area, key) {
    try {
      return window[area].getItem('companion.' + key) || '';
    } catch {
      return '';
    }
  },
  set(area, key, value) {
    try {
      if (value) window[area].setItem('companion.' + key, value);
      else window[area].removeItem('companion.' + key);
    } catch {
      // Storage may be off; the page works without it.
    }
  },
};

// ---------------------------------------------------------------- the API

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra = {}) {
  // The seed dialect, whatever the service's default is.
  const h = { 'X-Stream-Format': 'seed', ...extra };
  if (state.apiKey) h.Authorization = 'Bearer ' + state.apiKey;
  return h;
}

// actingFor is the resource id the page sends. With a credential and no id
// chosen, none: the credential names its resource, which a made guest id
// would contradict.
const actingFor = () => (state.made && state.apiKey ? '' : state.resource);

// url is path with the resource and params as its query.
function url(path, params = {}) {
  const q = new URLSearchParams();
  if (actingFor()) q.set('resourceId', actingFor());
  for (const [k, v] of Object.entries(params)) q.set(k, v);
  const s = q.toString();
  return s ? path + '?' + s : path;
}

async function errorOf(res) {
  let message = `HTTP ${res.status} ${res.statusText}`.trim();
  try {
    const body = await res.json();
    if (body && typeof body.error === 'string') message = body.error;
  } catch {
    // Not the API's JSON error: keep the status line.
  }
  return new ApiError(res.status, message);
}

async function api(method, path, body) {
  const init = { method, headers: headers() };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  if (!res.ok) throw await errorOf(res);
  return res.json();
}

const threadPath = (id) => '/api/memory/threads/' + encodeURIComponent(id);
const AGENT_ID = { agentId: 'companionAgent' };
const runPath = (runId) => AGENT + '/runs/' + encodeURIComponent(runId);

// ------------------------------------------------------- status and errors

function setStatus(text, kind = '') {
  els.status.textContent = text;
  els.status.className = 'status' + (kind ? ' ' + kind : '');
}

// problem says what went wrong in the status line; a missing or refused
// credential opens the settings at the field to fill in.
function problem(err, what) {
  if (err instanceof ApiError && err.status === 401) {
    if (els.memory.open) els.memory.close();
    setStatus('The service asks for an API key or token: enter it in Settings. (' + err.message + ')', 'error');
    els.settingsBox.open = true;
    els.apiKey.focus();
    return;
  }
  setStatus(explain(err, what), 'error');
}

// explain is what went wrong, in words, for a status line.
function explain(err, what) {
  if (err instanceof ApiError && err.status === 403) return what + ': ' + err.message + '. Check the user id in Settings.';
  if (err instanceof ApiError) return what + ': ' + err.message;
  return what + ': the service could not be reached.';
}

// ------------------------------------------------------------------ DOM

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') node.className = v;
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  node.append(...children.filter((c) => c !== undefined && c !== null));
  return node;
}

// The conversation follows a growing reply while it is scrolled to its
// end; a person who scrolled up to read stays where they are.
let following = true;

function nearBottom() {
  const c = els.conversation;
  return c.scrollHeight - c.scrollTop - c.clientHeight < 40;
}

function scrollDown(force = false) {
  if (force) following = true;
  if (following) els.conversation.scrollTop = els.conversation.scrollHeight;
}

function userMessage(text, pending = false) {
  return el(
    'article',
    { class: 'msg user', 'aria-label': 'You' },
    el('p', { class: 'who' }, 'You'),
    el('p', { class: 'text' }, text),
    pending ? el('p', { class: 'meta' }, 'Not answered yet') : null,
  );
}

// when is a time element for an API timestamp, or null when it is none.
function when(ts, cls) {
  const d = new Date(ts);
  if (!ts || Number.isNaN(d.getTime())) return null;
  return el('time', { class: cls, datetime: d.toISOString() }, d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }));
}

const number = (v, digits = 1) =>
  typeof v === 'number' && Number.isFinite(v) ? v.toLocaleString(undefined, { maximumFractionDigits: digits }) : '?';

// weatherCard shows a weatherTool result.
function weatherCard(r) {
  const place = typeof r.location === 'string' && r.location ? r.location : 'the place asked for';
  const rows = [
    ['Feels like', number(r.feelsLike) + ' °C'],
    ['Conditions', typeof r.conditions === 'string' ? r.conditions : '?'],
    ['Wind', number(r.windSpeed) + ' km/h' + (typeof r.windGust === 'number' ? ', gusts ' + number(r.windGust) + ' km/h' : '')],
    ['Humidity', number(r.humidity, 0) + ' %'],
  ];
  const dl = el('dl');
  for (const [k, v] of rows) dl.append(el('div', {}, el('dt', {}, k), el('dd', {}, v)));
  return el(
    'figure',
    { class: 'weather', 'aria-label': 'Weather in ' + place },
    el('figcaption', { class: 'place' }, place),
    el('p', { class: 'temp' }, number(r.temperature) + ' °C'),
    dl,
  );
}

// TOOLS says in words what each tool the companion uses is doing, has
// done, or failed to do; any other tool is named as it is.
const TOOLS = {
  weatherTool: { busy: 'Checking the weather…', failed: 'The weather lookup failed' },
  updateWorkingMemory: { busy: 'Noting this…', done: 'Noted in what I know about you.', failed: 'Noting this failed' },
};

// NOTICES says how each kind of notice the service sends with a reply is
// shown: the crisis referral stands out and is announced at once (an
// alert); that the person talks to an AI, and a reminder to take a break,
// are quiet notes. A kind the page does not know is a quiet note too.
const NOTICES = {
  'ai-disclosure': { label: 'AI companion', class: 'disclosure' },
  'break-reminder': { label: 'Time for a break', class: 'break' },
  'crisis-referral': { label: 'Help is available', class: 'crisis', urgent: true },
};

// Reply is one assistant message as it is drawn: the notices told with it
// (banners above it), then text blocks, tool cards and notices, in the
// order they came.
class Reply {
  constructor(live) {
    this.live = live;
    this.tools = new Map();
    this.banners = el('div', { class: 'banners' });
    this.banners.hidden = true;
    this.body = el('div', { class: 'body' });
    this.article = el(
      'article',
      { class: 'msg assistant', 'aria-label': 'Companion' },
      el('p', { class: 'who' }, 'Companion'),
      this.banners,
      this.body,
    );
    if (live) this.article.setAttribute('aria-busy', 'true');
  }

  // banner shows a notice of the service (payload.notices of the start):
  // what the person must be told with this reply.
  banner(kind, text) {
    if (typeof text !== 'string' || !text) return;
    const n = NOTICES[kind] || { label: 'Notice', class: 'other' };
    this.banners.append(
      el(
        'div',
        { class: 'banner ' + n.class, role: n.urgent ? 'alert' : 'note', 'aria-label': n.label, 'data-kind': kind },
        el('p', { class: 'banner-label' }, n.label),
        el('p', { class: 'banner-text' }, text),
      ),
    );
    this.banners.hidden = false;
  }

  // tripped marks a reply a safety check stopped: what it shows is what
  // the service put in its place.
  tripped(reason) {
    this.article.classList.add('tripped');
    const why = typeof reason === 'string' && reason ? ': ' + reason : '';
    this.article.append(el('p', { class: 'notice safety', role: this.live ? 'status' : null }, 'Stopped by a safety check' + why + '.'));
  }

  text(t) {
    let last = this.body.lastElementChild;
    if (!last || !last.classList.contains('text')) {
      last = el('p', { class: 'text' });
      this.body.append(last);
    }
    last.append(t);
  }

  // tool is the card of a call, made when the call starts.
  tool(id, name) {
    let t = this.tools.get(id);
    if (t) return t;
    const label = TOOLS[name] ? TOOLS[name].busy : 'Using ' + name + '…';
    const node = el('div', { class: 'tool pending', role: 'status' }, el('p', {}, label));
    t = { name, node, args: '', done: false };
    this.tools.set(id, t);
    this.body.append(node);
    return t;
  }

  toolArgs(id, name, args) {
    const t = this.tool(id, name);
    if (t.done) return;
    const where = args && typeof args.location === 'string' ? args.location : '';
    if (name === 'weatherTool' && where) t.node.firstChild.textContent = 'Checking the weather in ' + where + '…';
  }

  toolResult(id, name, result) {
    const t = this.tool(id, name);
    if (t.done) return;
    t.done = true;
    const node =
      name === 'weatherTool' && result && typeof result === 'object'
        ? weatherCard(result)
        : el('p', { class: 'tool' }, TOOLS[name] && TOOLS[name].done ? TOOLS[name].done : 'Used ' + name + '.');
    t.node.replaceWith(node);
    t.node = node;
  }

  toolError(id, name, message) {
    const t = this.tool(id, name || 'a tool');
    if (t.done) return;
    t.done = true;
    const what = TOOLS[t.name] ? TOOLS[t.name].failed : t.name + ' failed';
    const node = this.noticeNode('error tool-error', what + ': ' + message);
    t.node.replaceWith(node);
    t.node = node;
  }

  noticeNode(kind, text) {
    return el('p', { class: 'notice ' + kind, role: this.live ? 'alert' : null }, text);
  }

  notice(kind, text) {
    this.body.append(this.noticeNode(kind, text));
  }

  finish(note) {
    this.article.removeAttribute('aria-busy');
    if (note) this.article.append(el('p', { class: 'meta' }, note));
  }
}

// drawStored draws a message of the threads API.
function drawStored(m) {
  const parts = Array.isArray(m.parts) ? m.parts : [];
  if (m.role === 'user') {
    const text = parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
    const node = userMessage(text, Boolean(m.metadata && m.metadata.pending));
    if (typeof m.id === 'string') node.dataset.id = m.id;
    return node;
  }
  if (m.role !== 'assistant') return null;
  const r = new Reply(false);
  for (const p of parts) {
    if (p.type === 'text') r.text(p.text);
    else if (typeof p.type === 'string' && p.type.startsWith('tool-')) {
      const name = p.type.slice('tool-'.length);
      r.toolArgs(p.toolCallId, name, p.input);
      if (p.state === 'output-error') r.toolError(p.toolCallId, name, p.errorText || 'it failed');
      else if (p.state === 'output-available') r.toolResult(p.toolCallId, name, p.output);
    }
  }
  r.finish();
  if (typeof m.id === 'string') r.article.dataset.id = m.id;
  return r.article;
}

// --------------------------------------------------------------- threads

function threadLabel(t) {
  return t.title || 'Untitled thread';
}

function drawThreads() {
  const items = state.threads.map((t) => {
    const button = el(
      'button',
      { type: 'button', class: 'thread', 'aria-current': t.id === state.threadId ? 'page' : null },
      el('span', { class: 'thread-name' }, threadLabel(t)),
      when(t.updatedAt || t.createdAt, 'thread-when'),
    );
    button.addEventListener('click', () => {
      openThread(t.id);
      showSidebar(false);
      els.message.focus();
    });
    return el('li', {}, button);
  });
  els.threadList.replaceChildren(...items);
  els.threadsEmpty.hidden = items.length > 0;
}

async function loadThreads() {
  try {
    const list = await api(
      'GET',
      url('/api/memory/threads', { agentId: 'companionAgent', orderBy: 'updatedAt', sortDirection: 'DESC', perPage: '100' }),
    );
    state.threads = Array.isArray(list.threads) ? list.threads : [];
    drawThreads();
    return true;
  } catch (err) {
    problem(err, 'The threads could not be listed');
    return false;
  }
}

function newId() {
  if (crypto.randomUUID) return crypto.randomUUID();
  // Outside a secure context (plain http on another host) randomUUID is
  // missing; getRandomValues is not.
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function newThread() {
  state.shown++;
  state.threadId = newId();
  saved.set('localStorage', 'thread', state.threadId);
  els.title.textContent = 'New conversation';
  els.conversation.replaceChildren();
  drawThreads();
}

// openThread shows thread id and its history. found, from a search, names
// a stored thread the list may not hold (title) and the message to show
// (messageId).
async function openThread(id, found = null) {
  const shown = ++state.shown;
  state.threadId = id;
  saved.set('localStorage', 'thread', id);
  const t = state.threads.find((x) => x.id === id);
  els.title.textContent = t ? threadLabel(t) : found ? found.title : 'New conversation';
  els.conversation.replaceChildren();
  drawThreads();
  const run = state.run;
  if (!t && !found) {
    // A new thread: nothing stored yet, unless its first reply is streaming.
    if (run && run.threadId === id) els.conversation.append(run.reply.article);
    return;
  }
  let page;
  try {
    page = await api('GET', url(threadPath(id) + '/messages', { perPage: '1000' }));
  } catch (err) {
    if (shown === state.shown) problem(err, 'The thread could not be loaded');
    return;
  }
  if (shown !== state.shown) return;
  const nodes = (page.messages || []).map(drawStored).filter(Boolean);
  els.conversation.replaceChildren(...nodes);
  // A reply still streaming into this thread goes on below its history.
  if (run && run === state.run && run.threadId === id) els.conversation.append(run.reply.article);
  const target = found && nodes.find((n) => n.dataset.id === found.messageId);
  if (target) {
    target.classList.add('found');
    following = false;
    target.scrollIntoView({ block: 'center' });
  } else scrollDown(true);
}

// nameThread titles a new thread after its first message.
async function nameThread(id, text) {
  const title = text.length > TITLE_LENGTH ? text.slice(0, TITLE_LENGTH - 1).trimEnd() + '…' : text;
  try {
    await api('PATCH', url(threadPath(id)), { title });
  } catch {
    // An untitled thread is still a thread.
  }
}

// ---------------------------------------------------------------- search

function clearSearch() {
  state.searched++;
  els.searchResults.replaceChildren();
  els.searchCount.textContent = '';
  els.searchBox.hidden = true;
}

// search looks for the words of the search box in every past conversation
// and lists the messages found, best first: each opens its thread.
async function search() {
  const q = els.searchQuery.value.trim();
  if (!q) {
    clearSearch();
    return;
  }
  const searched = ++state.searched;
  let found;
  try {
    found = await api('GET', url('/api/memory/search', { ...AGENT_ID, searchQuery: q, limit: '20' }));
  } catch (err) {
    if (searched === state.searched) problem(err, 'The search failed');
    return;
  }
  if (searched !== state.searched) return;
  const results = Array.isArray(found.results) ? found.results : [];
  const items = results.map((r) => {
    const title = r.threadTitle || 'Untitled thread';
    const button = el(
      'button',
      { type: 'button', class: 'result' },
      el('span', { class: 'result-who' }, r.role === 'user' ? 'You' : 'Companion'),
      el('span', { class: 'result-text' }, r.content),
      el('span', { class: 'result-meta' }, when(r.createdAt, 'result-when'), el('span', { class: 'result-thread' }, title)),
    );
    button.addEventListener('click', () => {
      openThread(r.threadId, { title, messageId: r.id });
      showSidebar(false);
    });
    return el('li', {}, button);
  });
  els.searchResults.replaceChildren(...items);
  const n = results.length;
  els.searchCount.textContent = n === 0 ? `Nothing found for “${q}”.` : `${n} ${n === 1 ? 'message' : 'messages'} for “${q}”, best first.`;
  els.searchBox.hidden = false;
}

// ---------------------------------------------------- what it knows of you

// The companion's working memory is the resource's (or, when the service
// keeps it per thread, the shown thread's): read and written through the
// shown thread.
const memoryPath = () => url(threadPath(state.threadId || newId()) + '/working-memory', AGENT_ID);

function memoryStatus(text, kind = '') {
  els.memoryStatus.textContent = text;
  els.memoryStatus.className = 'status' + (kind ? ' ' + kind : '');
}

function showMemory(text) {
  els.memoryText.value = text;
  els.memoryEmpty.hidden = text !== '';
}

async function openMemory() {
  showMemory('');
  els.memoryEmpty.hidden = true;
  memoryStatus('Reading…');
  if (!els.memory.open) els.memory.showModal();
  const read = ++state.remembered;
  let wm;
  try {
    wm = await api('GET', memoryPath());
  } catch (err) {
    if (read !== state.remembered) return;
    if (err instanceof ApiError && err.status === 401) problem(err, 'What the companion knows could not be read');
    else memoryStatus(explain(err, 'What the companion knows could not be read'), 'error');
    return;
  }
  if (read !== state.remembered) return;
  showMemory(typeof wm.workingMemory === 'string' ? wm.workingMemory : '');
  // The template, as a hint of what is kept.
  const tpl = wm.workingMemoryTemplate || {};
  els.memoryText.placeholder = typeof tpl.content === 'string' ? tpl.content : tpl.content ? JSON.stringify(tpl.content, null, 2) : '';
  const d = new Date(wm.updatedAt);
  memoryStatus(wm.version > 0 && !Number.isNaN(d.getTime()) ? 'Last changed ' + d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) + '.' : '');
}

// saveMemory stores the panel's text as what the companion knows: a new
// version, the one before kept by the service.
async function saveMemory() {
  const read = ++state.remembered;
  els.memorySave.disabled = true;
  memoryStatus('Saving…');
  try {
    const r = await api('POST', memoryPath(), { workingMemory: els.memoryText.value });
    if (read === state.remembered) {
      els.memoryEmpty.hidden = els.memoryText.value !== '';
      memoryStatus('Saved (version ' + r.version + ').');
    }
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) problem(err, 'The notes could not be saved');
    else memoryStatus(explain(err, 'The notes could not be saved'), 'error');
  } finally {
    els.memorySave.disabled = false;
  }
}

const count = (n, one, many) => `${n} ${n === 1 ? one : many}`;

// forget erases everything the service keeps about the person, after they
// confirm it: their threads, their messages, what the companion knows.
async function forget() {
  // The erasure names the resource: the user id, or with only a
  // credential, the one its threads belong to.
  const listed = state.threads.find((t) => typeof t.resourceId === 'string' && t.resourceId);
  const rid = actingFor() || (listed ? listed.resourceId : '');
  if (!rid) {
    memoryStatus('Enter your user id in Settings first: everything kept under it is what would be forgotten.', 'error');
    return;
  }
  if (state.run) {
    memoryStatus('A reply is on its way: wait for it (or stop it) first.', 'error');
    return;
  }
  const sure = window.confirm(
    `Forget everything kept about ${rid}? Every conversation and what the companion knows about you are erased for good (a safety setting the operator made, such as a minor's mark, stays).`,
  );
  if (!sure) {
    memoryStatus('Nothing was forgotten.');
    return;
  }
  ++state.remembered;
  els.memoryForget.disabled = true;
  memoryStatus('Forgetting…');
  try {
    const r = await api('DELETE', '/api/memory/resources/' + encodeURIComponent(rid) + '?agentId=companionAgent');
    state.threads = [];
    clearSearch();
    els.searchQuery.value = '';
    newThread();
    showMemory('');
    const what = `${count(r.threads, 'conversation', 'conversations')}, ${count(r.messages, 'message', 'messages')} and what the companion knew about you`;
    memoryStatus('Forgotten: ' + what + '.');
    setStatus('Everything kept about you was forgotten.');
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) problem(err, 'Nothing could be forgotten');
    else memoryStatus(explain(err, 'Nothing could be forgotten'), 'error');
  } finally {
    els.memoryForget.disabled = false;
  }
}

// ------------------------------------------------------------- streaming

// readEvents reads the run's Server-Sent Events from body and applies each
// one it has not seen (ids are the run's event numbers: 1, 2, 3...). It
// returns how many it applied; it throws when the connection breaks.
async function readEvents(body, run) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let applied = 0;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      // Lines end with \n, \r\n or \r; a \r at the very end may be the
      // first half of \r\n, so it waits for the next chunk.
      let text = buf + value;
      const hold = text.endsWith('\r') ? '\r' : '';
      text = text.slice(0, text.length - hold.length).replace(/\r\n?/g, '\n');
      let end;
      while ((end = text.indexOf('\n\n')) >= 0) {
        const frame = text.slice(0, end);
        text = text.slice(end + 2);
        if (frame && applyFrame(frame, run)) applied++;
        if (run.done) return applied;
      }
      buf = text + hold;
    }
  } finally {
    reader.releaseLock();
  }
  return applied;
}

function applyFrame(frame, run) {
  let id = null;
  const data = [];
  for (const line of frame.split('\n')) {
    if (line.startsWith(':')) continue;
    const i = line.indexOf(':');
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? '' : line.slice(i + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id') id = Number(value);
    else if (field === 'data') data.push(value);
  }
  if (data.length === 0) return false;
  if (id !== null && Number.isFinite(id)) {
    if (id <= run.lastId) return false; // seen before a reconnect
    run.lastId = id;
  }
  let ev;
  try {
    ev = JSON.parse(data.join('\n'));
  } catch {
    return false;
  }
  applyEvent(ev, run);
  return true;
}

function applyEvent(ev, run) {
  if (!run.runId && typeof ev.runId === 'string') {
    run.runId = ev.runId;
    if (run.stopRequested) cancel(run);
  }
  const p = ev.payload || {};
  const r = run.reply;
  switch (ev.type) {
    case 'text':
      r.text(ev.text);
      break;
    case 'tool-call-input-streaming-start':
      r.tool(p.toolCallId, p.toolName);
      break;
    case 'tool-call':
      r.toolArgs(p.toolCallId, p.toolName, p.args);
      break;
    case 'tool-result':
      if (p.isError) r.toolError(p.toolCallId, p.toolName, (p.result && p.result.error) || 'it failed');
      else r.toolResult(p.toolCallId, p.toolName, p.result);
      break;
    case 'error': {
      const e = ev.error || {};
      if (e.code === 'TOOL_ERROR') r.toolError(p.toolCallId, p.toolName, e.message || 'it failed');
      else if (e.code === 'CANCELLED') run.cancelled = true;
      else r.notice('error', 'The reply failed: ' + (e.message || e.code || 'an error'));
      break;
    }
    case 'start':
      if (Array.isArray(p.notices)) {
        for (const n of p.notices) if (n && typeof n === 'object') r.banner(n.kind, n.text);
      }
      break;
    case 'run-finish':
      run.done = true;
      run.finishReason = p.finishReason;
      if (p.tripwire) r.tripped(p.tripwireReason);
      break;
  }
  scrollDown();
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// follow reads the run's stream from res to run-finish, resuming it with
// Last-Event-ID each time the connection breaks before that.
async function follow(run, res) {
  let attempts = 0;
  for (;;) {
    let broke = null;
    try {
      if ((await readEvents(res.body, run)) > 0) attempts = 0;
    } catch (err) {
      broke = err;
    }
    if (run.done) return;
    if (!run.runId) throw broke || new Error('the stream ended before the reply began');
    res = null;
    while (!res) {
      attempts++;
      if (attempts > MAX_RESUMES) throw new Error('the connection was lost and could not be resumed');
      setStatus('The connection was lost: reconnecting…', 'warn');
      await sleep(Math.min(250 * 2 ** (attempts - 1), 4000));
      let r;
      try {
        r = await fetch(url(runPath(run.runId) + '/stream'), {
          headers: headers({ 'Last-Event-ID': String(run.lastId), Accept: 'text/event-stream' }),
        });
      } catch {
        continue; // still offline
      }
      if (r.ok) {
        res = r;
        run.resumed = true;
        setStatus('Reconnected: the reply goes on.');
      } else if (r.status === 404 || r.status === 401 || r.status === 403) {
        throw await errorOf(r);
      }
    }
  }
}

async function cancel(run) {
  try {
    await api('POST', url(runPath(run.runId) + '/cancel'));
  } catch (err) {
    problem(err, 'The reply could not be stopped');
  }
}

function setBusy(busy) {
  els.send.disabled = busy;
  els.stop.hidden = !busy;
  els.stop.disabled = !busy;
  els.composer.setAttribute('aria-busy', busy ? 'true' : 'false');
}

async function send() {
  const text = els.message.value.trim();
  if (!text || state.run) return;
  if (!state.threadId) newThread();
  const threadId = state.threadId;
  const isNew = !state.threads.some((t) => t.id === threadId);
  const messageId = state.retry && state.retry.text === text && state.retry.threadId === threadId ? state.retry.id : newId();
  state.retry = null;

  const user = userMessage(text);
  const reply = new Reply(true);
  const run = { threadId, runId: '', lastId: 0, done: false, cancelled: false, stopRequested: false, reply };
  state.run = run;
  els.conversation.append(user, reply.article);
  scrollDown(true);
  els.message.value = '';
  setBusy(true);
  setStatus('');

  const body = {
    messages: [{ id: messageId, role: 'user', content: text }],
    threadId,
    runtimeContext: { metadata: { personality: state.personality } },
  };
  if (actingFor()) body.resourceId = actingFor();
  try {
    const res = await fetch(AGENT + '/stream', {
      method: 'POST',
      headers: headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
      body: JSON.stringify(body),
    });
    if (!res.ok) throw await errorOf(res);
    await follow(run, res);
    if (run.cancelled) {
      reply.finish('Stopped. This part of the reply was not saved; your message waits for the next turn.');
      setStatus('Stopped.');
    } else {
      reply.finish();
      if (run.resumed) setStatus('The connection broke and the reply was resumed where it stopped.');
      else if (!els.status.classList.contains('error')) setStatus('');
    }
  } catch (err) {
    if (!run.runId) {
      // Refused before the run began: put the message back to send again.
      user.remove();
      reply.article.remove();
      if (!els.message.value) els.message.value = text;
      state.retry = { text, id: messageId, threadId };
      problem(err, 'The message was not sent');
    } else {
      reply.finish();
      reply.notice('error', 'The reply broke off: ' + err.message + '.');
      setStatus('The reply broke off.', 'error');
    }
  }
  // The turn is over once the thread list shows it: only then is the page
  // ready for the next one.
  if (run.runId) {
    if (isNew) await nameThread(threadId, text);
    await loadThreads();
    if (state.threadId === threadId) {
      const t = state.threads.find((x) => x.id === threadId);
      if (t) els.title.textContent = threadLabel(t);
    }
  }
  state.run = null;
  setBusy(false);
  if (document.activeElement === els.stop || document.activeElement === document.body) els.message.focus();
}

function stop() {
  const run = state.run;
  if (!run || run.stopRequested) return;
  run.stopRequested = true;
  els.stop.disabled = true;
  setStatus('Stopping…');
  // Before the first event the run has no id yet: it is cancelled as soon
  // as one arrives.
  if (run.runId) cancel(run);
}

// ----------------------------------------------------------------- layout

function showSidebar(open) {
  els.sidebar.classList.toggle('open', open);
  els.threadsToggle.setAttribute('aria-expanded', String(open));
}

// ------------------------------------------------------------------ start

// guestId is the guest id this browser keeps, made on its first visit:
// with authentication off the page sends at once under it.
function guestId() {
  let id = saved.get('localStorage', 'guest');
  if (!id) {
    const b = crypto.getRandomValues(new Uint8Array(6));
    id = 'guest-' + [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
    saved.set('localStorage', 'guest', id);
  }
  return id;
}

async function applySettings() {
  // An emptied user id goes back to the guest id.
  state.resource = els.resource.value.trim() || guestId();
  state.made = state.resource === guestId();
  state.apiKey = els.apiKey.value.trim();
  els.resource.value = state.resource;
  saved.set('localStorage', 'resource', state.resource);
  saved.set('sessionStorage', 'apiKey', state.apiKey);
  els.whoami.textContent = actingFor() ? 'User ' + actingFor() : state.apiKey ? 'User of the API key' : '';
  // Another person's search results are not theirs to see.
  clearSearch();
  setStatus('');
  if (!(await loadThreads())) return;
  els.settingsBox.open = false;
  const last = saved.get('localStorage', 'thread');
  if (last && state.threads.some((t) => t.id === last)) await openThread(last);
  else if (state.threads.length > 0) await openThread(state.threads[0].id);
  else newThread();
}

function wire() {
  els.settings.addEventListener('submit', (e) => {
    e.preventDefault();
    applySettings().then(() => {
      if (!els.settingsBox.open) els.message.focus();
    });
  });
  els.personality.addEventListener('change', () => {
    state.personality = PERSONALITIES.includes(els.personality.value) ? els.personality.value : 'friend';
    saved.set('localStorage', 'personality', state.personality);
  });
  els.composer.addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  els.message.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    }
  });
  els.stop.addEventListener('click', stop);
  els.conversation.addEventListener('scroll', () => {
    following = nearBottom();
  });
  document.addEventListener('keydown', (e) => {
    // Escape in the panel closes the panel, and only that.
    if (e.key !== 'Escape' || els.memory.open) return;
    if (state.run) stop();
    else if (els.sidebar.classList.contains('open')) {
      showSidebar(false);
      els.threadsToggle.focus();
    }
  });
  els.newThread.addEventListener('click', () => {
    newThread();
    showSidebar(false);
    els.message.focus();
  });
  els.search.addEventListener('submit', (e) => {
    e.preventDefault();
    search();
  });
  els.searchQuery.addEventListener('input', () => {
    if (!els.searchQuery.value) clearSearch();
  });
  els.searchClear.addEventListener('click', () => {
    els.searchQuery.value = '';
    clearSearch();
    els.searchQuery.focus();
  });
  els.memoryOpen.addEventListener('click', openMemory);
  els.memorySave.addEventListener('click', saveMemory);
  els.memoryForget.addEventListener('click', forget);
  els.memoryClose.addEventListener('click', () => els.memory.close());
  els.threadsToggle.addEventListener('click', () => {
    const open = !els.sidebar.classList.contains('open');
    showSidebar(open);
    if (open) els.newThread.focus();
  });
}

async function start() {
  wire();
  // A first visit acts at once under a guest id: the settings are asked
  // for only when the service refuses (401: the API key or token).
  els.resource.value = saved.get('localStorage', 'resource');
  els.apiKey.value = saved.get('sessionStorage', 'apiKey');
  const p = saved.get('localStorage', 'personality');
  state.personality = PERSONALITIES.includes(p) ? p : 'friend';
  els.personality.value = state.personality;
  await applySettings();
}

start();
