// Lint: typescript-eslint's recommended rules (without type information: fast on a 2-core machine).
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';
// Last in the list: turns off the stylistic rules Prettier owns, so the two never disagree.
import eslintConfigPrettier from 'eslint-config-prettier/flat';

export default tseslint.config(
  { ignores: ['dist/**', '**/dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      // The proxy finds and refuses control characters on purpose (wire rules, log lines, card text).
      'no-control-regex': 'off',
      // `let x; const use = () => x; x = make(use)`: a closure that reads x before it is set.
      // prom-client calls collect() with the metric as `this`: the Metrics that owns it is `metrics` there.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['metrics'] }],
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      // require() only for what loads on first use, so a start without that feature never loads it:
      // gRPC, OTLP tracing, Redis, TLS, YAML, JWS, node modules off the hot path, and undici's own files
      // (src/net/undici-pool.ts says why); everything else is an import.
      '@typescript-eslint/no-require-imports': [
        'error',
        {
          allow: ['^@a2a-js/sdk', '^@grpc/', '^@opentelemetry/', '^ioredis$', '^jose$', '^yaml$', '^undici', '^node:', '^\\./'],
        },
      ],
    },
  },
  {
    // Tests, benches and scripts read arbitrary JSON and load SDK versions through npm aliases.
    files: ['test/**', 'bench/**', 'scripts/**', 'packages/*/test/**'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-require-imports': 'off' },
  },
  eslintConfigPrettier,
);
