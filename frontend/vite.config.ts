import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// The dev server proxies the API to a local `tifeeds serve` (make run).
const backend = process.env.TIFEEDS_BACKEND ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  server: {
    proxy: {
      '/graphql': { target: backend, ws: true },
      '/api': { target: backend },
    },
  },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false },
  test: { include: ['src/**/*.test.ts'], environment: 'node' },
});
