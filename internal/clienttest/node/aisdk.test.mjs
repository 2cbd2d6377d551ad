// The AI SDK's chat client (package `ai` 5.x) against the service's UI
// message stream endpoint: DefaultChatTransport sends the chat request as
// useChat does, readUIMessageStream builds the assistant's UI message.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { DefaultChatTransport, readUIMessageStream, generateId } from 'ai';
import { baseUrl, authorization, resourceId, agentId, uniqueId, getJSON, withTimeout } from './env.mjs';

const api = `${baseUrl}/api/agents/${agentId}/chat`;
const WEATHER = "What's the weather in Berlin?";

// The responses of the current turn, for the status and header checks.
const responses = [];
const transport = new DefaultChatTransport({
  api,
  headers: { Authorization: authorization },
  body: { resourceId },
  fetch: async (url, init) => {
    const res = await fetch(url, init);
    responses.push(res);
    return res;
  },
});

const textOf = (m) => m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
const typesOf = (chunks) => chunks.map((c) => c.type).join(', ');

// turn sends history plus a new user message with text, as useChat's
// sendMessage does, and reads the answer. It answers the assistant UI
// message, the chunks, and the conversation with both new messages.
async function turn(chatId, history, text) {
  const user = { id: generateId(), role: 'user', parts: [{ type: 'text', text }] };
  const messages = [...history, user];
  let stream;
  responses.length = 0;
  try {
    stream = await transport.sendMessages({ chatId, messages, trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
  } catch (err) {
    const status = responses.at(-1)?.status;
    throw new Error(`POST ${api} ${status ? `answered ${status}` : 'failed'}: ${err.message.trim()}`);
  }
  const chunks = [];
  const recorded = stream.pipeThrough(new TransformStream({
    transform(chunk, controller) {
      chunks.push(chunk);
      controller.enqueue(chunk);
    },
  }));
  let assistant;
  const read = (async () => {
    for await (const message of readUIMessageStream({ stream: recorded, terminateOnError: true })) {
      assistant = message;
    }
  })();
  try {
    await withTimeout(read, 60_000, 'reading the UI message stream');
  } catch (err) {
    throw new Error(`${err.message} (chunks so far: ${typesOf(chunks)})`);
  }
  assert.ok(assistant, `the stream built no message (chunks: ${typesOf(chunks)})`);
  // useChat gives the reply an id of its own when the stream names none.
  if (!assistant.id) assistant = { ...assistant, id: generateId() };
  return { assistant, chunks, messages: [...messages, assistant] };
}

// checkStream checks the order rules of the protocol the reader relies on.
function checkStream(chunks) {
  assert.equal(chunks[0]?.type, 'start', `the stream does not open with start (chunks: ${typesOf(chunks)})`);
  assert.equal(chunks.at(-1).type, 'finish', `the stream does not end with finish (chunks: ${typesOf(chunks)})`);
  assert.deepEqual(chunks.filter((c) => c.type === 'error'), [], 'the stream reported an error');
  let open = 0;
  for (const c of chunks) {
    if (c.type === 'start-step') {
      assert.equal(open, 0, `start-step inside a step (chunks: ${typesOf(chunks)})`);
      open++;
    } else if (c.type === 'finish-step') {
      assert.equal(open, 1, `finish-step outside a step (chunks: ${typesOf(chunks)})`);
      open--;
    }
  }
  assert.equal(open, 0, 'a step was not finished');
  const finish = chunks.at(-1);
  if (finish.finishReason != null) assert.equal(finish.finishReason, 'stop');
}

// storedMessages reads the thread with the service's threads API.
async function storedMessages(threadId) {
  const body = await getJSON(`/api/memory/threads/${encodeURIComponent(threadId)}/messages?resourceId=${encodeURIComponent(resourceId)}`);
  return body.uiMessages ?? body.messages;
}

describe('DefaultChatTransport + readUIMessageStream', () => {
  test('a plain reply: one assistant message with a text part', async () => {
    const { assistant, chunks } = await turn(uniqueId('aisdk-chat'), [], 'Tell me something nice.');
    const res = responses.at(-1);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(res.headers.get('x-vercel-ai-ui-message-stream'), 'v1', 'the response lacks the protocol header x-vercel-ai-ui-message-stream: v1');
    checkStream(chunks);
    assert.equal(assistant.role, 'assistant');
    const texts = assistant.parts.filter((p) => p.type === 'text');
    assert.ok(texts.length > 0, `no text part: ${JSON.stringify(assistant.parts)}`);
    assert.ok(textOf(assistant).length > 0, 'the text parts are empty');
    for (const p of texts) assert.equal(p.state, 'done', 'a text part was never ended');
    assert.ok(!assistant.parts.some((p) => p.type.startsWith('tool-') || p.type === 'dynamic-tool'), `a plain question made tool parts: ${JSON.stringify(assistant.parts)}`);
  });

  test('weather in Berlin: a tool-weatherTool part with input and output', async () => {
    const { assistant, chunks } = await turn(uniqueId('aisdk-chat-weather'), [], WEATHER);
    checkStream(chunks);
    const tools = assistant.parts.filter((p) => p.type === 'tool-weatherTool');
    assert.equal(tools.length, 1, `want one tool-weatherTool part: ${JSON.stringify(assistant.parts)} (chunks: ${typesOf(chunks)})`);
    const tool = tools[0];
    assert.equal(tool.state, 'output-available', `the tool part ended in state ${tool.state}: ${JSON.stringify(tool)}`);
    assert.deepEqual(tool.input, { location: 'Berlin' });
    assert.equal(typeof tool.output?.temperature, 'number', `the tool output has no temperature: ${JSON.stringify(tool.output)}`);
    assert.match(textOf(assistant), /Berlin/, `the reply does not mention Berlin: ${textOf(assistant)}`);
    const toolAt = assistant.parts.indexOf(tool);
    const textAt = assistant.parts.findIndex((p) => p.type === 'text');
    assert.ok(toolAt < textAt, `the text came before the tool part: ${assistant.parts.map((p) => p.type).join(', ')}`);
  });

  test('a second turn that resends the whole history: each message is stored once', async () => {
    const chatId = uniqueId('aisdk-chat-history');
    const first = await turn(chatId, [], WEATHER);
    checkStream(first.chunks);
    const second = await turn(chatId, first.messages, 'Thank you! Anything else?');
    checkStream(second.chunks);
    assert.ok(textOf(second.assistant).length > 0, 'the second reply has no text');

    const stored = await storedMessages(chatId);
    assert.deepEqual(stored.map((m) => m.role), ['user', 'assistant', 'user', 'assistant'],
      `the thread holds: ${JSON.stringify(stored.map((m) => ({ role: m.role, text: textOf(m) })))}`);
    assert.equal(textOf(stored[0]), WEATHER);
    assert.equal(textOf(stored[1]), textOf(first.assistant), 'the first stored reply is not the one streamed');
    assert.equal(textOf(stored[2]), 'Thank you! Anything else?');
    assert.equal(textOf(stored[3]), textOf(second.assistant), 'the second stored reply is not the one streamed');
    // When the stream names the reply's id (start.messageId), the thread
    // keeps it under that id, so a resent reply is known by it.
    for (const [i, t] of [[1, first], [3, second]]) {
      const named = t.chunks[0].messageId;
      if (named != null) assert.equal(stored[i].id, named, `stored reply ${i} has another id than the stream's start.messageId`);
    }
  });
});
