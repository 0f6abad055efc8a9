// Gzip and Brotli copies of the built scripts and styles (dist/assets/x.js.gz, x.js.br), made once
// at build time: whitenoise finds them next to the originals and serves them to browsers that
// accept them, so no response is compressed per request.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const assets = new URL('../dist/assets/', import.meta.url);
const COMPRESSIBLE = /\.(js|css|svg|json)$/;
const MIN_BYTES = 1024;

let before = 0;
let after = 0;
for (const name of readdirSync(assets)) {
  if (!COMPRESSIBLE.test(name)) continue;
  const raw = readFileSync(new URL(name, assets));
  if (raw.length < MIN_BYTES) continue;
  const brotli = brotliCompressSync(raw, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY } });
  writeFileSync(new URL(`${name}.gz`, assets), gzipSync(raw, { level: 9 }));
  writeFileSync(new URL(`${name}.br`, assets), brotli);
  before += raw.length;
  after += brotli.length;
}
console.log(`precompressed dist/assets: ${(before / 1024).toFixed(0)} KiB, ${(after / 1024).toFixed(0)} KiB with Brotli`);
