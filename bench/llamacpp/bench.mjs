// llama.cpp reference numbers like llama-bench's pp<N>/tg<N>, through node-llama-cpp's prebuilt
// CPU build (no download, no compile). For each repetition, starting from an empty context:
//   pp: one batch of P random tokens evaluated at once  -> P / seconds
//   tg: G single-token evaluations after each other       -> G / seconds
// Usage: node bench.mjs -m MODEL.gguf [-t THREADS] [-p 128] [-n 64] [-r 3] [--warmup 1]
// Prints one JSON object on stdout (per-run values, medians, peak RSS); logs go to stderr.
import { getLlama, LlamaLogLevel } from "node-llama-cpp";
import { readFileSync } from "node:fs";

function parseArgs(argv) {
  const o = { model: null, threads: 2, pp: 128, tg: 64, reps: 3, warmup: 1 };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i], v = () => argv[++i];
    if (a === "-m" || a === "--model") o.model = v();
    else if (a === "-t" || a === "--threads") o.threads = Number(v());
    else if (a === "-p") o.pp = Number(v());
    else if (a === "-n") o.tg = Number(v());
    else if (a === "-r") o.reps = Number(v());
    else if (a === "--warmup") o.warmup = Number(v());
    else throw new Error(`unknown argument '${a}' (usage: -m MODEL [-t N] [-p N] [-n N] [-r N] [--warmup N])`);
  }
  if (!o.model) throw new Error("missing -m MODEL.gguf");
  return o;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b), m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const peakRssMiB = () => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) / 1024 : null;
};

// Seeded token ids (xorshift) well inside the vocabulary, so runs are reproducible.
function randomTokens(n, nVocab, seed) {
  let s = BigInt(seed) * 0x9E3779B97F4A7C15n + 1n;
  const mask = (1n << 64n) - 1n, out = [];
  for (let i = 0; i < n; ++i) {
    s ^= (s << 13n) & mask; s ^= s >> 7n; s ^= (s << 17n) & mask;
    out.push(Number(s % BigInt(nVocab - 10)) + 5);
  }
  return out;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
                                 maxThreads: o.threads, logLevel: LlamaLogLevel.error, progressLogs: false });
  const t0 = performance.now();
  const model = await llama.loadModel({ modelPath: o.model, gpuLayers: 0, useMmap: true });
  const loadSeconds = (performance.now() - t0) / 1000;
  const context = await model.createContext({ contextSize: o.pp + o.tg + 16, batchSize: o.pp, sequences: 1,
                                              threads: o.threads });
  const seq = context.getSequence();
  const nVocab = model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length ?? 32000;

  const runPp = async (rep) => {
    await seq.clearHistory();
    const toks = randomTokens(o.pp, nVocab, rep + 1);
    const s = performance.now();
    await seq.evaluateWithoutGeneratingNewTokens(toks);
    return o.pp / ((performance.now() - s) / 1000);
  };
  const runTg = async (rep) => {
    await seq.clearHistory();
    const toks = randomTokens(o.tg, nVocab, 1000 + rep);
    const s = performance.now();
    for (const t of toks) await seq.evaluateWithoutGeneratingNewTokens([t]);
    return o.tg / ((performance.now() - s) / 1000);
  };
  // warm-up like engine-bench's: page in the weights and start the threads (8-token batch + 2 steps)
  for (let w = 0; w < o.warmup; ++w) {
    await seq.clearHistory();
    await seq.evaluateWithoutGeneratingNewTokens(randomTokens(8, nVocab, 7));
    for (const t of randomTokens(2, nVocab, 8)) await seq.evaluateWithoutGeneratingNewTokens([t]);
  }
  const pp = [], tg = [];
  for (let r = 0; r < o.reps; ++r) { pp.push(await runPp(r)); tg.push(await runTg(r)); }

  const result = {
    engine: "llama.cpp (node-llama-cpp 3.21.1 prebuilt CPU)",
    build: llama.buildType, llama_cpp_release: llama.llamaCppRelease?.release ?? null,
    model: o.model, model_size_bytes: model.size,
    threads: o.threads, load_seconds: loadSeconds,
    [`pp${o.pp}`]: { runs: pp, median: median(pp) },
    [`tg${o.tg}`]: { runs: tg, median: median(tg) },
    peak_rss_mib: peakRssMiB(),
  };
  console.log(JSON.stringify(result));
  await context.dispose(); await model.dispose(); await llama.dispose();
}

main().catch((e) => { console.error(`error: ${e.message}`); process.exit(1); });
