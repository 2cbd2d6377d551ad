// @mastra/client-js 0.17.2 against the service: the agent's description
// (getAgents, details), generate, stream through processDataStream in
// Mastra's dialect, the memory thread calls, working
// memory (getWorkingMemory, updateWorkingMemory) and the memory search
// (which 0.17.2 has no method for: it goes through the client's own
// request helper).
import { describe, test, before } from 'node:test';
import assert from 'node:assert/strict';
import { MastraClient } from '@mastra/client-js';
import { baseUrl, authorization, resourceId, agentId, uniqueId, getJSON, withTimeout, captureConsoleErrors } from './env.mjs';

const client = new MastraClient({
  baseUrl,
  headers: { 'X-Stream-Format': 'mastra', Authorization: authorization },
});
const agent = client.getAgent(agentId);

const NICE = 'Tell me something nice.';
const WEATHER = "What's the weather in Berlin?";

function params(threadId, content) {
  return {
    messages: [{ role: 'user', content }],
    threadId,
    resourceId,
    runtimeContext: { metadata: { personality: 'friend' } },
  };
}

// A tool call or result as generate answers it: flat, as the service's
// contract has it, or wrapped in a chunk's payload, as Mastra's own server
// answers.
const unwrap = (x) => (x && typeof x === 'object' && x.payload && typeof x.payload === 'object' ? x.payload : x);

// textOf is a stored message's text: its text parts, or its content.
function textOf(m) {
  if (Array.isArray(m.parts)) {
    return m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
  }
  if (typeof m.content === 'string') return m.content;
  if (Array.isArray(m.content)) return m.content.filter((p) => p.type === 'text').map((p) => p.text).join('');
  if (m.content && Array.isArray(m.content.parts)) return textOf(m.content);
  return '';
}

// storedMessages reads the thread's messages with the service's own
// threads API (not through the Mastra client).
async function storedMessages(threadId) {
  const body = await getJSON(`/api/memory/threads/${encodeURIComponent(threadId)}/messages?resourceId=${encodeURIComponent(resourceId)}`);
  return body.uiMessages ?? body.messages;
}

// checkAgent checks the agent's description as the client reads it: the
// service runs the fake model with working memory on.
function checkAgent(a, where) {
  const body = JSON.stringify(a).slice(0, 800);
  assert.equal(a.name, agentId, `${where}: name, in ${body}`);
  assert.equal(typeof a.instructions, 'string', `${where}: no instructions in ${body}`);
  assert.match(a.instructions, /friend mode/, `${where}: not the default personality's instructions`);
  assert.equal(a.provider, 'fake', `${where}: provider`);
  assert.equal(a.modelId, 'fake', `${where}: modelId`);
  assert.equal(a.modelVersion, 'v2', `${where}: modelVersion`);
  for (const key of ['workflows', 'agents', 'defaultGenerateOptions', 'defaultStreamOptions']) {
    assert.deepEqual(a[key], {}, `${where}: ${key}`);
  }
  assert.deepEqual(Object.keys(a.tools).sort(), ['updateWorkingMemory', 'weatherTool'], `${where}: tools`);
  for (const [name, tool] of Object.entries(a.tools)) {
    assert.equal(tool.id, name, `${where}: the id of ${name}`);
    assert.ok(tool.description.length > 0, `${where}: ${name} has no description`);
    // Mastra's server serializes a schema with superjson: {"json": schema}.
    const schema = JSON.parse(tool.inputSchema).json;
    assert.equal(schema.type, 'object', `${where}: the input schema of ${name}: ${tool.inputSchema}`);
  }
  assert.deepEqual(JSON.parse(a.tools.weatherTool.inputSchema).json.required, ['location'], `${where}: weatherTool's arguments`);
}

describe('the agent described', () => {
  test('client.getAgents(): the one agent, keyed by its id', async () => {
    const agents = await client.getAgents();
    assert.deepEqual(Object.keys(agents), [agentId]);
    checkAgent(agents[agentId], 'getAgents');
  });

  test('client.getAgents() with a runtime context and partial', async () => {
    const agents = await client.getAgents({ user: 'someone' }, true);
    checkAgent(agents[agentId], 'getAgents(runtimeContext, partial)');
  });

  test('agent.details()', async () => {
    checkAgent(await agent.details(), 'details');
  });

  test('an unknown agent: details() rejects with 404', async () => {
    await assert.rejects(client.getAgent('otherAgent').details(), /404/);
  });
});

