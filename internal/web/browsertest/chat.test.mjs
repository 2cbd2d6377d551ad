// The web chat page in a real browser: Debian's Chromium, driven by
// playwright-core, against the built service (the fake model, slowed down so
// that a reply can be watched and stopped, and the fake Open-Meteo).
//
// Every scenario runs on the page as a person uses it: by the controls'
// accessible names, and the keyboard where a person would use it. The test
// fails on any console error or uncaught exception in the page; the one
// console error the browser writes by itself for a request the page expects
// to be refused (the 401 before an API key is entered) is declared where it
// happens and must occur. COMPANION_TEST_URL is the service with an API key,
// COMPANION_TEST_OPEN_URL one with authentication off. Screenshots go to
// COMPANION_TEST_OUTPUT.
import { describe, test, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

function required(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run this script through \`go test ./internal/web/browsertest/\``);
  }
  return v;
}

const baseUrl = required('COMPANION_TEST_URL').replace(/\/$/, '');
const openUrl = required('COMPANION_TEST_OPEN_URL').replace(/\/$/, '');
const apiKey = required('COMPANION_TEST_API_KEY');
const resourceId = required('COMPANION_TEST_RESOURCE');
const output = required('COMPANION_TEST_OUTPUT');
// When set, the canonical desktop screenshot is also copied there.
const docsScreenshot = process.env.COMPANION_TEST_DOCS_SCREENSHOT || '';
const executablePath = process.env.COMPANION_TEST_CHROMIUM || '/usr/bin/chromium';

const TIMEOUT = 30_000;
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 667 };

const FIRST = 'How do I start my day well?';
const WEATHER = "What's the weather in Berlin?";
const BROKEN_WEATHER = "What's the weather in Errorville?";
const LONG = 'Tell me something kind about rainy days, please.';
const REMEMBER = 'Remember that my sister is called Ana.';
const CRISIS = 'I want to kill myself';
// The service's ai-disclosure notice, told with a thread's first reply.
const DISCLOSURE = 'You are talking to an AI companion, not a person.';
const REFERRAL = 'If you are thinking about suicide or hurting yourself, please reach out now: call or text 988.';
const SORRY = "I'm really sorry you're feeling this way, and I'm glad you told me.";

let browser;

// Each page records its console errors and uncaught exceptions here.
const problems = [];
// expected holds console errors that the scenario under way declared.
const expected = [];

function watch(page, label) {
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const text = `${msg.text()} (${msg.location().url || 'no url'})`;
    const i = expected.findIndex((e) => !e.seen && e.pattern.test(text));
    if (i >= 0) {
      expected[i].seen = true;
      return;
    }
    problems.push(`${label}: console error: ${text}`);
  });
  page.on('pageerror', (err) => problems.push(`${label}: uncaught exception: ${err.stack || err.message}`));
  page.on('requestfailed', (req) => {
    const why = req.failure()?.errorText || 'failed';
    problems.push(`${label}: request failed: ${req.method()} ${req.url()}: ${why}`);
  });
}

