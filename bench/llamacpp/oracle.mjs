// llama.cpp as a numerical oracle: evaluates the given prompt token ids with node-llama-cpp,
// then greedily generates N tokens, and prints one JSON line per step: the chosen token and the
// top 5 log-probabilities. Run it through bench/scripts/llama_oracle.sh, which points node at a
// copy of node-llama-cpp that holds only the AVX2 ("haswell") CPU variant (otherwise the best
// variant for the CPU is loaded, and an AVX-512 build differs from the AVX2 one in float order).
// Usage: node oracle.mjs MODEL.gguf N_STEPS ID,ID,...   (env ORACLE_THREADS, default 1)
// Note: the probabilities are node-llama-cpp's, over the candidates it keeps; on a large vocabulary
// they can sit ~1e-4 above a softmax over the whole vocabulary (the log-normaliser differs).
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const [modelPath, nSteps, idList] = process.argv.slice(2);
if (!modelPath || !nSteps || !idList) {
  console.error("usage: node oracle.mjs MODEL.gguf N_STEPS ID,ID,...");
  process.exit(2);
}
const threads = Number(process.env.ORACLE_THREADS || 1);
const llama = await getLlama({ gpu: false, build: "never", skipDownload: true, usePrebuiltBinaries: true,
                               maxThreads: threads, logLevel: LlamaLogLevel.error, progressLogs: false });
const model = await llama.loadModel({ modelPath, gpuLayers: 0 });
const ids = idList.split(",").map(Number);
const context = await model.createContext({ contextSize: ids.length + Number(nSteps) + 16, batchSize: 512,
                                            sequences: 1, threads });
const sequence = context.getSequence();
let step = 0;
for await (const r of sequence.evaluateWithMetadata(ids, { probabilities: true }, { temperature: 0 })) {
  const top = [...r.probabilities.entries()].slice(0, 5).map(([t, p]) => [t, Math.log(p)]);
  console.log(JSON.stringify({ token: r.token, top }));
  if (++step >= Number(nSteps)) break;
}
