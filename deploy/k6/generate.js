// Load test of the generate endpoint: each iteration one question on a
// fresh thread, the personalities in turn. Against a service on the fake
// model:
//   k6 run -e BASE_URL=http://127.0.0.1:4111 deploy/k6/generate.js
// VUS (16) and DURATION (30s) tune it. It fails when more than 1% of
// requests fail or p95 latency passes 500 ms.
import { check } from 'k6';
import { body, generate, personalities, scenario, thread } from './lib.js';

export const options = {
  scenarios: { generate: scenario(16, '30s') },
  thresholds: {
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
    'http_req_duration{endpoint:generate}': ['p(95)<500'],
  },
};

export default function () {
  const personality = personalities[(__VU + __ITER) % personalities.length];
  const { res, json } = generate(body(thread('generate'), 'How do I start my day well?', personality));
  check(res, {
    'generate 200': (r) => r.status === 200,
    'generate has text': () => json !== null && typeof json.text === 'string' && json.text.length > 0,
    'generate finished': () => json !== null && json.finishReason === 'stop',
    // The fake model reports the personality it answered in.
    'generate in the personality asked': () =>
      json !== null && (!json.providerMetadata || !json.providerMetadata.fake || json.providerMetadata.fake.personality === personality),
  });
}
