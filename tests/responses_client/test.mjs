// The Responses API, models.retrieve and llama-server's native endpoints driven by real clients
// against a running engine-coordinator (stories260K): the openai SDK (responses.create plain and
// streaming, responses.stream, models.retrieve), LangChain's ChatOpenAI with useResponsesApi,
// the Vercel AI SDK's default OpenAI provider (generateText / streamText use /v1/responses),
// and fetch for /completion, /props, /slots and /models; tools and structured output in tools.mjs.
//   node test.mjs BASE_URL API_KEY OUT_FILE     (BASE_URL ends in /v1; run.sh starts the server)
// OUT_FILE receives the greedy texts, so that run.sh can check one process and a cluster agree.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import OpenAI from 'openai';
import { ChatOpenAI } from '@langchain/openai';
import { createOpenAI } from '@ai-sdk/openai';
import { generateText, streamText } from 'ai';

const [baseURL, apiKey, outFile] = process.argv.slice(2);
if (!baseURL || !apiKey || !outFile) {
  console.error('usage: node test.mjs BASE_URL API_KEY OUT_FILE');
  process.exit(2);
}
const root = baseURL.replace(/\/v1$/, '');
// Retries cover only a pooled keep-alive connection the server closed meanwhile (its 5 s idle
// timeout can pass between two checks on a loaded machine); 4xx answers are never retried.
const client = new OpenAI({ baseURL, apiKey, maxRetries: 2, timeout: 30000 });
const auth = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
const greedy = {};
let passed = 0;
async function check(name, fn) {
  await fn();
  passed++;
  console.log(`ok - ${name}`);
}

const modelId = (await client.models.list()).data[0].id;
const prompt = 'Once upon a time';

await check('models.retrieve returns the served model; an unknown id is a NotFoundError', async () => {
  const m = await client.models.retrieve(modelId);
  assert.equal(m.id, modelId);
  assert.equal(m.object, 'model');
  await assert.rejects(client.models.retrieve('no-such-model'), (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError);
    assert.equal(e.status, 404);
    assert.match(e.message, /no-such-model/);
    return true;
  });
});

await check('responses.create returns a response with output_text and usage', async () => {
  const r = await client.responses.create({ model: modelId, input: prompt, max_output_tokens: 12, temperature: 0 });
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.equal(r.status, 'incomplete');  // the token limit ended it
  assert.equal(r.incomplete_details.reason, 'max_output_tokens');
  assert.equal(r.output.length, 1);
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.equal(r.output[0].content[0].type, 'output_text');
  assert.ok(r.output_text.length > 0);
  assert.equal(r.usage.output_tokens, 12);
  assert.ok(r.usage.input_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + 12);
  assert.equal(r.max_output_tokens, 12);
  greedy.responses = r.output_text;
});

await check('responses.create takes instructions and a list of messages with input_text parts', async () => {
  const r = await client.responses.create({
    model: modelId, instructions: 'You tell stories.', max_output_tokens: 8, temperature: 0,
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'Tell me about a dog.' }] },
            { role: 'assistant', content: 'Once there was a dog.' },
            { type: 'message', role: 'user', content: 'And then?' }],
  });
  assert.equal(r.instructions, 'You tell stories.');
  assert.equal(r.usage.output_tokens, 8);
  assert.ok(r.output_text.length > 0);
  greedy.responses_messages = r.output_text;
});

await check('responses.create with stream: true sends the Responses event sequence', async () => {
  const stream = await client.responses.create({ model: modelId, input: prompt, max_output_tokens: 12, temperature: 0, stream: true });
  const types = [];
  let text = '';
  let last = null;
  let seq = -1;
  for await (const event of stream) {
    types.push(event.type);
    assert.equal(event.sequence_number, seq + 1);
    seq = event.sequence_number;
    if (event.type === 'response.output_text.delta') text += event.delta;
    last = event;
  }
  assert.deepEqual(types.slice(0, 4), ['response.created', 'response.in_progress', 'response.output_item.added',
                                       'response.content_part.added']);
  assert.deepEqual(types.slice(-4), ['response.output_text.done', 'response.content_part.done',
                                     'response.output_item.done', 'response.incomplete']);
  assert.ok(types.slice(4, -4).every((t) => t === 'response.output_text.delta'));
  assert.equal(text, greedy.responses);
  assert.equal(last.response.output[0].content[0].text, greedy.responses);
  assert.equal(last.response.usage.output_tokens, 12);
});

await check('responses.stream accumulates the final response; a stop string ends it as completed', async () => {
  const stream = client.responses.stream({ model: modelId, input: prompt, max_output_tokens: 12, temperature: 0 });
  const final = await stream.finalResponse();
  assert.equal(final.output_text, greedy.responses);
  const words = greedy.responses.trim().split(/\s+/);
  const stop = words[Math.min(2, words.length - 1)];
  const r = await client.responses.create({ model: modelId, input: prompt, max_output_tokens: 12, temperature: 0, stop: [stop] });
  assert.equal(r.status, 'completed');
  assert.equal(r.incomplete_details, null);
  assert.ok(greedy.responses.startsWith(r.output_text));
  assert.ok(!r.output_text.includes(stop));
});

await check('previous_response_id and store: true are refused with a 400 naming the field', async () => {
  for (const [field, value] of [['previous_response_id', 'resp_123'], ['store', true]]) {
    await assert.rejects(client.responses.create({ model: modelId, input: prompt, [field]: value }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError);
      assert.equal(e.param, field);
      return true;
    });
  }
});

