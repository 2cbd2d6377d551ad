// Load test of both endpoints. Run against a service on the fake model:
//   k6 run -e BASE_URL=http://127.0.0.1:4111 deploy/k6/chat.js
// Each iteration sends one generate and one stream request on its own
// thread, alternating plain replies and weather questions.
import http from 'k6/http';
import { check } from 'k6';

const base = __ENV.BASE_URL || 'http://127.0.0.1:4111';
const personalities = ['guru', 'wanderer', 'friend', 'philosopher'];
const questions = ['How can I find more calm?', "What's the weather in Berlin?"];

export const options = {
  scenarios: {
    chat: {
      executor: 'constant-vus',
      vus: Number(__ENV.VUS || 20),
      duration: __ENV.DURATION || '30s',
    },
  },
  thresholds: {
    http_req_failed: ['rate<0.01'],
    'http_req_duration{endpoint:generate}': ['p(95)<500'],
    'http_req_duration{endpoint:stream}': ['p(95)<500'],
  },
};

function body(i) {
  return JSON.stringify({
    threadId: `k6-${__VU}-${__ITER}`,
    resourceId: `k6-user-${__VU}`,
    messages: [{ role: 'user', content: questions[i % questions.length] }],
    runtimeContext: { metadata: { personality: personalities[i % personalities.length] } },
  });
}

const params = (endpoint) => ({
  headers: { 'Content-Type': 'application/json' },
  tags: { endpoint },
});

export default function () {
  const g = http.post(`${base}/api/agents/companionAgent/generate`, body(__ITER), params('generate'));
  check(g, {
    'generate 200': (r) => r.status === 200,
    'generate has text': (r) => r.status === 200 && r.json('text').length > 0,
  });
  const s = http.post(`${base}/api/agents/companionAgent/stream`, body(__ITER + 1), params('stream'));
  check(s, {
    'stream 200': (r) => r.status === 200,
    'stream ends with run-finish': (r) => r.body.trimEnd().split('\n').pop().includes('"type":"run-finish"'),
  });
}
