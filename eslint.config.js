'use strict';
// The JS linter (`npm run lint`): eslint's recommended correctness rules, and the few layout
// rules the code follows everywhere (brace spacing `{a, b}`, semicolons, single quotes).

const js = require('@eslint/js');
const stylistic = require('@stylistic/eslint-plugin');
const globals = require('globals');

module.exports = [
  {
    ignores: ['binding.js', 'target/**', 'node_modules/**', 'deps/**', 'npm/**', 'dist/**',
              '__test__/fixtures/**/*.min.js'],
  },
  js.configs.recommended,
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    languageOptions: {
      ecmaVersion: 2024,
      sourceType: 'commonjs',
      globals: {...globals.node},
    },
    plugins: {'@stylistic': stylistic},
    rules: {
      '@stylistic/object-curly-spacing': ['error', 'never'],
      '@stylistic/semi': ['error', 'always'],
      '@stylistic/quotes': ['error', 'single', {avoidEscape: true, allowTemplateLiterals: 'always'}],
      'no-unused-vars': ['error', {args: 'none', caughtErrors: 'none'}],
      'no-var': 'error',
      'prefer-const': ['error', {destructuring: 'all'}],
      'eqeqeq': ['error', 'smart'],
    },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: {sourceType: 'module'},
  },
];
