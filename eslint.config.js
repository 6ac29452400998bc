// ESLint: typescript-eslint's recommended rules, and the formatting the code already
// follows (quotes, semicolons, trailing commas, blank lines) as @stylistic rules, which
// `npm run lint -- --fix` applies. Run by `npm test` (and CI) through `npm run lint`.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import stylistic from '@stylistic/eslint-plugin';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['dist/**', 'dist.*/**', 'bench/out/**', 'node_modules/**', 'tmp/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    plugins: { '@stylistic': stylistic },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false }],
      '@stylistic/quotes': ['error', 'single', { avoidEscape: true, allowTemplateLiterals: 'always' }],
      '@stylistic/semi': ['error', 'always'],
      '@stylistic/comma-dangle': ['error', 'always-multiline'],
      '@stylistic/no-trailing-spaces': 'error',
      '@stylistic/eol-last': 'error',
      '@stylistic/no-multiple-empty-lines': ['error', { max: 1, maxEOF: 0, maxBOF: 0 }],
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // terminal text, tokenizers and JSON checks match control characters on purpose
      'no-control-regex': 'off',
    },
  },
  {
    // Only src/engine.ts and the engine's own modules reach the data directory's databases:
    // the faces (the CLI and the HTTP server) go through Engine's methods.
    files: ['commands/**/*.{ts,tsx}', 'src/server/**/*.ts', 'bin/**/*.{mts,cjs,js,mjs}'],
    rules: {
      'no-restricted-syntax': ['error', { selector: "MemberExpression[property.name='store']", message: 'the CLI and the server do not touch engine.store: add an Engine method' }],
    },
  },
  {
    // the dashboard runs in the browser; InstantSearch's connectors and widgets hand it untyped state
    files: ['dashboard/**/*.ts'],
    languageOptions: { globals: { ...globals.browser } },
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    files: ['**/*.cjs', 'bin/fathom.js'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // lmdb-js types its databases' values as `any`; the store wraps them
    files: ['src/storage/store.ts', 'src/storage/diskfull.ts', 'src/analytics/pending.ts', 'test/**/*.{ts,tsx}', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off' },
  },
);
