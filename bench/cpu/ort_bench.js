// ort_bench.js - ONNX Runtime (CPU execution provider, onnxruntime-node) latency of one model:
// random 1x3x224x224-style input from the model's first input shape, 2 warm-up runs, then the
// median of N runs. Prints: ort <threads> <median ms> <min ms>
// usage: node ort_bench.js model.onnx threads iterations
const ort = require('onnxruntime-node');

async function main() {
  const [model, threads, iters] = [process.argv[2], +process.argv[3], +process.argv[4]];
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all'});
  const name = session.inputNames[0];
  // onnxruntime-node exposes no input shapes before a run; our models take 1x3x224x224 unless
  // the caller overrides it.
  const shape = (process.env.NPUC_BENCH_SHAPE || '1,3,224,224').split(',').map(Number);
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(n);
  for (let i = 0; i < n; ++i) data[i] = Math.sin(i) ;
  const feeds = {[name]: new ort.Tensor('float32', data, shape)};
  for (let i = 0; i < 2; ++i) await session.run(feeds);
  const ms = [];
  for (let i = 0; i < iters; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  console.log(`ort ${threads} ${ms[Math.floor(ms.length / 2)].toFixed(3)} ${ms[0].toFixed(3)}`);
}
main().catch((e) => { console.error('ort_bench: ' + e); process.exit(1); });
