import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const apiUrl = process.env.DASHBOARD_API_URL ?? 'http://localhost:3000';

export default defineConfig({
  resolve: {
    // Here the client package is built from its source, as the tests use it; a dashboard of your
    // own installs @device-cloud/client and needs no alias.
    alias: { '@device-cloud/client': fileURLToPath(new URL('../../clients/typescript/src/index.ts', import.meta.url)) },
  },
  server: {
    proxy: {
      '/api': {
        target: apiUrl,
        changeOrigin: true,
        configure: (proxy) => {
          // The proxy sends the headers with the first chunk of the body, and an event stream may
          // stay silent until its first heartbeat: send them at once so EventSource opens at once.
          proxy.on('proxyRes', (upstream, _request, response) => {
            if (upstream.headers['content-type']?.startsWith('text/event-stream')) queueMicrotask(() => response.flushHeaders());
          });
        },
      },
    },
  },
  // Relative asset paths: the built files work from any directory of any static host.
  base: './',
  build: { target: 'es2023' },
});
