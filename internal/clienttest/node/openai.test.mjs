// The official openai package (5.x) against the service's OpenAI-compatible
// front: the model list, a completion whole and streamed (with
// stream_options.include_usage), a conversation resent whole each turn,
// which the thread stores once, the safety fields the package keeps though
// it does not know them (notices, tripwire), and errors as the package's
// error classes.
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

  // A crisis message: the offline detector trips the run, and the reply is
  // the referral.
  const crisis = 'i want to kill myself';
  const disclosure = { kind: 'ai-disclosure', text: 'You are talking to an AI companion, not a person.' };
  // ask sends say as the first message of a new thread, so that its reply
  // opens an interaction and carries the AI disclosure.
  const ask = (say, extra = {}) => client.chat.completions.create(
    { model: 'companion', messages: [{ role: 'user', content: say }], ...extra },
    { headers: { 'X-Companion-Thread-Id': uniqueId('openai-safety') } },
  );
  // checkReferral checks that notices are the disclosure and the crisis
  // referral, and that content gives the referral's text.
  const checkReferral = (notices, content) => {
    assert.deepEqual(notices.map((n) => n.kind), ['ai-disclosure', 'crisis-referral']);
    assert.deepEqual(notices[0], disclosure);
    assert.ok(notices[1].text.length > 0 && content.includes(notices[1].text), `the reply ${JSON.stringify(content)} lacks the referral ${notices[1].text}`);
  };

  test('a first turn\'s completion carries the AI disclosure, the next turn none', async () => {
    const threadId = uniqueId('openai-notices');
    const first = await client.chat.completions.create(
      { model: 'companion', messages: [{ role: 'user', content: 'Hello' }] },
      { headers: { 'X-Companion-Thread-Id': threadId } },
    );
    assert.deepEqual(first.notices, [disclosure]);
    assert.equal(first.tripwire, undefined);
    assert.equal(first.choices[0].finish_reason, 'stop');
    const next = await client.chat.completions.create(
      { model: 'companion', messages: [{ role: 'user', content: 'Hello' }, first.choices[0].message, { role: 'user', content: 'How are you?' }] },
      { headers: { 'X-Companion-Thread-Id': threadId } },
    );
    assert.equal(next.notices, undefined, 'an ordinary completion has OpenAI\'s fields alone');
    assert.equal(next.tripwire, undefined);
  });

  test('a crisis trips the completion: content_filter, the tripwire, the referral as notice and reply', async () => {
    const c = await ask(crisis);
    assert.equal(c.choices[0].finish_reason, 'content_filter');
    assert.equal(c.tripwire, true);
    assert.equal(c.tripwireReason, 'crisis: suicidal ideation');
    checkReferral(c.notices, c.choices[0].message.content);
  });

  test('stream: the first chunk carries the notices, the finishing chunk the tripwire', async () => {
    const read = async (say) => {
      const chunks = [];
      const stream = await ask(say, { stream: true, stream_options: { include_usage: true } });
      await withTimeout((async () => {
        for await (const chunk of stream) chunks.push(chunk);
      })(), 20000, 'the stream');
      const finish = chunks.at(-2);
      for (const [i, c] of chunks.entries()) {
        if (i > 0) assert.equal(c.notices, undefined, `chunk ${i} has notices`);
        if (c !== finish) assert.equal(c.tripwire, undefined, `chunk ${i} has the tripwire`);
      }
      assert.deepEqual(chunks[0].choices[0].delta, { role: 'assistant', content: '' });
      const text = chunks.slice(1, -2).map((c) => c.choices[0].delta.content).join('');
      return { first: chunks[0], finish, text };
    };

    const hello = await read('Hello');
    assert.deepEqual(hello.first.notices, [disclosure]);
    assert.equal(hello.finish.choices[0].finish_reason, 'stop');
    assert.equal(hello.finish.tripwire, undefined);

    const tripped = await read(crisis);
    checkReferral(tripped.first.notices, tripped.text);
    assert.equal(tripped.finish.choices[0].finish_reason, 'content_filter');
    assert.equal(tripped.finish.tripwire, true);
    assert.equal(tripped.finish.tripwireReason, 'crisis: suicidal ideation');
  });

  test('the stream helper\'s final completion keeps the notices and the tripwire', async () => {
    const stream = client.chat.completions.stream(
      { model: 'companion', messages: [{ role: 'user', content: crisis }] },
      { headers: { 'X-Companion-Thread-Id': uniqueId('openai-safety') } },
    );
    const c = await withTimeout(stream.finalChatCompletion(), 20000, 'the stream');
    assert.equal(c.choices[0].finish_reason, 'content_filter');
    assert.equal(c.tripwire, true);
    assert.equal(c.tripwireReason, 'crisis: suicidal ideation');
    checkReferral(c.notices, c.choices[0].message.content);
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
