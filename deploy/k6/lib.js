// Shared by the k6 scripts: the service's address, request bodies, and a
// reader of the stream endpoint's Server-Sent Events (the seed dialect).
import http from 'k6/http';

export const base = __ENV.BASE_URL || 'http://127.0.0.1:4111';
export const personalities = ['guru', 'wanderer', 'friend', 'philosopher'];

// scenario is a constant number of users for a while, from VUS and DURATION.
export function scenario(vus, duration) {
  return {
    executor: 'constant-vus',
    vus: Number(__ENV.VUS || vus),
    duration: __ENV.DURATION || duration,
  };
}

// thread is a thread id no other iteration of any run uses.
export function thread(kind) {
  return `k6-${kind}-${__VU}-${__ITER}-${Date.now().toString(36)}`;
}

// body is a request carrying one new user message on a thread.
export function body(threadId, content, personality) {
  return JSON.stringify({
    threadId,
    resourceId: `k6-user-${__VU}`,
    messages: [{ role: 'user', content }],
    runtimeContext: { metadata: { personality } },
  });
}

function params(endpoint, tags) {
  return {
    headers: { 'Content-Type': 'application/json' },
    tags: Object.assign({ endpoint }, tags || {}),
    timeout: '60s',
  };
}

// generate posts to the generate endpoint and returns the response and its
// parsed body (null when it is not JSON).
export function generate(payload, tags) {
  const res = http.post(`${base}/api/agents/companionAgent/generate`, payload, params('generate', tags));
  let json = null;
  try {
    json = res.json();
  } catch (e) {
    json = null;
  }
  return { res, json };
}

// stream posts to the stream endpoint and returns the response and its
// events, parsed from the data lines.
export function stream(payload, tags) {
  const res = http.post(`${base}/api/agents/companionAgent/stream`, payload, params('stream', tags));
  const events = [];
  if (res.status === 200 && typeof res.body === 'string') {
    for (const line of res.body.split('\n')) {
      if (line.startsWith('data:')) {
        try {
          events.push(JSON.parse(line.slice(5)));
        } catch (e) {
          events.push({ type: 'unparsable' });
        }
      }
    }
  }
  return { res, events };
}

// streamText joins the text events of a stream.
export function streamText(events) {
  return events.filter((e) => e.type === 'text').map((e) => e.text).join('');
}

// finished tells whether a stream ended with run-finish.
export function finished(events) {
  return events.length > 0 && events[events.length - 1].type === 'run-finish';
}
