// ESLint (flat config): typescript-eslint's recommended rules on lib/ (with its type information),
// ESLint's recommended rules on the CommonJS JavaScript of test/, scripts/, fuzz/, bin/ and examples/.
// Formatting is Prettier's (.prettierrc.json, width 120): no stylistic rule here but max-len on
// lib/, which holds what Prettier cannot break (comments, strings) to the same width.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'prebuilds/**', 'node_modules/**', 'bench-results/**', 'deploy/**/*.json'] },
  {
    files: ['lib/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Unused arguments named with a leading underscore are deliberate (an interface's shape).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      'max-len': ['error', { code: 120, tabWidth: 2 }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    extends: [js.configs.recommended],
    languageOptions: { sourceType: 'commonjs', ecmaVersion: 2024, globals: { ...globals.node } },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Tests read terminal output and raw bytes: control characters in their patterns are what they check.
    files: ['test/**/*.js', 'fuzz/**/*.js'],
    rules: { 'no-control-regex': 'off' },
  },
  {
    files: ['**/*.mjs', 'eslint.config.mjs'],
    languageOptions: { sourceType: 'module' },
  },
);