await check('LangChain ChatOpenAI with useResponsesApi: invoke and stream', async () => {
  const llm = new ChatOpenAI({ model: modelId, apiKey, configuration: { baseURL }, useResponsesApi: true,
                               temperature: 0, maxTokens: 10, maxRetries: 2 });
  const msg = await llm.invoke('Tell me a story.');
  assert.ok(typeof msg.text === 'string' && msg.text.length > 0);
  assert.equal(msg.usage_metadata.output_tokens, 10);
  let streamed = '';
  for await (const chunk of await llm.stream('Tell me a story.')) streamed += chunk.text;
  assert.equal(streamed, msg.text);
  greedy.langchain = msg.text;
});

await check('Vercel AI SDK createOpenAI (Responses API): generateText and streamText', async () => {
  const openai = createOpenAI({ baseURL, apiKey });
  const g = await generateText({ model: openai(modelId), prompt: 'Tell me a story.', maxOutputTokens: 10,
                                 temperature: 0, maxRetries: 2 });
  assert.ok(g.text.length > 0);
  assert.equal(g.usage.outputTokens, 10);
  assert.equal(g.finishReason, 'length');
  assert.match(g.response.id, /^resp_/);
  const s = streamText({ model: openai(modelId), prompt: 'Tell me a story.', maxOutputTokens: 10, temperature: 0,
                         maxRetries: 2, onError: ({ error }) => { throw error; } });
  let text = '';
  for await (const piece of s.textStream) text += piece;
  assert.equal(text, g.text);
  assert.equal(await s.finishReason, 'length');
  assert.equal((await s.usage).outputTokens, 10);
  greedy.ai_sdk = g.text;
});

await check('n_predict is honoured on /v1/completions and /v1/chat/completions', async () => {
  const c = await client.completions.create({ model: modelId, prompt, max_tokens: 3, n_predict: 5, temperature: 0 });
  assert.equal(c.usage.completion_tokens, 5);
  const chat = await client.chat.completions.create({ model: modelId, messages: [{ role: 'user', content: 'Hi' }],
                                                      n_predict: 4, temperature: 0 });
  assert.equal(chat.usage.completion_tokens, 4);
});

// fetch, tried once more when the connection itself failed (see maxRetries above).
async function fetchRetry(url, init) {
  try {
    return await fetch(url, init);
  } catch (e) {
    if (!(e instanceof TypeError)) throw e;
    return fetch(url, init);
  }
}

async function post(path, body) {
  const r = await fetchRetry(root + path, { method: 'POST', headers: auth, body: JSON.stringify(body) });
  return { status: r.status, body: await r.text() };
}

await check('POST /completion answers in llama-server\'s shape', async () => {
  const r = await post('/completion', { prompt, n_predict: 12, temperature: 0, return_tokens: true, n_probs: 2 });
  assert.equal(r.status, 200);
  const j = JSON.parse(r.body);
  assert.equal(j.tokens.length, 12);
  assert.equal(j.tokens_predicted, 12);
  assert.ok(j.tokens_evaluated > 0);
  assert.equal(j.stop, true);
  assert.equal(j.stop_type, 'limit');
  assert.equal(j.truncated, false);
  assert.equal(j.generation_settings.n_predict, 12);
  assert.equal(j.timings.predicted_n, 12);
  assert.equal(j.completion_probabilities.length, 12);
  assert.equal(j.completion_probabilities[0].top_logprobs.length, 2);
  const legacy = await client.completions.create({ model: modelId, prompt, max_tokens: 12, temperature: 0 });
  assert.equal(j.content, legacy.choices[0].text);
  greedy.completion = j.content;
});

await check('POST /completion with stream: true sends data chunks, then the final object (no [DONE])', async () => {
  const r = await post('/completion', { prompt, n_predict: 12, temperature: 0, stream: true });
  assert.equal(r.status, 200);
  const events = r.body.split('\n\n').filter((e) => e.startsWith('data: ')).map((e) => e.slice(6));
  assert.ok(!events.includes('[DONE]'));
  const chunks = events.map((e) => JSON.parse(e));
  const final = chunks.at(-1);
  assert.equal(final.stop, true);
  assert.equal(final.stop_type, 'limit');
  assert.equal(chunks.slice(0, -1).map((c) => c.content).join(''), greedy.completion);
  assert.ok(chunks.slice(0, -1).every((c) => c.stop === false && c.tokens.length === 1));
});

await check('GET /props, /slots and /models (no /v1)', async () => {
  const props = await (await fetchRetry(root + '/props', { headers: auth })).json();
  assert.ok(props.total_slots >= 1);
  assert.ok(props.default_generation_settings.n_ctx > 0);
  const slots = await (await fetchRetry(root + '/slots', { headers: auth })).json();
  assert.equal(slots.length, props.total_slots);
  assert.equal(slots[0].n_ctx, props.default_generation_settings.n_ctx);
  const models = await (await fetchRetry(root + '/models', { headers: auth })).json();
  assert.equal(models.data[0].id, modelId);
});

// Function tools and structured output (tools.mjs).
await (await import('./tools.mjs')).run({ client, baseURL, apiKey, modelId, check, greedy });

writeFileSync(outFile, JSON.stringify(greedy, null, 1) + '\n');
console.log(`${passed} checks passed`);
