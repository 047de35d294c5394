// A minimal OpenAI-compatible /v1/completions server on llama.cpp, through node-llama-cpp's
// prebuilt CPU binaries: the reference for bench/serving_bench.sh. It is NOT llama-server (there
// is no llama-server binary on this machine); it mimics llama-server's slots: ONE context with
// --parallel sequences, and node-llama-cpp's batching puts the pending tokens of every sequence
// into one llama_decode per cycle ("nextCycle" dispatch), as llama-server's update_slots does.
//
//   node server.mjs -m MODEL.gguf [-t 2] [--host 127.0.0.1] [--port 8080] [--parallel 8]
//                   [-c 512 (context per sequence)] [-b 512 (batch)]
// Routes: POST /v1/completions (prompt: string or token-id array; max_tokens, temperature,
// top_k, top_p, min_p, seed, ignore_eos, stream, stream_options.include_usage), GET /v1/models,
// GET /health. A request waits for a free sequence; a client that disconnects frees its sequence.
// Prints "listening on http://HOST:PORT" when ready; SIGTERM/SIGINT exit.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import http from "node:http";

function parseArgs(argv) {
  const o = { model: null, threads: 2, host: "127.0.0.1", port: 8080, parallel: 8, ctx: 512, batch: 512 };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i], v = () => argv[++i];
    if (a === "-m" || a === "--model") o.model = v();
    else if (a === "-t" || a === "--threads") o.threads = Number(v());
    else if (a === "--host") o.host = v();
    else if (a === "--port") o.port = Number(v());
    else if (a === "--parallel" || a === "-np") o.parallel = Number(v());
    else if (a === "-c" || a === "--ctx") o.ctx = Number(v());
    else if (a === "-b" || a === "--batch") o.batch = Number(v());
    else throw new Error(`unknown argument '${a}' (usage: -m MODEL [-t N] [--host H] [--port P] [--parallel N] [-c N] [-b N])`);
  }
  if (!o.model) throw new Error("missing -m MODEL.gguf");
  return o;
}

class HttpError extends Error {
  constructor(status, message, param = null) { super(message); this.status = status; this.param = param; }
}

// The sequences of the one context, handed out first come first served.
class SlotPool {
  constructor(sequences) { this.free = [...sequences]; this.waiting = []; this.active = 0; }
  async acquire() {
    if (this.free.length === 0) await new Promise((resolve) => this.waiting.push(resolve));
    ++this.active;
    return this.free.pop();
  }
  release(seq) {
    --this.active;
    this.free.push(seq);
    const next = this.waiting.shift();
    if (next) next();
  }
}

const num = (body, key, dflt, lo, hi) => {
  const v = body[key];
  if (v === undefined || v === null) return dflt;
  if (typeof v !== "number" || !Number.isFinite(v) || v < lo || v > hi)
    throw new HttpError(400, `'${key}' must be a number in [${lo}, ${hi}]`, key);
  return v;
};