describe('agent.generate', () => {
  test('a plain reply: text, no tool calls', async () => {
    const res = await agent.generate(params(uniqueId('mastra-generate'), NICE));
    assert.equal(typeof res.text, 'string', `generate answered no text: ${JSON.stringify(res).slice(0, 500)}`);
    assert.ok(res.text.length > 0, 'generate answered an empty text');
    assert.ok(Array.isArray(res.toolCalls), 'toolCalls is not an array');
    assert.equal(res.toolCalls.length, 0, `a plain question made tool calls: ${JSON.stringify(res.toolCalls)}`);
    assert.equal(res.finishReason, 'stop');
  });

  test('weather in Berlin: weatherTool is called and its result reported', async () => {
    const res = await agent.generate(params(uniqueId('mastra-generate-weather'), WEATHER));
    assert.match(res.text, /Berlin/, `the reply does not mention Berlin: ${res.text}`);
    assert.ok(Array.isArray(res.toolCalls) && res.toolCalls.length === 1, `want one tool call, got ${JSON.stringify(res.toolCalls)}`);
    const call = unwrap(res.toolCalls[0]);
    assert.equal(call.toolName, 'weatherTool');
    assert.deepEqual(call.args, { location: 'Berlin' });
    assert.ok(Array.isArray(res.toolResults) && res.toolResults.length === 1, `want one tool result, got ${JSON.stringify(res.toolResults)}`);
    const result = unwrap(res.toolResults[0]);
    assert.equal(result.toolCallId, call.toolCallId, 'the tool result answers another call');
    assert.equal(result.toolName, 'weatherTool');
    assert.equal(typeof result.result?.temperature, 'number', `the result has no temperature: ${JSON.stringify(result)}`);
    assert.equal(res.finishReason, 'stop');
  });
});

// streamChunks runs agent.stream and collects every chunk that
// processDataStream hands to onChunk, and what the client reported with
// console.error while it processed the stream itself.
async function streamChunks(p) {
  const { result, errors } = await captureConsoleErrors(async () => {
    const response = await agent.stream(p);
    const chunks = [];
    await withTimeout(response.processDataStream({ onChunk: async (chunk) => { chunks.push(chunk); } }), 60_000, 'processDataStream');
    return { response, chunks };
  });
  return { ...result, errors };
}

const typesOf = (chunks) => chunks.map((c) => c?.type).join(', ');

// checkMastraStream checks what every Mastra stream must satisfy for the
// client to read it, and answers the concatenated text and the finish chunk.
function checkMastraStream({ response, chunks, errors }) {
  assert.equal(response.status, 200);
  assert.deepEqual(errors, [],
    `@mastra/client-js failed while processing the stream itself (it logs this and goes on); chunk types: ${typesOf(chunks)}`);
  assert.ok(chunks.length > 0, 'processDataStream handed over no chunk');
  for (const c of chunks) {
    assert.equal(typeof c.type, 'string', `a chunk without a type: ${JSON.stringify(c)}`);
    assert.equal(typeof c.runId, 'string', `a chunk without a runId: ${JSON.stringify(c)}`);
    assert.ok(c.payload && typeof c.payload === 'object', `a ${c.type} chunk without a payload object (the client reads chunk.payload): ${JSON.stringify(c).slice(0, 300)}`);
  }
  const errorChunks = chunks.filter((c) => c.type === 'error');
  assert.deepEqual(errorChunks, [], 'the stream reported an error');
  assert.ok(chunks.some((c) => c.type === 'text-delta'),
    `no text-delta chunk: the stream is not in Mastra's dialect (chunk types: ${typesOf(chunks)})`);

  let text = '';
  const started = new Set(); // tool calls whose input streaming started
  const called = new Set();
  for (const [i, c] of chunks.entries()) {
    switch (c.type) {
      case 'step-start':
        assert.equal(typeof c.payload.messageId, 'string', `step-start without payload.messageId: ${JSON.stringify(c.payload).slice(0, 300)}`);
        break;
      case 'text-delta':
        assert.equal(typeof c.payload.text, 'string', `text-delta without payload.text: ${JSON.stringify(c)}`);
        text += c.payload.text;
        break;
      case 'tool-call-input-streaming-start':
        started.add(c.payload.toolCallId);
        break;
      case 'tool-call-delta':
        assert.ok(started.has(c.payload.toolCallId), `tool-call-delta #${i} before its tool-call-input-streaming-start (the client crashes on it)`);
        break;
      case 'tool-call':
        called.add(c.payload.toolCallId);
        break;
      case 'tool-result':
        assert.ok(called.has(c.payload.toolCallId) || started.has(c.payload.toolCallId), `tool-result #${i} before any tool-call with its toolCallId (the client throws)`);
        break;
      case 'step-finish':
        assert.equal(typeof c.payload.stepResult?.isContinued, 'boolean', `step-finish without payload.stepResult.isContinued (the client crashes on it): ${JSON.stringify(c.payload).slice(0, 300)}`);
        break;
    }
  }

  const finishes = chunks.filter((c) => c.type === 'finish');
  assert.equal(finishes.length, 1, `want one finish chunk, got ${finishes.length} (chunk types: ${typesOf(chunks)})`);
  const finish = finishes[0];
  assert.equal(chunks.at(-1), finish, `finish is not the last chunk (chunk types: ${typesOf(chunks)})`);
  assert.equal(typeof finish.payload.stepResult?.reason, 'string', `finish without payload.stepResult.reason: ${JSON.stringify(finish.payload).slice(0, 300)}`);
  for (const [where, usage] of [['payload.output.usage', finish.payload.output?.usage], ['payload.usage', finish.payload.usage]]) {
    assert.ok(usage && typeof usage === 'object', `finish without ${where}: ${JSON.stringify(finish.payload).slice(0, 300)}`);
    for (const k of ['inputTokens', 'outputTokens', 'totalTokens']) {
      assert.equal(typeof usage[k], 'number', `finish ${where}.${k} is not a number: ${JSON.stringify(usage)}`);
    }
  }
  return { text, finish };
}

