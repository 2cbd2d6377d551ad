// A mixed multi-turn chat: each iteration is one conversation of four turns
// on one thread, in one of the four personalities (each in turn), the turns
// alternating generate and stream: a greeting, the weather in Berlin, the
// weather in Paris and Tokyo (two tool calls at once), and a follow-up the
// service must answer from the thread's stored history. Against a service
// on the fake model with the weather tool on the fake Open-Meteo (make load
// starts both):
//   k6 run -e BASE_URL=http://127.0.0.1:4111 deploy/k6/chat.js
// VUS (16) and DURATION (30s) tune it. It fails when more than 1% of
// requests or checks fail, when a stream does not end with run-finish, or
// when p95 latency of a turn passes 500 ms (generate) or 750 ms (a whole
// stream; weather turns are two model steps and a tool call).
import { check } from 'k6';
import { Rate } from 'k6/metrics';
import { body, finished, generate, personalities, scenario, stream, streamText, thread } from './lib.js';

const completed = new Rate('stream_run_finish');

export const options = {
  scenarios: { chat: scenario(16, '30s') },
  thresholds: {
    http_req_failed: ['rate<0.01'],
    checks: ['rate>0.99'],
    stream_run_finish: ['rate>0.99'],
    'http_req_duration{endpoint:generate}': ['p(95)<500'],
    'http_req_duration{endpoint:stream}': ['p(95)<750'],
  },
};

const turns = [
  { via: 'generate', say: 'Hi! I am planning my weekend.' },
  { via: 'stream', say: "What's the weather in Berlin?", places: ['Berlin'] },
  { via: 'generate', say: "And what's the weather in Paris and Tokyo?", places: ['Paris', 'Tokyo'] },
  // The fake model quotes the previous user message: this reply shows the
  // stored history reached the model.
  { via: 'stream', say: 'Thanks! Which one should I visit?', recalls: 'Paris and Tokyo' },
];

export default function () {
  const threadId = thread('chat');
  const personality = personalities[(__VU + __ITER) % personalities.length];
  for (let i = 0; i < turns.length; i++) {
    const turn = turns[i];
    const tags = { turn: String(i + 1), personality };
    const payload = body(threadId, turn.say, personality);
    let status;
    let text = '';
    let tools = [];
    if (turn.via === 'generate') {
      const { res, json } = generate(payload, tags);
      status = res.status;
      if (json !== null && typeof json.text === 'string') {
        text = json.text;
        tools = (json.steps || []).flatMap((s) => s.toolResults || []);
      }
    } else {
      const { res, events } = stream(payload, tags);
      status = res.status;
      completed.add(finished(events));
      text = streamText(events);
      tools = events.filter((e) => e.type === 'tool-result').map((e) => e.payload);
      check(events, {
        'stream ends with run-finish': (ev) => finished(ev),
        'stream in the personality asked': (ev) => ev.length > 0 && ev[0].type === 'start' && ev[0].payload.personality === personality,
      });
    }
    const ok = check(status, { [`${turn.via} 200`]: (s) => s === 200 });
    check(text, { 'reply has text': (t) => t.length > 0 });
    if (turn.places) {
      check(tools, {
        'weather tool called for each place': (ts) => turn.places.every((p) => ts.some((t) => t.result && t.result.location === p)),
        'reply gives the weather': () => turn.places.every((p) => text.includes(p)),
      });
    }
    if (turn.recalls) {
      check(text, { 'reply recalls the previous turn': (t) => t.includes(turn.recalls) });
    }
    if (!ok) {
      break; // the thread's history is incomplete: start another conversation
    }
  }
}
