import type { CodegenConfig } from '@graphql-codegen/cli';

// Types come from the repository's schema files (one per noun), offline: the
// schema is the single source of truth for the server and the dashboard alike.
const config: CodegenConfig = {
  schema: '../schema/*.graphqls',
  documents: ['src/**/*.{ts,tsx}', '!src/gql/**/*', '!src/**/*.test.ts'],
  ignoreNoDocuments: true,
  generates: {
    './src/gql/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        documentMode: 'string',
        enumsAsTypes: true,
        useTypeImports: true,
        scalars: { Time: 'string', Map: 'Record<string, unknown>' },
      },
    },
  },
  silent: true,
};

export default config;
