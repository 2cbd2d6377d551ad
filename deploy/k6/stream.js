// Load test of the stream endpoint: each iteration one question on a fresh
// thread, the personalities in turn, read to its end. Against a service on
// the fake model:
//   k6 run -e BASE_URL=http://127.0.0.1:4111 deploy/k6/stream.js
// VUS (16) and DURATION (30s) tune it. It fails when more than 1% of
// requests fail or of streams do not end with run-finish, when p95 of a
// whole stream passes 500 ms, or p95 to its first byte (its first event)
// passes 250 ms.
import { check } from 'k6';
import { Rate, Trend } from 'k6/metrics';
import { body, finished, personalities, scenario, stream, streamText, thread } from './lib.js';

const completed = new Rate('stream_run_finish');
const firstByte = new Trend('stream_first_byte', true);

export const options = {
  scenarios: { stream: scenario(16, '30s') },
  thresholds: {
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
    stream_run_finish: ['rate>0.99'],
    stream_first_byte: ['p(95)<250'],
    'http_req_duration{endpoint:stream}': ['p(95)<500'],
  },
};

export default function () {
  const personality = personalities[(__VU + __ITER) % personalities.length];
  const { res, events } = stream(body(thread('stream'), 'How can I find more calm?', personality));
  if (res.status === 200) {
    firstByte.add(res.timings.waiting);
  }
  completed.add(finished(events));
  check(res, {
    'stream 200': (r) => r.status === 200,
    'stream starts with start': () => events.length > 0 && events[0].type === 'start',
    'stream in the personality asked': () => events.length > 0 && events[0].payload.personality === personality,
    'stream has text': () => streamText(events).length > 0,
    'stream ends with run-finish': () => finished(events),
  });
}