describe('agent.stream + processDataStream', () => {
  test('a plain reply arrives as text-delta chunks and ends with finish', async () => {
    const threadId = uniqueId('mastra-stream');
    const s = await streamChunks(params(threadId, NICE));
    const { text, finish } = checkMastraStream(s);
    assert.ok(text.length > 0, 'the text-delta chunks carry no text');
    assert.equal(finish.payload.stepResult.reason, 'stop');
    assert.ok(!s.chunks.some((c) => c.type.startsWith('tool-')), `a plain question made tool chunks: ${typesOf(s.chunks)}`);
    // The streamed text is the reply the thread stored, as generate's text would be.
    const stored = await storedMessages(threadId);
    const reply = stored.filter((m) => m.role === 'assistant').at(-1);
    assert.ok(reply, 'the thread stored no reply');
    assert.equal(text, textOf(reply), 'the streamed text differs from the stored reply');
  });

  test('weather in Berlin: tool-call with args, tool-result with temperature, then text', async () => {
    const s = await streamChunks(params(uniqueId('mastra-stream-weather'), WEATHER));
    const { text, finish } = checkMastraStream(s);
    assert.match(text, /Berlin/, `the streamed reply does not mention Berlin: ${text}`);

    const calls = s.chunks.filter((c) => c.type === 'tool-call');
    assert.equal(calls.length, 1, `want one tool-call chunk (chunk types: ${typesOf(s.chunks)})`);
    const call = calls[0].payload;
    assert.equal(call.toolName, 'weatherTool');
    assert.deepEqual(call.args, { location: 'Berlin' });

    const deltas = s.chunks.filter((c) => c.type === 'tool-call-delta' && c.payload.toolCallId === call.toolCallId);
    if (deltas.length > 0) {
      assert.deepEqual(JSON.parse(deltas.map((c) => c.payload.argsTextDelta).join('')), call.args, 'the argsTextDelta pieces do not make up the args');
    }

    const results = s.chunks.filter((c) => c.type === 'tool-result');
    assert.equal(results.length, 1, `want one tool-result chunk (chunk types: ${typesOf(s.chunks)})`);
    const result = results[0].payload;
    assert.equal(result.toolCallId, call.toolCallId, 'the tool-result answers another call');
    assert.equal(result.toolName, 'weatherTool');
    assert.equal(typeof result.result?.temperature, 'number', `the tool-result has no result.temperature: ${JSON.stringify(result)}`);

    const steps = s.chunks.filter((c) => c.type === 'step-finish');
    assert.ok(steps.length >= 2, `want a step-finish for the tool step and for the reply (chunk types: ${typesOf(s.chunks)})`);
    assert.equal(steps[0].payload.stepResult.isContinued, true, 'the tool step\'s step-finish does not say the run goes on');
    assert.equal(steps[0].payload.stepResult.reason, 'tool-calls', 'the tool step\'s stepResult.reason is not Mastra\'s "tool-calls"');
    assert.equal(steps.at(-1).payload.stepResult.isContinued, false);
    assert.equal(finish.payload.stepResult.reason, 'stop');
    assert.ok(s.chunks.indexOf(results[0]) < s.chunks.findIndex((c) => c.type === 'text-delta'), 'the text came before the tool result');
  });
});

