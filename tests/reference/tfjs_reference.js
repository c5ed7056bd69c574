// Runs a TF.js layers model with the original TensorFlow.js (pure JavaScript, CPU backend) on raw
// RGB frames, as UpscalerJS runs its RDN models: values 0-255 in, output clipped to 0-255. Writes
// the output divided by 255 (framemill's [0,1] range) as float32 NHWC. The reference the imported
// TorchScript module is compared with (tests/unit/tfjs_reference_test.cpp).
//
//   node tfjs_reference.js TFJS_DIR MODEL_JSON IN_RGB24 WIDTH HEIGHT FRAMES OUT_F32
//
// TFJS_DIR: where scripts/fetch-model-packages.sh installed @tensorflow/tfjs (its node_modules
// is inside). IN_RGB24: FRAMES frames of WIDTH x HEIGHT, 3 bytes a pixel.
'use strict';
const fs = require('fs');
const path = require('path');

async function main() {
  const [tfjsDir, modelJson, inPath, w, h, n, outPath] = process.argv.slice(2);
  if (!outPath) throw new Error('usage: tfjs_reference.js TFJS_DIR MODEL_JSON IN W H N OUT');
  const tf = require(path.join(tfjsDir, 'node_modules', '@tensorflow', 'tfjs'));
  await tf.setBackend('cpu');
  // The model from files (TF.js's own loaders want a URL or a browser).
  const handler = {
    load: async () => {
      const m = JSON.parse(fs.readFileSync(modelJson, 'utf8'));
      const specs = [];
      const shards = [];
      for (const group of m.weightsManifest) {
        specs.push(...group.weights);
        for (const p of group.paths) shards.push(fs.readFileSync(path.join(path.dirname(modelJson), p)));
      }
      const all = Buffer.concat(shards);
      return {
        modelTopology: m.modelTopology,
        weightSpecs: specs,
        weightData: all.buffer.slice(all.byteOffset, all.byteOffset + all.byteLength),
        format: m.format,
        generatedBy: m.generatedBy,
        convertedBy: m.convertedBy,
      };
    },
  };
  const model = await tf.loadLayersModel(handler);
  const rgb = fs.readFileSync(inPath);
  const dims = [Number(n), Number(h), Number(w), 3];
  if (rgb.length !== dims[0] * dims[1] * dims[2] * 3) throw new Error('input size mismatch');
  const input = tf.tensor4d(Float32Array.from(rgb), dims);
  const out = tf.tidy(() => model.predict(input).clipByValue(0, 255).div(255));
  const data = await out.data();
  fs.writeFileSync(outPath, Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  console.log(`tfjs_reference: ${modelJson}: output ${out.shape.join('x')}`);
}

main().catch((e) => {
  console.error(`tfjs_reference: ${e.stack || e}`);
  process.exit(1);
});
