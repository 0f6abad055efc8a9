// Prints the built widget's size, raw and gzipped.
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const file = new URL('../dist/skein-widget.js', import.meta.url);
const raw = readFileSync(file);
console.log(`dist/skein-widget.js: ${(raw.length / 1024).toFixed(1)} KiB, ${(gzipSync(raw, { level: 9 }).length / 1024).toFixed(1)} KiB gzipped`);