describe('memory threads', () => {
  const threadId = uniqueId('mastra-memory');
  const thread = client.getMemoryThread(threadId, agentId);

  before(async () => {
    // Two turns: a plain one and a weather one.
    await agent.generate(params(threadId, NICE));
    await agent.generate(params(threadId, WEATHER));
  });

  test('getMemoryThreads lists the thread', async () => {
    const threads = await client.getMemoryThreads({ resourceId, agentId });
    assert.ok(Array.isArray(threads),
      `getMemoryThreads must answer a JSON array of threads (the client's declared GetMemoryThreadResponse is StorageThreadType[]), got ${JSON.stringify(threads).slice(0, 300)}`);
    const found = threads.find((t) => t.id === threadId);
    assert.ok(found, `the thread is not listed among ${threads.length} threads`);
    assert.equal(found.resourceId, resourceId);
    assert.ok(found.createdAt && found.updatedAt, `a thread without createdAt/updatedAt: ${JSON.stringify(found)}`);
  });

  test('get() returns the thread', async () => {
    const t = await thread.get();
    assert.equal(t.id, threadId);
    assert.equal(t.resourceId, resourceId);
    assert.ok(t.createdAt && t.updatedAt, `a thread without createdAt/updatedAt: ${JSON.stringify(t)}`);
  });

  test('getMessages() returns both turns', async () => {
    const res = await thread.getMessages();
    assert.ok(Array.isArray(res.uiMessages),
      `getMessages must answer uiMessages (the client's declared GetMemoryThreadMessagesResponse is {messages: CoreMessage[], uiMessages: UIMessage[], legacyMessages}), got keys ${Object.keys(res).join(', ')}`);
    assert.ok(Array.isArray(res.messages), `getMessages answered no messages array: keys ${Object.keys(res).join(', ')}`);

    const ui = res.uiMessages;
    assert.deepEqual(ui.map((m) => m.role), ['user', 'assistant', 'user', 'assistant'], `uiMessages: ${JSON.stringify(ui).slice(0, 500)}`);
    for (const m of ui) {
      assert.equal(typeof m.id, 'string');
      assert.ok(Array.isArray(m.parts), `a UI message without parts: ${JSON.stringify(m).slice(0, 300)}`);
    }
    assert.equal(textOf(ui[0]), NICE);
    assert.equal(textOf(ui[2]), WEATHER);
    assert.ok(textOf(ui[1]).length > 0, 'the first reply has no text part');
    assert.match(textOf(ui[3]), /Berlin/, 'the weather reply has no text part about Berlin');
    const tool = ui[3].parts.find((p) => p.type === 'tool-weatherTool');
    assert.ok(tool, `the weather reply has no tool-weatherTool part: ${JSON.stringify(ui[3].parts).slice(0, 500)}`);
    assert.equal(tool.state, 'output-available');
    assert.deepEqual(tool.input, { location: 'Berlin' });
    assert.equal(typeof tool.output?.temperature, 'number');

    // messages are model messages: role and content.
    const users = res.messages.filter((m) => m.role === 'user').map(textOf);
    assert.deepEqual(users, [NICE, WEATHER], `the user messages in messages: ${JSON.stringify(res.messages).slice(0, 500)}`);
    assert.ok(res.messages.some((m) => m.role === 'assistant'), 'messages holds no assistant message');
  });

  test('update() renames the thread', async () => {
    const title = 'Weather and kind words';
    const updated = await thread.update({ title, metadata: { topic: 'weather' }, resourceId });
    assert.equal(updated.id, threadId);
    assert.equal(updated.title, title);
    assert.deepEqual(updated.metadata, { topic: 'weather' });
    const again = await thread.get();
    assert.equal(again.title, title);
    assert.deepEqual(again.metadata, { topic: 'weather' });
  });

  test('delete() removes the thread; a later get() fails with 404', async () => {
    const res = await thread.delete();
    assert.equal(typeof res.result, 'string', `delete answered ${JSON.stringify(res)}`);
    await assert.rejects(thread.get(), /status: 404/);
    const threads = await getJSON(`/api/memory/threads?resourceId=${encodeURIComponent(resourceId)}&agentId=${agentId}`);
    const list = Array.isArray(threads) ? threads : threads.threads;
    assert.ok(!list.some((t) => t.id === threadId), 'the deleted thread is still listed');
  });
});

