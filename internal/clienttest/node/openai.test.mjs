// The official openai package (5.x) against the service's OpenAI-compatible
// front: the model list, a completion whole and streamed (with
// stream_options.include_usage), a conversation resent whole each turn,
// which the thread stores once, and errors as the package's error classes.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { baseUrl, apiKey, resourceId, uniqueId, getJSON, withTimeout } from './env.mjs';

// No retries: a refused request must fail at once, as the service answered.
const client = new OpenAI({ apiKey, baseURL: `${baseUrl}/v1`, maxRetries: 0 });

describe('openai', () => {
  test('models.list names the companion and each personality', async () => {
    const ids = [];
    for await (const m of await client.models.list()) {
      assert.equal(m.object, 'model');
      ids.push(m.id);
    }
    assert.deepEqual(ids, ['companion', 'companion-guru', 'companion-wanderer', 'companion-friend', 'companion-philosopher']);
  });

  test('chat.completions.create answers in the personality, the weather tool inside', async () => {
    const c = await client.chat.completions.create({
      model: 'companion-guru',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: "What's the weather in Berlin?" }],
      max_completion_tokens: 400,
    });
    assert.match(c.id, /^chatcmpl-/);
    assert.equal(c.object, 'chat.completion');
    assert.equal(c.model, 'companion-guru');
    assert.equal(c.choices.length, 1);
    const [choice] = c.choices;
    assert.equal(choice.message.role, 'assistant');
    assert.match(choice.message.content, /Berlin/);
    assert.equal(choice.message.tool_calls, undefined, 'the tools run inside: the client sees no tool call');
    assert.equal(choice.finish_reason, 'stop');
    assert.ok(c.usage.prompt_tokens > 0 && c.usage.completion_tokens > 0);
    assert.equal(c.usage.total_tokens, c.usage.prompt_tokens + c.usage.completion_tokens);
  });

  test('max_tokens ends the answer with length', async () => {
    const c = await client.chat.completions.create({
      model: 'companion',
      messages: [{ role: 'user', content: 'Tell me a long story about the sea.' }],
      max_tokens: 5,
    });
    assert.equal(c.choices[0].finish_reason, 'length');
    assert.ok(c.usage.completion_tokens <= 5, `completion_tokens ${c.usage.completion_tokens}`);
  });

  test('stream: true with include_usage', async () => {
    const stream = await client.chat.completions.create({
      model: 'companion-wanderer',
      messages: [{ role: 'user', content: 'Where should I go next?' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    await withTimeout((async () => {
      for await (const chunk of stream) chunks.push(chunk);
    })(), 20000, 'the stream');
    assert.ok(chunks.length >= 4, `${chunks.length} chunks`);
    for (const c of chunks) {
      assert.equal(c.object, 'chat.completion.chunk');
      assert.equal(c.id, chunks[0].id);
      assert.equal(c.created, chunks[0].created);
      assert.equal(c.model, 'companion-wanderer');
    }
    assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
    const last = chunks.at(-1);
    assert.deepEqual(last.choices, []);
    assert.ok(last.usage.total_tokens > 0);
    const finish = chunks.at(-2).choices[0];
    assert.equal(finish.finish_reason, 'stop');
    assert.deepEqual(finish.delta, {});
    const text = chunks.slice(1, -2).map((c) => c.choices[0].delta.content).join('');
    assert.match(text, /road|travel/i, text);
  });

  test('a conversation resent whole each turn is one thread, stored once', async () => {
    const threadId = uniqueId('openai');
    const messages = [{ role: 'system', content: 'You are Sam.' }];
    for (const say of ['Hello', 'How are you?', 'Goodbye']) {
      messages.push({ role: 'user', content: say });
      const stream = await client.chat.completions.create(
        { model: 'companion', messages, stream: true },
        { headers: { 'X-Companion-Thread-Id': threadId } },
      );
      let answer = '';
      for await (const c of stream) answer += c.choices[0]?.delta?.content ?? '';
      messages.push({ role: 'assistant', content: answer });
    }
    const body = await getJSON(`/api/memory/threads/${encodeURIComponent(threadId)}/messages?resourceId=${encodeURIComponent(resourceId)}`);
    const stored = body.messages.map((m) => `${m.role}: ${m.parts.filter((p) => p.type === 'text').map((p) => p.text).join('')}`);
    assert.deepEqual(stored, messages.slice(1).map((m) => `${m.role}: ${m.content}`));
  });

  test('errors are the package\'s error classes', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'Hi' }] }),
      (err) => err instanceof OpenAI.NotFoundError && err.status === 404 && err.code === 'model_not_found' && err.type === 'invalid_request_error',
    );
    await assert.rejects(
      client.chat.completions.create({ model: 'companion', messages: [{ role: 'assistant', content: 'Hi' }] }),
      (err) => err instanceof OpenAI.BadRequestError && err.status === 400 && /user's/.test(err.message),
    );
    const stranger = new OpenAI({ apiKey: 'not-a-key', baseURL: `${baseUrl}/v1`, maxRetries: 0 });
    await assert.rejects(stranger.models.list(), (err) => err instanceof OpenAI.AuthenticationError && err.status === 401 && err.code === 'invalid_api_key');
  });
});
