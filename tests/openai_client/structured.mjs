// Function calling and structured output through the openai npm client (imported by test.mjs):
// a forced tool call (plain and streamed) whose arguments parse and match the schema, and
// response_format json_schema content that parses and matches it. stories260K knows no JSON:
// only the grammar makes these pass.
import assert from 'node:assert/strict';

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', maxLength: 12 },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        days: { type: 'integer' },
      },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  },
};

function checkWeather(argsText) {
  const args = JSON.parse(argsText);
  assert.equal(typeof args.city, 'string');
  assert.ok(args.city.length <= 12);
  assert.ok(['celsius', 'fahrenheit'].includes(args.unit));
  if ('days' in args) assert.ok(Number.isInteger(args.days));
  for (const k of Object.keys(args)) assert.ok(['city', 'unit', 'days'].includes(k), k);
}

export async function run(client, check) {
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  await check('chat with tools and a forced tool call: arguments parse and match the schema', async () => {
    const r = await client.chat.completions.create({
      model: 'stories260K', messages, tools: [weather],
      tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 300, temperature: 0.7, seed: 5,
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.tool_calls.length, 1);
    const call = choice.message.tool_calls[0];
    assert.equal(call.type, 'function');
    assert.equal(call.function.name, 'get_weather');
    checkWeather(call.function.arguments);
  });

  await check('a streamed forced tool call arrives as delta.tool_calls', async () => {
    const stream = await client.chat.completions.create({
      model: 'stories260K', messages, tools: [weather], tool_choice: 'required', max_tokens: 300, temperature: 0, stream: true,
    });
    let args = '';
    let name = '';
    let finish = null;
    for await (const chunk of stream) {
      for (const tc of chunk.choices[0]?.delta?.tool_calls ?? []) {
        if (tc.function?.name) name = tc.function.name;
        args += tc.function?.arguments ?? '';
      }
      if (chunk.choices[0]?.finish_reason) finish = chunk.choices[0].finish_reason;
    }
    assert.equal(name, 'get_weather');
    assert.equal(finish, 'tool_calls');
    checkWeather(args);
  });

  await check('tool_choice "none" with tools answers with text', async () => {
    const r = await client.chat.completions.create({
      model: 'stories260K', messages, tools: [weather], tool_choice: 'none', max_tokens: 6, temperature: 0,
    });
    assert.equal(typeof r.choices[0].message.content, 'string');
    assert.equal(r.choices[0].message.tool_calls, undefined);
  });

  await check('response_format json_schema content parses and matches the schema', async () => {
    const r = await client.chat.completions.create({
      model: 'stories260K', messages: [{ role: 'user', content: 'Describe a cat.' }], max_tokens: 300, temperature: 0.5, seed: 9,
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'cat', strict: true,
          schema: {
            type: 'object',
            properties: { name: { type: 'string', maxLength: 10 }, age: { type: 'integer' }, indoor: { type: 'boolean' } },
            required: ['name', 'age', 'indoor'], additionalProperties: false,
          },
        },
      },
    });
    assert.equal(r.choices[0].finish_reason, 'stop');
    const v = JSON.parse(r.choices[0].message.content);
    assert.equal(typeof v.name, 'string');
    assert.ok(Number.isInteger(v.age));
    assert.equal(typeof v.indoor, 'boolean');
    assert.deepEqual(Object.keys(v).sort(), ['age', 'indoor', 'name']);
  });

  await check('a schema the grammar cannot express is a BadRequestError naming the construct', async () => {
    await assert.rejects(client.chat.completions.create({
      model: 'x', messages, max_tokens: 2,
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', pattern: '^a' } } },
    }), (e) => {
      assert.equal(e.status, 400);
      assert.match(e.message, /'pattern'/);
      return true;
    });
  });
}