describe('working memory and search', () => {
  const threadId = uniqueId('mastra-working-memory');
  const FACT = 'Remember that my sister is called Ana.';
  // The version before this describe's updates: the resource is shared by
  // every script, so counts are relative.
  let before = 0;

  // checkWorkingMemory checks getWorkingMemory's answer against Mastra's
  // shape (workingMemory, source, workingMemoryTemplate, threadExists).
  function checkWorkingMemory(wm) {
    assert.ok(wm && typeof wm === 'object', `getWorkingMemory answered ${JSON.stringify(wm)}`);
    assert.ok(wm.workingMemory === null || typeof wm.workingMemory === 'string', `workingMemory is neither a string nor null: ${JSON.stringify(wm)}`);
    assert.equal(wm.source, 'resource');
    assert.equal(wm.workingMemoryTemplate?.format, 'markdown');
    assert.match(wm.workingMemoryTemplate.content, /^# About the user/);
    assert.equal(typeof wm.threadExists, 'boolean');
    assert.equal(typeof wm.version, 'number');
    return wm;
  }

  const read = async () => checkWorkingMemory(await client.getWorkingMemory({ agentId, threadId, resourceId }));

  test('getWorkingMemory answers in Mastra\'s shape for a thread not started yet', async () => {
    const wm = await read();
    assert.equal(wm.threadExists, false);
    before = wm.version;
  });

  test('"Remember that ..." makes the model call updateWorkingMemory; getWorkingMemory shows the fact', async () => {
    const res = await agent.generate(params(threadId, FACT));
    const call = unwrap(res.toolCalls?.[0]);
    assert.equal(call?.toolName, 'updateWorkingMemory', `want an updateWorkingMemory call, got ${JSON.stringify(res.toolCalls)}`);
    assert.equal(typeof call.args?.memory, 'string');
    const result = unwrap(res.toolResults?.[0]);
    assert.equal(result?.result?.success, true, `the update failed: ${JSON.stringify(res.toolResults)}`);
    const wm = await read();
    assert.equal(wm.threadExists, true);
    assert.match(wm.workingMemory, /^- my sister is called Ana$/m);
    assert.equal(wm.version, before + 1);
    assert.ok(!Number.isNaN(Date.parse(wm.updatedAt)), `updatedAt is not a date: ${wm.updatedAt}`);
  });

  test('updateWorkingMemory stores a person\'s edit as the next version', async () => {
    const edited = '# About the user\n- People who matter to them: Ana, my sister\n';
    const res = await client.updateWorkingMemory({ agentId, threadId, resourceId, workingMemory: edited });
    assert.deepEqual(res, { success: true, version: before + 2 });
    const wm = await read();
    assert.equal(wm.workingMemory, edited);
    assert.equal(wm.version, before + 2);
    // Resource scope: another thread of the resource sees the same block.
    const other = checkWorkingMemory(await client.getWorkingMemory({ agentId, threadId: uniqueId('mastra-other'), resourceId }));
    assert.equal(other.workingMemory, edited);
    assert.equal(other.threadExists, false);
  });

  test('the memory search finds the message in Mastra\'s shape, with its thread and context', async () => {
    const q = new URLSearchParams({ searchQuery: 'sister', resourceId, agentId, limit: '50' });
    const res = await client.request(`/api/memory/search?${q}`);
    assert.ok(Array.isArray(res.results), `the search answered no results array: ${JSON.stringify(res).slice(0, 300)}`);
    assert.equal(res.count, res.results.length);
    assert.equal(res.query, 'sister');
    assert.equal(res.searchScope, 'resource');
    assert.equal(res.searchType, 'text');
    for (const r of res.results) {
      for (const k of ['id', 'role', 'content', 'createdAt', 'threadId']) assert.equal(typeof r[k], 'string', `a result without ${k}: ${JSON.stringify(r)}`);
      assert.equal(typeof r.threadTitle, 'string');
      assert.ok(Array.isArray(r.context?.before) && Array.isArray(r.context?.after), `a result without context: ${JSON.stringify(r)}`);
    }
    const mine = res.results.find((r) => r.threadId === threadId && r.role === 'user');
    assert.ok(mine, `the search does not find the message of ${threadId}: ${JSON.stringify(res.results).slice(0, 500)}`);
    assert.equal(mine.content, FACT);
    assert.ok(Math.abs(Date.now() - Date.parse(mine.createdAt)) < 15 * 60_000, `createdAt is not the message's: ${mine.createdAt}`);
    assert.equal(mine.context.before.length, 0);
    assert.ok(mine.context.after.some((m) => m.role === 'assistant'), `the reply is not in the result's context: ${JSON.stringify(mine.context)}`);

    const none = await client.request(`/api/memory/search?${new URLSearchParams({ searchQuery: 'zebra', resourceId, agentId })}`);
    assert.deepEqual(none.results, []);
    assert.equal(none.count, 0);
  });
});