// expectConsoleError declares that fn makes the browser write one console
// error matching pattern, and checks that it did.
async function expectConsoleError(pattern, fn) {
  const e = { pattern, seen: false };
  expected.push(e);
  try {
    await fn();
    const deadline = Date.now() + 5000;
    while (!e.seen && Date.now() < deadline) await sleep(50);
    assert.ok(e.seen, `the browser wrote no console error matching ${pattern}`);
  } finally {
    expected.splice(expected.indexOf(e), 1);
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function newPage(viewport, label, extra = {}) {
  const context = await browser.newContext({ viewport, ...extra });
  context.setDefaultTimeout(TIMEOUT);
  const page = await context.newPage();
  watch(page, label);
  return page;
}

async function shot(page, name) {
  mkdirSync(output, { recursive: true });
  const path = join(output, name + '.png');
  await page.screenshot({ path });
  return path;
}

// The page's parts, by role and accessible name.
const ui = (page) => ({
  settings: page.getByText('Settings', { exact: true }),
  userId: page.getByRole('textbox', { name: 'User id' }),
  apiKey: page.getByLabel('API key or token'),
  useSettings: page.getByRole('button', { name: 'Use these settings' }),
  newThread: page.getByRole('button', { name: 'New thread' }),
  threadsToggle: page.getByRole('button', { name: 'Threads' }),
  threads: page.getByRole('navigation', { name: 'Threads' }).getByRole('list', { name: 'Your threads' }).getByRole('listitem'),
  message: page.getByRole('textbox', { name: 'Message' }),
  send: page.getByRole('button', { name: 'Send' }),
  stop: page.getByRole('button', { name: 'Stop' }),
  personality: page.getByRole('combobox', { name: 'Personality' }),
  status: page.getByRole('status').first(),
  log: page.getByRole('log'),
  memoryOpen: page.getByRole('button', { name: 'What I know about you' }),
  panel: page.getByRole('dialog', { name: 'What I know about you' }),
  notes: page.getByRole('dialog', { name: 'What I know about you' }).getByRole('textbox', { name: 'Notes about you' }),
  search: page.getByRole('searchbox', { name: 'Search past conversations' }),
  found: page.getByRole('region', { name: 'Found' }),
  replies: page.getByRole('log').getByRole('article', { name: 'Companion' }),
  asked: page.getByRole('log').getByRole('article', { name: 'You' }),
});

// KEY_PROMPT starts the status line of a refused credential.
const KEY_PROMPT = 'The service asks for an API key or token';

// whoami is the user id the header shows; userIdKept the one in the
// settings (closed, they are out of the accessibility tree).
const whoami = (page) => page.locator('#whoami').textContent();
const userIdKept = (page) => page.locator('#resource').inputValue();
const settingsOpen = (page) => page.evaluate(() => document.getElementById('settings-box').open);
const settingsClosed = (page) => page.waitForFunction(() => !document.getElementById('settings-box').open);

// visitRefused opens the page of the service with an API key, without one:
// the page lists the threads of the guest id it acts for, the service
// answers 401, and the page asks for the key.
async function visitRefused(page) {
  let res;
  await expectConsoleError(/status of 401/, async () => {
    res = await page.goto(baseUrl + '/');
    await page.getByText(KEY_PROMPT).waitFor();
  });
  return res;
}

// signIn fills in the settings as a person would.
async function signIn(page, { key = true } = {}) {
  const u = ui(page);
  await u.userId.fill(resourceId);
  if (key) await u.apiKey.fill(apiKey);
  await u.useSettings.click();
}

// replyText is the text of a reply article: its text blocks only.
async function replyText(article) {
  return (await article.locator('.text').allTextContents()).join('');
}

// sendAndWatch sends text with the Enter key and follows the reply as it
// streams: it answers the reply's article, its final text, and the lengths
// of the text seen while it was still streaming.
async function sendAndWatch(page, text) {
  const u = ui(page);
  const before = await u.replies.count();
  await u.message.fill(text);
  await page.keyboard.press('Enter');
  const reply = u.replies.nth(before);
  await reply.waitFor();
  const partial = new Set();
  const deadline = Date.now() + TIMEOUT;
  while ((await reply.getAttribute('aria-busy')) === 'true') {
    assert.ok(Date.now() < deadline, 'the reply did not finish');
    const t = await replyText(reply);
    if (t) partial.add(t.length);
    await sleep(25);
  }
  await idle(page);
  return { reply, text: await replyText(reply), partial };
}

// idle waits until the page is done with its turn (the thread list updated
// too): Send is enabled again.
async function idle(page) {
  await page.waitForFunction(() => !document.getElementById('send').disabled && !document.getElementById('stop').checkVisibility());
}

// sseText is the reply text of a seed-dialect stream body, and the ids.
function parseSSE(body) {
  const events = [];
  for (const frame of body.split('\n\n')) {
    let id = null;
    let data = '';
    for (const line of frame.split('\n')) {
      if (line.startsWith('id: ')) id = Number(line.slice(4));
      if (line.startsWith('data: ')) data += line.slice(6);
    }
    if (data) events.push({ id, ev: JSON.parse(data), raw: frame });
  }
  return events;
}

before(async () => {
  // launch() starts Chromium with a fresh temporary profile of its own.
  browser = await chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

after(async () => {
  await browser?.close();
});

afterEach(() => {
  const found = problems.splice(0);
  assert.deepEqual(found, [], 'the page had errors');
});

describe('web chat, desktop', () => {
  let page;
  let u;
  let firstThread;

  before(async () => {
    page = await newPage(DESKTOP, 'desktop');
    u = ui(page);
  });

  test('the page is served with its security headers, and every control has a name', async () => {
    const res = await visitRefused(page);
    assert.equal(res.status(), 200);
    const h = res.headers();
    assert.match(h['content-security-policy'], /default-src 'self'/);
    assert.equal(h['x-content-type-options'], 'nosniff');
    assert.equal(await page.title(), 'Companion');
    const unnamed = await page.evaluate(() => {
      const out = [];
      for (const el of document.querySelectorAll('button, input, select, textarea, a[href], summary')) {
        const named =
          (el.labels && el.labels.length > 0) ||
          el.getAttribute('aria-label') ||
          el.getAttribute('aria-labelledby') ||
          el.textContent.trim();
        if (!named) out.push(el.outerHTML.slice(0, 80));
      }
      return out;
    });
    assert.deepEqual(unnamed, [], 'controls without an accessible name');
    // The page acted at once under a guest id of its own, and the refusal
    // opened the settings at the key.
    const guest = (await whoami(page)).match(/^User (guest-[0-9a-f]{12})$/);
    assert.ok(guest, `no guest id shown: ${await whoami(page)}`);
    assert.equal(await u.userId.inputValue(), guest[1]);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'api-key');
  });

  test('without an API key the service refuses, and the page asks for one', async () => {
    await expectConsoleError(/status of 401/, async () => {
      await signIn(page, { key: false });
      await page.getByText('The service asks for an API key or token').waitFor();
    });
    // The field to fill in has the focus.
    assert.equal(await page.evaluate(() => document.activeElement.id), 'api-key');
    await u.apiKey.fill(apiKey);
    await page.keyboard.press('Enter');
    // The settings close once the threads are listed.
    await settingsClosed(page);
    await page.getByText('No threads yet.').waitFor();
    assert.equal(await u.threads.count(), 0);
  });

  test('keyboard only: skip to the message box, Enter sends, and the reply streams in', async () => {
    await page.reload();
    await page.getByText('No threads yet.').waitFor();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to the message box');
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'message');
    // The focus is visible.
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    assert.notEqual(outline, 'none');

    const { text, partial } = await sendAndWatch(page, FIRST);
    assert.match(text, /start my day well/);
    assert.ok(partial.size >= 3, `the reply came in one piece (lengths seen while streaming: ${[...partial]})`);
    assert.ok([...partial].some((n) => n < text.length), 'no partial reply was seen');
    // The thread is listed under its first message, as the current one.
    await page.getByRole('button', { name: new RegExp(FIRST.replace('?', '\\?')) }).waitFor();
    assert.equal(await u.threads.count(), 1);
    firstThread = await page.getByRole('button', { name: new RegExp(FIRST.replace('?', '\\?')) });
    assert.equal(await firstThread.getAttribute('aria-current'), 'page');
    assert.ok(await u.send.isEnabled());
    assert.ok(await u.stop.isHidden());
    // The reply can be read by assistive technology as it comes.
    assert.equal(await u.log.getAttribute('role'), 'log');
    await shot(page, 'desktop-first-reply');
  });

  test('the personality picker changes the voice of the next reply', async () => {
    await u.personality.selectOption({ label: 'Guru' });
    const sent = page.waitForRequest((r) => r.url().endsWith('/api/agents/companionAgent/stream') && r.method() === 'POST');
    const { text } = await sendAndWatch(page, 'And how do I end the day?');
    const body = (await sent).postDataJSON();
    assert.equal(body.runtimeContext.metadata.personality, 'guru');
    assert.match(text, /^Breathe/, `not the guru's voice: ${text}`);
    assert.equal(await u.personality.inputValue(), 'guru');
  });

  test("a new thread's first reply says the companion is an AI, in a quiet notice above it; the next reply does not", async () => {
    const first = u.replies.nth(0);
    const notice = first.getByRole('note', { name: 'AI companion' });
    await notice.waitFor();
    assert.equal(await notice.locator('.banner-text').textContent(), DISCLOSURE);
    // Above the reply's text, and no part of it.
    const [box, textBox] = [await notice.boundingBox(), await first.locator('.text').first().boundingBox()];
    assert.ok(box.y + box.height <= textBox.y, `the notice (y ${box.y}) is not above the reply (y ${textBox.y})`);
    assert.ok(!(await replyText(first)).includes(DISCLOSURE), 'the notice is in the reply text');
    // Quiet: a note, not an alert.
    assert.equal(await first.getByRole('alert').count(), 0);
    assert.equal(await u.replies.nth(1).getByRole('note').count(), 0, 'the second reply of the thread has a notice');
  });

  test('a new thread, and the weather as a card', async () => {
    await u.personality.selectOption({ label: 'Friend' });
    await u.newThread.click();
    assert.equal(await page.evaluate(() => document.activeElement.id), 'message');
    assert.equal(await u.replies.count(), 0);
    const { reply, text } = await sendAndWatch(page, WEATHER);
    // A new thread: its first reply is told to be an AI's again.
    await reply.getByRole('note', { name: 'AI companion' }).getByText(DISCLOSURE).waitFor();
    const card = reply.getByRole('figure', { name: 'Weather in Berlin' });
    await card.waitFor();
    const shown = await card.textContent();
    for (const want of ['Berlin', '3.2 °C', 'Feels like', '-0.4 °C', 'Overcast', '14.8 km/h', 'gusts 29.5 km/h', '81 %']) {
      assert.ok(shown.includes(want), `the card lacks ${JSON.stringify(want)}: ${shown}`);
    }
    assert.match(text, /In Berlin it is 3\.2°C/);
    assert.equal(await u.threads.count(), 2);
  });

  test('a failing weather lookup shows a notice, and the reply goes on', async () => {
    const { reply, text } = await sendAndWatch(page, BROKEN_WEATHER);
    const notice = reply.getByRole('alert');
    await notice.waitFor();
    assert.match(await notice.textContent(), /^The weather lookup failed: weatherTool failed: the forecast service failed: HTTP 500/);
    assert.equal(await reply.getByRole('figure').count(), 0);
    assert.match(text, /Errorville/);
    const path = await shot(page, 'desktop');
    if (docsScreenshot) copyFileSync(path, docsScreenshot);
  });

  test('stop ends the reply mid-way, and nothing of it is kept', async () => {
    const before = await u.replies.count();
    await u.message.fill(LONG);
    await page.keyboard.press('Enter');
    const reply = u.replies.nth(before);
    // Wait for the first words, then stop.
    await reply.locator('.text').first().waitFor();
    const cancelled = page.waitForResponse((r) => /\/runs\/[^/]+\/cancel/.test(r.url()));
    await u.stop.click();
    const res = await cancelled;
    assert.equal(res.status(), 200);
    assert.equal((await res.json()).cancelled, true);
    await reply.getByText('Stopped. This part of the reply was not saved').waitFor();
    assert.equal(await reply.getAttribute('aria-busy'), null);
    assert.ok((await replyText(reply)).length > 0, 'nothing of the reply came before stop');
    await idle(page);
    await u.status.getByText('Stopped.').waitFor();
    await shot(page, 'desktop-stopped');

    // The stored thread has the message, waiting, and no reply to it.
    await page.reload();
    const last = u.asked.last();
    await last.getByText(LONG).waitFor();
    await last.getByText('Not answered yet').waitFor();
  });

  test('a stream cut by the network is resumed after the last event seen', async () => {
    // The page's stream request gets the start of the real response and
    // then ends, in the middle of an event, as a dropped connection does.
    let full = '';
    let cutAfter = 0;
    await page.route('**/api/agents/companionAgent/stream', async (route) => {
      const response = await route.fetch();
      full = await response.text();
      const events = parseSSE(full);
      const texts = events.filter((e) => e.ev.type === 'text');
      const cut = texts[Math.min(4, texts.length - 2)];
      cutAfter = cut.id;
      const upTo = full.indexOf(cut.raw) + cut.raw.length + 2;
      const next = events[events.indexOf(cut) + 1].raw;
      await route.fulfill({ response, body: full.slice(0, upTo) + next.slice(0, Math.floor(next.length / 2)) });
    }, { times: 1 });
    const resumed = page.waitForRequest((r) => /\/runs\/[^/]+\/stream/.test(r.url()));
    const { text } = await sendAndWatch(page, 'Tell me about the sea.');
    const req = await resumed;
    assert.equal(req.method(), 'GET');
    assert.equal(req.headers()['last-event-id'], String(cutAfter));
    const want = parseSSE(full).filter((e) => e.ev.type === 'text').map((e) => e.ev.text).join('');
    assert.equal(text, want, 'the resumed reply differs from the one the service sent');
    await u.status.getByText('the reply was resumed').waitFor();
    await page.unrouteAll();
  });

  test('a reply a safety check stopped: the crisis referral as an alert above it, and a mark of the stop with its reason', async () => {
    // The service's stream of a run the crisis protocol stopped.
    const events = [
      { type: 'start', runId: 'r-tripped', payload: { agentId: 'companionAgent', threadId: 't', resourceId, personality: 'friend', traceId: 'x',
        notices: [{ kind: 'crisis-referral', text: REFERRAL }] } },
      { type: 'step-start', runId: 'r-tripped', payload: { stepIndex: 0, stepType: 'initial', messageId: 'm' } },
      { type: 'text', runId: 'r-tripped', text: SORRY },
      { type: 'run-finish', runId: 'r-tripped', payload: { finishReason: 'other', usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
        tripwire: true, tripwireReason: 'crisis: suicidal ideation' } },
    ];
    const body = events.map((ev, i) => `id: ${i + 1}\ndata: ${JSON.stringify(ev)}\n\n`).join('');
    await page.route('**/api/agents/companionAgent/stream', (route) =>
      route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body }), { times: 1 });
    const { reply, text } = await sendAndWatch(page, CRISIS);
    const help = reply.getByRole('alert', { name: 'Help is available' });
    await help.waitFor();
    assert.equal(await help.locator('.banner-text').textContent(), REFERRAL);
    assert.equal(text, SORRY);
    const [box, textBox] = [await help.boundingBox(), await reply.locator('.text').first().boundingBox()];
    assert.ok(box.y + box.height <= textBox.y, 'the referral is not above the reply');
    await reply.getByText('Stopped by a safety check: crisis: suicidal ideation.').waitFor();
    assert.match(await reply.getAttribute('class'), /\btripped\b/);
    // Only the notices the service sent.
    assert.equal(await reply.getByRole('note').count(), 0);
    await shot(page, 'desktop-tripped');
    await page.unrouteAll();
  });

  test('after a reload, the threads and their history are there', async () => {
    await page.reload();
    await u.replies.first().waitFor();
    assert.equal(await u.threads.count(), 2);
    // The last thread opens again, with its card and its notice.
    await page.getByRole('figure', { name: 'Weather in Berlin' }).waitFor();
    await page.getByText(/^The weather lookup failed: weatherTool failed/).waitFor();
    // The stopped message was answered by the next turn.
    assert.equal(await page.getByText('Not answered yet').count(), 0);
    assert.ok((await u.replies.last().textContent()).length > 0);
    // The first thread, from the list.
    await page.getByRole('button', { name: new RegExp(FIRST.replace('?', '\\?')) }).click();
    await u.asked.first().getByText(FIRST).waitFor();
    await u.replies.nth(1).getByText(/^Breathe/).waitFor();
    assert.equal(await u.replies.count(), 2);
    assert.equal(await page.getByRole('heading', { level: 2, name: FIRST }).count(), 1);
    await shot(page, 'desktop-reloaded');
  });
});

