// Function tools and structured output through real clients (imported by test.mjs): the openai
// SDK's responses.create with function tools (a forced call, its streamed events, the
// function_call_output of the next turn) and text.format json_schema; LangChain's bindTools with
// a forced tool call over chat completions and over the Responses API; the Vercel AI SDK's
// default provider (Responses API) generateObject / streamObject with a zod schema and a forced
// tool call. stories260K knows no JSON: only the grammar makes these pass.
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { tool as langchainTool } from '@langchain/core/tools';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, streamObject, generateText, tool as aiTool } from 'ai';
import { z } from 'zod';

const weatherParameters = {
  type: 'object',
  properties: {
    city: { type: 'string', maxLength: 12 },
    unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
  },
  required: ['city', 'unit'],
  additionalProperties: false,
};
const weatherTool = { type: 'function', name: 'get_weather', description: 'Weather in a city',
                      parameters: weatherParameters, strict: true };
const weatherZod = z.object({ city: z.string().max(12), unit: z.enum(['celsius', 'fahrenheit']) });

function checkWeatherArgs(args) {
  const a = typeof args === 'string' ? JSON.parse(args) : args;
  assert.equal(typeof a.city, 'string');
  assert.ok(a.city.length <= 12);
  assert.ok(['celsius', 'fahrenheit'].includes(a.unit));
  assert.deepEqual(Object.keys(a).sort(), ['city', 'unit']);
  return a;
}

const catZod = z.object({ name: z.string().max(10), age: z.number().int(), indoor: z.boolean() });

function checkCat(v) {
  assert.equal(typeof v.name, 'string');
  assert.ok(Number.isInteger(v.age));
  assert.equal(typeof v.indoor, 'boolean');
}

export async function run({ client, baseURL, apiKey, modelId, check, greedy }) {
  const input = 'What is the weather in Paris?';

  await check('openai responses.create with a function tool and a forced call: a function_call item', async () => {
    const r = await client.responses.create({
      model: modelId, input, tools: [weatherTool], tool_choice: { type: 'function', name: 'get_weather' },
      max_output_tokens: 300, temperature: 0,
    });
    assert.equal(r.status, 'completed');
    const calls = r.output.filter((o) => o.type === 'function_call');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, 'get_weather');
    assert.match(calls[0].call_id, /^call_/);
    checkWeatherArgs(calls[0].arguments);
    greedy.responses_tool_call = calls[0].arguments;

    // The next turn: the call and its output go back as input items; the answer is text.
    const next = await client.responses.create({
      model: modelId, tools: [weatherTool], tool_choice: 'none', max_output_tokens: 6, temperature: 0,
      input: [{ role: 'user', content: input }, calls[0],
              { type: 'function_call_output', call_id: calls[0].call_id, output: 'Sunny, 21 C' }],
    });
    assert.equal(next.output[0].type, 'message');
    assert.ok(next.output_text.length > 0);
  });

  await check('openai responses.create streaming a forced call sends the function_call events', async () => {
    const stream = await client.responses.create({
      model: modelId, input, tools: [weatherTool], tool_choice: 'required', max_output_tokens: 300, temperature: 0,
      stream: true,
    });
    let args = '';
    let done = null;
    let final = null;
    for await (const event of stream) {
      if (event.type === 'response.function_call_arguments.delta') args += event.delta;
      if (event.type === 'response.function_call_arguments.done') done = event.arguments;
      if (event.type === 'response.completed') final = event.response;
    }
    assert.equal(done, args);
    assert.equal(args, greedy.responses_tool_call);
    assert.equal(final.output[0].type, 'function_call');
    assert.equal(final.output[0].arguments, args);
  });

  await check('openai responses.create with text.format json_schema gives JSON matching the schema', async () => {
    const r = await client.responses.create({
      model: modelId, input: 'Describe a cat.', max_output_tokens: 300, temperature: 0.7, seed: 4,
      text: { format: { type: 'json_schema', name: 'cat', strict: true, schema: {
        type: 'object', properties: { name: { type: 'string', maxLength: 10 }, age: { type: 'integer' },
                                      indoor: { type: 'boolean' } },
        required: ['name', 'age', 'indoor'], additionalProperties: false } } },
    });
    assert.equal(r.status, 'completed');
    checkCat(JSON.parse(r.output_text));
  });

  const getWeather = langchainTool(async ({ city }) => `Sunny in ${city}`, {
    name: 'get_weather', description: 'Weather in a city', schema: weatherZod,
  });
  for (const useResponsesApi of [false, true]) {
    const api = useResponsesApi ? 'the Responses API' : 'chat completions';
    await check(`LangChain bindTools with a forced tool call over ${api}`, async () => {
      const llm = new ChatOpenAI({ model: modelId, apiKey, configuration: { baseURL }, useResponsesApi,
                                   temperature: 0, maxTokens: 300, maxRetries: 2 });
      const msg = await llm.bindTools([getWeather], { tool_choice: 'get_weather' }).invoke(input);
      assert.equal(msg.tool_calls.length, 1);
      assert.equal(msg.tool_calls[0].name, 'get_weather');
      const args = checkWeatherArgs(msg.tool_calls[0].args);
      // The tool runs on the parsed call (the zod schema accepts the arguments).
      const result = await getWeather.invoke(msg.tool_calls[0]);
      assert.equal(result.content, `Sunny in ${args.city}`);
      greedy[`langchain_tool_${useResponsesApi ? 'responses' : 'chat'}`] = args;
    });
  }

  const openai = createOpenAI({ baseURL, apiKey });
  await check('Vercel AI SDK generateObject and streamObject with a zod schema (Responses API)', async () => {
    const g = await generateObject({ model: openai(modelId), schema: catZod, prompt: 'Describe a cat.',
                                     maxOutputTokens: 300, temperature: 0, maxRetries: 2 });
    checkCat(g.object);
    assert.equal(g.finishReason, 'stop');
    greedy.ai_sdk_object = g.object;
    const s = streamObject({ model: openai(modelId), schema: catZod, prompt: 'Describe a cat.',
                             maxOutputTokens: 300, temperature: 0, maxRetries: 2, onError: ({ error }) => { throw error; } });
    let partials = 0;
    for await (const _ of s.partialObjectStream) partials++;
    assert.ok(partials >= 1);
    assert.deepEqual(await s.object, g.object);
  });

  await check('Vercel AI SDK generateText with a tool and a forced toolChoice (Responses API)', async () => {
    const g = await generateText({
      model: openai(modelId), prompt: input, maxOutputTokens: 300, temperature: 0, maxRetries: 2,
      tools: { get_weather: aiTool({ description: 'Weather in a city', inputSchema: weatherZod }) },
      toolChoice: { type: 'tool', toolName: 'get_weather' },
    });
    assert.equal(g.toolCalls.length, 1);
    assert.equal(g.toolCalls[0].toolName, 'get_weather');
    checkWeatherArgs(g.toolCalls[0].input);
    assert.equal(g.finishReason, 'tool-calls');
  });
}
