// The official openai npm client against a running engine-coordinator (stories260K):
//   node test.mjs BASE_URL API_KEY      e.g. node test.mjs http://127.0.0.1:8021/v1 secret
// Starts nothing itself (run.sh starts and stops the server). Exits non-zero on any failure.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const [baseURL, apiKey] = process.argv.slice(2);
if (!baseURL || !apiKey) {
  console.error('usage: node test.mjs BASE_URL API_KEY');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 20000 });
let passed = 0;
async function check(name, fn) {
  await fn();
  passed++;
  console.log(`ok - ${name}`);
}

await check('models.list shows the served model', async () => {
  const models = await client.models.list();
  assert.equal(models.data.length, 1);
  assert.equal(models.data[0].object, 'model');
  assert.ok(models.data[0].id.length > 0);
});

const prompt = 'Once upon a time';
let greedy = '';
await check('completions.create (greedy) returns text, usage and finish_reason', async () => {
  const r = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 12, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 12);
  assert.ok(r.usage.prompt_tokens > 0);
  greedy = r.choices[0].text;
  assert.ok(greedy.length > 0);
});

await check('completions.create with stream: true adds up to the same text', async () => {
  const stream = await client.completions.create({ model: 'stories260K', prompt, max_tokens: 12, temperature: 0, stream: true });
  let text = '';
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? '';
    if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
  }
  assert.equal(text, greedy);
  assert.equal(finish, 'length');
});

await check('chat.completions.create returns an assistant message', async () => {
  const r = await client.chat.completions.create({
    model: 'stories260K',
    messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a dog.' }],
    max_tokens: 10, temperature: 0, seed: 42,
  });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.equal(r.usage.completion_tokens, 10);
});

await check('chat streaming with include_usage gives the role, deltas and usage', async () => {
  const stream = await client.chat.completions.create({
    model: 'stories260K', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8, temperature: 0,
    stream: true, stream_options: { include_usage: true },
  });
  let role = null;
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const delta = chunk.choices[0]?.delta;
    if (delta?.role) role = delta.role;
    text += delta?.content ?? '';
  }
  assert.equal(role, 'assistant');
  assert.ok(text.length > 0);
  assert.equal(usage.completion_tokens, 8);
});

await check('a wrong key raises AuthenticationError (401)', async () => {
  const bad = new OpenAI({ baseURL, apiKey: 'wrong-key', maxRetries: 0 });
  await assert.rejects(bad.completions.create({ model: 'x', prompt, max_tokens: 2 }), (e) => {
    assert.equal(e.status, 401);
    assert.ok(e instanceof OpenAI.AuthenticationError);
    return true;
  });
});

await check('a bad parameter raises BadRequestError (400) naming the field', async () => {
  await assert.rejects(client.completions.create({ model: 'x', prompt, max_tokens: 2, n: 3 }), (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.param, 'n');
    return true;
  });
});

// Tool calls and structured output (structured.mjs).
await (await import('./structured.mjs')).run(client, check);

console.log(`${passed} checks passed`);