describe('web chat, phone-sized', () => {
  let page;
  let u;

  before(async () => {
    page = await newPage(PHONE, 'phone', { isMobile: true, hasTouch: true });
    u = ui(page);
  });

  test('fits a 375 px wide screen, the threads open from a button, and a message gets its reply', async () => {
    await visitRefused(page);
    await signIn(page);
    await u.replies.first().waitFor();
    const wide = () => page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok((await wide()) <= PHONE.width, `the page is wider than the screen: ${await wide()} px`);
    // The thread list is behind its button.
    assert.ok(await u.newThread.isHidden());
    assert.equal(await u.threadsToggle.getAttribute('aria-expanded'), 'false');
    await u.threadsToggle.click();
    assert.equal(await u.threadsToggle.getAttribute('aria-expanded'), 'true');
    await u.newThread.waitFor();
    assert.equal(await u.threads.count(), 2);
    await shot(page, 'phone-threads');
    await u.threads.getByRole('button', { name: new RegExp(FIRST.replace('?', '\\?')) }).click();
    assert.ok(await u.newThread.isHidden());
    await u.asked.first().getByText(FIRST).waitFor();

    const { text } = await sendAndWatch(page, WEATHER);
    assert.match(text, /Berlin/);
    await page.getByRole('figure', { name: 'Weather in Berlin' }).last().waitFor();
    assert.ok((await wide()) <= PHONE.width, `the page is wider than the screen: ${await wide()} px`);
    // The message box and its buttons are on the screen.
    for (const control of [u.message, u.send, u.personality]) {
      const box = await control.boundingBox();
      assert.ok(box && box.y >= 0 && box.y + box.height <= PHONE.height && box.x + box.width <= PHONE.width, 'a control is off the screen');
    }
    await shot(page, 'phone');
  });
});

