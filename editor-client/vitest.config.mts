import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    alias: {
      // The real `vscode` module exists only inside the editor; unit tests use a small stand-in.
      vscode: fileURLToPath(new URL('./test/unit/vscode.mock.ts', import.meta.url)),
    },
  },
  test: {
    include: ['test/unit/**/*.test.ts'],
    environment: 'node',
    pool: 'threads',
  },
});
