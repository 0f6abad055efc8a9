/// <reference types="vitest/config" />
import { defineConfig } from 'vite';

// One classic script, dist/skein-widget.js, served by Django at /widget.js. It defines
// window.SkeinWidget and, when loaded by a <script data-key=...> tag, mounts the widget.
export default defineConfig({
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2020',
    sourcemap: false,
    lib: {
      entry: 'src/embed.ts',
      name: 'SkeinWidget',
      formats: ['iife'],
      fileName: () => 'skein-widget.js',
    },
  },
  test: {
    environment: 'node',
    include: ['src/**/*.test.ts'],
  },
});