describe('what the companion knows, search, and forgetting everything', () => {
  let page;
  let u;

  before(async () => {
    page = await newPage(DESKTOP, 'memory');
    u = ui(page);
  });

  // openPanel opens "What I know about you" and waits until it has read
  // what the companion knows.
  async function openPanel() {
    await u.memoryOpen.click();
    await u.panel.waitFor();
    await page.waitForFunction(() => document.getElementById('memory-status').textContent !== 'Reading…');
  }

  test('"Remember that ..." is noted, and the panel shows what the companion knows', async () => {
    await visitRefused(page);
    await signIn(page);
    await u.replies.first().waitFor();
    await u.newThread.click();
    const { reply } = await sendAndWatch(page, REMEMBER);
    await reply.getByText('Noted in what I know about you.').waitFor();
    await openPanel();
    assert.match(await u.notes.inputValue(), /^# About the user$/m);
    assert.match(await u.notes.inputValue(), /^- my sister is called Ana$/m);
    await u.panel.getByText(/^Last changed /).waitFor();
    // The panel is modal, and holds the focus.
    assert.ok(await page.evaluate(() => document.getElementById('memory').contains(document.activeElement)));
    await shot(page, 'desktop-memory');
  });

  test('an edit is saved, and is what the companion knows after a reload', async () => {
    const edited = (await u.notes.inputValue())
      .replace('- People who matter to them:', '- People who matter to them: Ana, my sister')
      .replace(/^- my sister is called Ana\n?/m, '');
    assert.ok(!edited.includes('called Ana'));
    await u.notes.fill(edited);
    const saved = page.waitForResponse((r) => r.url().includes('/working-memory') && r.request().method() === 'POST');
    await u.panel.getByRole('button', { name: 'Save' }).click();
    const res = await saved;
    assert.equal(res.status(), 200);
    assert.deepEqual(await res.json(), { success: true, version: 2 });
    await u.panel.getByText('Saved (version 2).').waitFor();
    // Escape closes the panel.
    await page.keyboard.press('Escape');
    await u.panel.waitFor({ state: 'hidden' });
    assert.equal(await page.evaluate(() => document.activeElement.id), 'memory-open');

    await page.reload();
    await u.replies.first().waitFor();
    await openPanel();
    assert.equal(await u.notes.inputValue(), edited);
    await u.panel.getByRole('button', { name: 'Close' }).click();
    await u.panel.waitFor({ state: 'hidden' });
  });

  test('search finds a past message, with its date and thread title, and opens its thread', async () => {
    await u.newThread.click();
    assert.equal(await u.asked.count(), 0);
    await u.search.fill('zebra');
    await page.keyboard.press('Enter');
    await u.found.getByText('Nothing found for “zebra”.').waitFor();

    const started = Date.now();
    await u.search.fill('sister');
    await page.keyboard.press('Enter');
    await u.found.getByText(/messages? for “sister”/).waitFor();
    // The person's own message (the companion's reply to it is found too).
    const result = u.found.getByRole('button', { name: new RegExp('^You ' + REMEMBER.replace('.', '\\.')) });
    await result.waitFor();
    assert.equal(await result.locator('.result-who').textContent(), 'You');
    assert.equal(await result.locator('.result-thread').textContent(), REMEMBER);
    const date = new Date(await result.locator('time').getAttribute('datetime'));
    assert.ok(Math.abs(started - date.getTime()) < 15 * 60_000, `the result's date is not the message's: ${date.toISOString()}`);
    assert.ok((await result.locator('time').textContent()).length > 0);
    await shot(page, 'desktop-search');

    await result.click();
    await page.getByRole('heading', { level: 2, name: REMEMBER }).waitFor();
    const message = u.asked.filter({ hasText: REMEMBER });
    await message.waitFor();
    assert.match(await message.getAttribute('class'), /\bfound\b/);
    assert.equal(await u.threads.getByRole('button', { name: new RegExp(REMEMBER.replace('.', '\\.')) }).getAttribute('aria-current'), 'page');
  });

  test('forget everything asks first, then erases every thread and what the companion knows', async () => {
    const threads = await u.threads.count();
    assert.ok(threads >= 3, `only ${threads} threads before forgetting`);
    await openPanel();
    const forget = u.panel.getByRole('button', { name: 'Forget everything' });

    // Declined: nothing is erased.
    let asked = '';
    page.once('dialog', (d) => {
      asked = `${d.type()}: ${d.message()}`;
      d.dismiss();
    });
    await forget.click();
    await u.panel.getByText('Nothing was forgotten.').waitFor();
    assert.match(asked, new RegExp(`^confirm: Forget everything kept about ${resourceId}\\?`));
    assert.equal(await u.threads.count(), threads);
    assert.notEqual(await u.notes.inputValue(), '');

    // Confirmed.
    const erased = page.waitForResponse((r) => r.url().includes('/api/memory/resources/'));
    page.once('dialog', (d) => d.accept());
    await forget.click();
    const res = await erased;
    assert.equal(res.request().method(), 'DELETE');
    assert.equal(res.status(), 200);
    const body = await res.json();
    assert.equal(body.threads, threads);
    assert.ok(body.workingMemories >= 1, `no working memory erased: ${JSON.stringify(body)}`);
    await u.panel.getByText(/^Forgotten: \d+ conversations, \d+ messages and what the companion knew about you\.$/).waitFor();
    assert.equal(await u.notes.inputValue(), '');
    await u.panel.getByText('Nothing kept yet').waitFor();
    await shot(page, 'desktop-forgotten');
    await u.panel.getByRole('button', { name: 'Close' }).click();
    await page.getByText('No threads yet.').waitFor();
    assert.equal(await u.threads.count(), 0);
    assert.ok(await u.found.isHidden());
    assert.equal(await u.replies.count(), 0);

    // So it stays.
    await page.reload();
    await page.getByText('No threads yet.').waitFor();
    assert.equal(await u.threads.count(), 0);
    await openPanel();
    assert.equal(await u.notes.inputValue(), '');
    await u.panel.getByText('Nothing kept yet').waitFor();
    await page.keyboard.press('Escape');
    await u.search.fill('sister');
    await page.keyboard.press('Enter');
    await u.found.getByText('Nothing found for “sister”.').waitFor();
  });
});

// apiGet reads path of the service at base, as a client of the API would.
async function apiGet(base, path, key = '') {
  const headers = { 'X-Stream-Format': 'seed' };
  if (key) headers.Authorization = 'Bearer ' + key;
  const res = await fetch(base + path, { headers });
  return { status: res.status, body: await res.json() };
}

const isStream = (r) => r.url().endsWith('/api/agents/companionAgent/stream') && r.method() === 'POST';

describe('a first visit, with authentication off', () => {
  let page;
  let u;
  let guest;
  let threadId;

  before(async () => {
    page = await newPage(DESKTOP, 'first visit');
    u = ui(page);
  });

  test('a message is sent at once under a guest id the page made, and shown', async () => {
    const sent = page.waitForRequest(isStream);
    await page.goto(openUrl + '/');
    // The page is ready once it has listed the (no) threads and begun a new
    // one, which it keeps as the last thread.
    await page.waitForFunction(() => localStorage.getItem('companion.thread'));
    await page.getByText('No threads yet.').waitFor();
    const shown = (await whoami(page)).match(/^User (guest-[0-9a-f]{12})$/);
    assert.ok(shown, `no guest id shown: ${await whoami(page)}`);
    guest = shown[1];
    assert.equal(await settingsOpen(page), false, 'the settings were opened');
    const { text } = await sendAndWatch(page, FIRST);
    assert.match(text, /start my day well/);
    const body = (await sent).postDataJSON();
    assert.equal(body.resourceId, guest);
    threadId = body.threadId;
    assert.equal(await u.threads.count(), 1);
    await shot(page, 'desktop-first-visit');
  });

  test('the guest id stays across a reload, and the stored thread is its own', async () => {
    await page.reload();
    await u.replies.first().waitFor();
    assert.equal(await whoami(page), 'User ' + guest);
    assert.equal(await userIdKept(page), guest);
    assert.equal(await u.threads.count(), 1);
    const q = `resourceId=${encodeURIComponent(guest)}&agentId=companionAgent`;
    const one = await apiGet(openUrl, `/api/memory/threads/${encodeURIComponent(threadId)}?${q}`);
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.equal(one.body.id, threadId);
    assert.equal(one.body.resourceId, guest);
    const list = await apiGet(openUrl, `/api/memory/threads?${q}`);
    assert.deepEqual(list.body.threads.map((t) => t.id), [threadId]);
  });

  test('a user id changed in Settings takes effect, and emptied goes back to the guest id', async () => {
    const asked = [];
    const record = (r) => {
      if (new URL(r.url()).pathname.startsWith('/api/memory/')) asked.push(r.url());
    };
    page.on('request', record);
    await u.settings.click();
    await u.userId.fill('visitor-two');
    await u.useSettings.click();
    await settingsClosed(page);
    await page.getByText('No threads yet.').waitFor();
    assert.equal(await whoami(page), 'User visitor-two');
    const sent = page.waitForRequest(isStream);
    const { text } = await sendAndWatch(page, WEATHER);
    assert.match(text, /Berlin/);
    assert.equal((await sent).postDataJSON().resourceId, 'visitor-two');
    await u.memoryOpen.click();
    await u.panel.waitFor();
    await page.waitForFunction(() => document.getElementById('memory-status').textContent !== 'Reading…');
    await u.panel.getByRole('button', { name: 'Close' }).click();
    await u.search.fill('Berlin');
    await page.keyboard.press('Enter');
    await u.found.getByText(/for “Berlin”/).waitFor();
    page.off('request', record);
    // The thread list, the thread, what the companion knows and the search
    // all asked for the new id.
    for (const want of ['/api/memory/threads?', '/working-memory', '/api/memory/search']) {
      assert.ok(asked.some((a) => a.includes(want)), `no request of ${want}: ${asked}`);
    }
    for (const a of asked) assert.equal(new URL(a).searchParams.get('resourceId'), 'visitor-two', a);

    const list = await apiGet(openUrl, '/api/memory/threads?resourceId=visitor-two&agentId=companionAgent');
    assert.equal(list.body.threads.length, 1);
    assert.equal(list.body.threads[0].resourceId, 'visitor-two');
    await page.reload();
    await u.replies.first().waitFor();
    assert.equal(await whoami(page), 'User visitor-two');

    await u.settings.click();
    await u.userId.fill('');
    await u.useSettings.click();
    await settingsClosed(page);
    await page.getByRole('heading', { level: 2, name: FIRST }).waitFor();
    assert.equal(await whoami(page), 'User ' + guest);
    assert.equal(await userIdKept(page), guest);
    assert.equal(await u.threads.count(), 1);
  });
});

describe('authentication on, and no key stored', () => {
  let page;
  let u;

  before(async () => {
    page = await newPage(DESKTOP, 'no key');
    u = ui(page);
  });

  test('sending is answered 401, and the page asks for the key; with it, the message goes', async () => {
    await visitRefused(page);
    // Closed, as a person who did not read the prompt would.
    await u.settings.click();
    assert.equal(await settingsOpen(page), false);
    await u.message.fill('Hello?');
    await expectConsoleError(/status of 401/, async () => {
      const refused = page.waitForResponse((r) => isStream(r.request()));
      await u.message.press('Enter');
      assert.equal((await refused).status(), 401);
    });
    await page.getByText(KEY_PROMPT).waitFor();
    assert.equal(await settingsOpen(page), true);
    assert.equal(await page.evaluate(() => document.activeElement.id), 'api-key');
    assert.equal(await u.message.inputValue(), 'Hello?', 'the message was not put back');
    assert.equal(await u.replies.count(), 0);

    // The key alone: it names the resource, and the guest id is not sent.
    await u.apiKey.fill(apiKey);
    await page.keyboard.press('Enter');
    await settingsClosed(page);
    assert.equal(await whoami(page), 'User of the API key');
    const sent = page.waitForRequest(isStream);
    const { text } = await sendAndWatch(page, 'Hello?');
    assert.ok(text.length > 0);
    const body = (await sent).postDataJSON();
    assert.equal(body.resourceId, undefined);
    const one = await apiGet(baseUrl, `/api/memory/threads/${encodeURIComponent(body.threadId)}`, apiKey);
    assert.equal(one.status, 200, JSON.stringify(one.body));
    assert.equal(one.body.resourceId, resourceId);
  });
});
