// What the scripts share: where the service is, the credential, and ids
// that do not collide between runs against one service.
import { randomUUID } from 'node:crypto';

function required(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set: run these scripts through \`go test ./internal/clienttest/\`, or set COMPANION_TEST_URL, COMPANION_TEST_API_KEY and COMPANION_TEST_RESOURCE for a service started with that key`);
  }
  return v;
}

export const baseUrl = required('COMPANION_TEST_URL').replace(/\/$/, '');
export const apiKey = required('COMPANION_TEST_API_KEY');
// The resource the API key acts for.
export const resourceId = required('COMPANION_TEST_RESOURCE');
export const authorization = `Bearer ${apiKey}`;
export const agentId = 'companionAgent';

// uniqueId names a thread no earlier run used.
export function uniqueId(prefix) {
  return `${prefix}-${randomUUID()}`;
}

// getJSON GETs path on the service with the credential and answers the
// parsed body; a status other than 200 throws with the body.
export async function getJSON(path) {
  const res = await fetch(baseUrl + path, { headers: { Authorization: authorization } });
  const text = await res.text();
  if (res.status !== 200) {
    throw new Error(`GET ${path} answered ${res.status}: ${text}`);
  }
  return JSON.parse(text);
}

// withTimeout rejects when promise has not settled within ms.
export function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// captureConsoleErrors runs fn while collecting what is written with
// console.error (where @mastra/client-js reports a failure of its own
// stream processing instead of throwing it), and answers fn's result and
// the messages.
export async function captureConsoleErrors(fn) {
  const original = console.error;
  const errors = [];
  console.error = (...args) => {
    errors.push(args.map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : typeof a === 'string' ? a : JSON.stringify(a))).join(' '));
  };
  try {
    const result = await fn();
    return { result, errors };
  } finally {
    console.error = original;
  }
}