function parseRequest(body, model) {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw new HttpError(400, "the body must be a JSON object", "body");
  let prompt = body.prompt;
  if (Array.isArray(prompt) && prompt.length === 1 && (typeof prompt[0] === "string" || Array.isArray(prompt[0]))) prompt = prompt[0];
  let tokens;
  if (typeof prompt === "string") {
    tokens = model.tokenize(prompt, true);
    if (model.tokens.shouldPrependBosToken && model.tokens.bos != null) tokens = [model.tokens.bos, ...tokens];
  } else if (Array.isArray(prompt) && prompt.every((t) => Number.isInteger(t))) {
    tokens = prompt;
  } else {
    throw new HttpError(400, "'prompt' must be a string or an array of token ids", "prompt");
  }
  if (tokens.length === 0) throw new HttpError(400, "the prompt is empty", "prompt");
  const seed = body.seed ?? null;
  if (seed !== null && !Number.isInteger(seed)) throw new HttpError(400, "'seed' must be an integer", "seed");
  return {
    tokens,
    maxTokens: num(body, "max_tokens", 16, -1, 1e9),
    temperature: num(body, "temperature", 0.8, 0, 2),
    topK: num(body, "top_k", 40, 0, 1e9),
    topP: num(body, "top_p", 0.95, 0, 1),
    minP: num(body, "min_p", 0.05, 0, 1),
    seed: seed === null ? undefined : (seed >>> 0),
    ignoreEos: body.ignore_eos === true,
    stream: body.stream === true,
    includeUsage: body.stream_options?.include_usage === true,
  };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
                                 maxThreads: o.threads, logLevel: LlamaLogLevel.error, progressLogs: false });
  const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
  const context = await model.createContext({ contextSize: o.ctx, sequences: o.parallel, batchSize: o.batch,
                                              threads: o.threads });
  const sequences = [];
  for (let i = 0; i < o.parallel; ++i) sequences.push(context.getSequence());
  const slots = new SlotPool(sequences);
  const modelId = o.model.replace(/^.*\//, "").replace(/\.gguf$/, "");
  let nextId = 1;

  const sendJson = (res, status, obj) => {
    const s = JSON.stringify(obj);
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(s) });
    res.end(s);
  };
  const sendError = (res, e) => {
    const status = e instanceof HttpError ? e.status : 500;
    if (res.headersSent) { res.destroy(); return; }
    sendJson(res, status, { error: { message: e.message, type: status === 500 ? "server_error" : "invalid_request_error",
                                     param: e.param ?? null, code: status } });
  };

  async function complete(req, res, r) {
    let gone = false;
    res.on("close", () => { if (!res.writableFinished) gone = true; });
    const id = `cmpl-${nextId++}`, created = Math.floor(Date.now() / 1000);
    const chunk = (text, finish) => ({ id, object: "text_completion", created, model: modelId,
                                       choices: [{ index: 0, text, logprobs: null, finish_reason: finish }] });
    const seq = await slots.acquire();
    try {
      if (r.tokens.length + 1 > seq.contextSize)
        throw new HttpError(400, `the prompt has ${r.tokens.length} tokens but the context holds ${seq.contextSize}`, "prompt");
      await seq.clearHistory();
      if (r.stream) res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
      const generated = [];
      let sentText = "", finish = "length";
      const limit = r.maxTokens < 0 ? seq.contextSize - r.tokens.length : Math.min(r.maxTokens, seq.contextSize - r.tokens.length);
      if (limit > 0) {
        const it = seq.evaluate(r.tokens, { temperature: r.temperature, topK: r.topK, topP: r.topP, minP: r.minP,
                                            seed: r.seed, yieldEogToken: r.ignoreEos });
        for await (const token of it) {
          if (gone) break;
          generated.push(token);
          const eog = model.isEogToken(token);
          if (!eog) {
            // text of all generated tokens so far; an incomplete UTF-8 character waits
            const text = model.detokenize(generated.filter((t) => !model.isEogToken(t)), false);
            if (!text.endsWith("\uFFFD") && text.length > sentText.length && text.startsWith(sentText)) {
              const delta = text.slice(sentText.length);
              sentText = text;
              if (r.stream) res.write(`data: ${JSON.stringify(chunk(delta, null))}\n\n`);
            }
          }
          if (generated.length >= limit) break;
        }
        // the iterator ends without a token when the model generated an end-of-generation token
        if (!gone && generated.length < limit) finish = "stop";
      }
      if (gone) return;
      const usage = { prompt_tokens: r.tokens.length, completion_tokens: generated.length,
                      total_tokens: r.tokens.length + generated.length };
      if (r.stream) {
        let out = `data: ${JSON.stringify(chunk("", finish))}\n\n`;
        if (r.includeUsage) out += `data: ${JSON.stringify({ id, object: "text_completion", created, model: modelId, choices: [], usage })}\n\n`;
        res.end(out + "data: [DONE]\n\n");
      } else {
        const body = chunk(sentText, finish);
        body.usage = usage;
        sendJson(res, 200, body);
      }
    } finally {
      slots.release(seq);
    }
  }

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      try {
        if (req.method === "GET" && req.url === "/health") return sendJson(res, 200, { status: "ok", slots: o.parallel, slots_active: slots.active });
        if (req.method === "GET" && req.url === "/v1/models")
          return sendJson(res, 200, { object: "list", data: [{ id: modelId, object: "model", created: 0, owned_by: "llama.cpp (node-llama-cpp)" }] });
        if (req.method !== "POST" || req.url !== "/v1/completions") throw new HttpError(404, `no route for ${req.method} ${req.url}`);
        let body;
        try { body = JSON.parse(Buffer.concat(chunks).toString("utf8")); }
        catch (e) { throw new HttpError(400, `the body is not JSON: ${e.message}`, "body"); }
        await complete(req, res, parseRequest(body, model));
      } catch (e) {
        sendError(res, e);
      }
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise((resolve, reject) => { server.once("error", reject); server.listen(o.port, o.host, resolve); });
  console.log(`listening on http://${o.host}:${server.address().port}`);
  // Exit at once: disposing the context would wait for generations still in flight.
  const stop = () => {
    server.close();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

main().catch((e) => { console.error(`error: ${e.message}`); process.exit(1); });
