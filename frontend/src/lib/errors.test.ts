import { describe, expect, test } from 'vitest';
import { errorMessage, fieldErrors, formError, isUnauthenticated, isUnavailable, labelledErrorMessage, normaliseField } from './errors';
import { ApiError, httpError } from './graphql';

const badInput = new ApiError('x', 200, [
  { message: 'name is required', extensions: { code: 'BAD_USER_INPUT', field: 'name' } },
  { message: 'backfill days must be at most 30', extensions: { code: 'BAD_USER_INPUT', field: 'input.backfillDays' } },
  { message: 'too many custom feeds', extensions: { code: 'CONFLICT' } },
]);

describe('fieldErrors', () => {
  const cases: Record<string, { err: unknown; want: Record<string, string> }> = {
    'keyed by last path segment': {
      err: badInput,
      want: { name: 'name is required', backfillDays: 'backfill days must be at most 30' },
    },
    'messages for one field are joined': {
      err: new ApiError('x', 200, [
        { message: 'too short', extensions: { code: 'BAD_USER_INPUT', field: 'name' } },
        { message: 'bad characters', extensions: { code: 'BAD_USER_INPUT', field: 'name' } },
      ]),
      want: { name: 'too short; bad characters' },
    },
    'REST field names become camelCase': {
      err: httpError(422, { error: { code: 'bad_user_input', message: 'bad url', field: 'sso_config.issuer_url' } }),
      want: { issuerUrl: 'bad url' },
    },
    'the server\'s "field: " prefix is dropped beside the field': {
      err: new ApiError('x', 200, [
        { message: 'pollingFrequency: must be between 1 and 24 hours', extensions: { code: 'BAD_USER_INPUT', field: 'pollingFrequency' } },
        { message: 'input.apiKey: must not be empty', extensions: { code: 'BAD_USER_INPUT', field: 'input.apiKey' } },
      ]),
      want: { pollingFrequency: 'must be between 1 and 24 hours', apiKey: 'must not be empty' },
    },
    'not an ApiError': { err: new Error('boom'), want: {} },
    'no error': { err: null, want: {} },
  };
  for (const [name, c] of Object.entries(cases)) {
    test(name, () => expect(fieldErrors(c.err)).toEqual(c.want));
  }
});

describe('formError', () => {
  test('shows only what no shown field carries', () => {
    expect(formError(badInput, ['name', 'backfillDays'])).toBe('too many custom feeds');
  });
  test('a field not on the form goes to the top', () => {
    expect(formError(badInput, ['name'])).toBe('backfill days must be at most 30; too many custom feeds');
  });
  test('nothing when every error is beside its field', () => {
    const err = new ApiError('x', 200, [{ message: 'name is required', extensions: { code: 'BAD_USER_INPUT', field: 'name' } }]);
    expect(formError(err, ['name'])).toBeNull();
  });
  test('network failures are shown', () => {
    expect(formError(new ApiError('cannot reach the server: refused', 0), ['name'])).toBe('cannot reach the server: refused');
  });
});

describe('errorMessage and codes', () => {
  test('HTTP 401 is UNAUTHENTICATED', () => {
    const err = httpError(401, { error: { code: 'unauthenticated', message: 'sign in' } });
    expect(err.code).toBe('UNAUTHENTICATED');
    expect(isUnauthenticated(err)).toBe(true);
    expect(errorMessage(err)).toBe('sign in');
  });
  test('a body without JSON still says what failed', () => {
    expect(errorMessage(httpError(502, null))).toBe('request failed with HTTP 502');
  });
  test('GraphQL codes win over the status', () => {
    const err = new ApiError('x', 200, [{ message: 'no such feed', extensions: { code: 'NOT_FOUND' } }]);
    expect(err.code).toBe('NOT_FOUND');
    expect(isUnauthenticated(err)).toBe(false);
  });
  test('duplicate messages are shown once', () => {
    const err = new ApiError('x', 200, [{ message: 'internal error' }, { message: 'internal error' }]);
    expect(errorMessage(err)).toBe('internal error');
  });
  test('a database outage says so, over GraphQL and REST alike', () => {
    const gql = new ApiError('x', 200, [{ message: 'the database is unavailable; try again later', extensions: { code: 'UNAVAILABLE' } }]);
    const rest = httpError(503, { error: { code: 'database_unavailable', message: 'the database is unavailable; try again later' } });
    for (const err of [gql, rest]) {
      expect(isUnavailable(err)).toBe(true);
      expect(errorMessage(err)).toMatch(/database is unavailable for now; retrying/);
    }
    expect(isUnavailable(new ApiError('x', 200, [{ message: 'internal error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }]))).toBe(false);
  });
  test('plain errors and values', () => {
    expect(errorMessage(new Error('boom'))).toBe('boom');
    expect(errorMessage('odd')).toBe('odd');
  });
});

describe('normaliseField', () => {
  const cases: Record<string, [string, string]> = {
    plain: ['name', 'name'],
    path: ['input.ssoConfig.issuerUrl', 'issuerUrl'],
    snake: ['contact_email', 'contactEmail'],
    'snake path': ['sso_config.idp_callback_type', 'idpCallbackType'],
    'enum style': ['API_KEY', 'apiKey'],
    'enum style path': ['input.CLIENT_SECRET', 'clientSecret'],
    'enum one word': ['PASSWORD', 'password'],
  };
  for (const [name, [input, want]] of Object.entries(cases)) {
    test(name, () => expect(normaliseField(input)).toBe(want));
  }
});

describe('labelledErrorMessage', () => {
  const label = (k: string) => ({ apiKey: 'API key' })[k];
  test('a field-bound message is led by its label', () => {
    const err = new ApiError('x', 200, [
      { message: 'apiKey: must be set before the feed can be enabled', extensions: { code: 'BAD_USER_INPUT', field: 'apiKey' } },
    ]);
    expect(labelledErrorMessage(err, label)).toBe('API key must be set before the feed can be enabled');
  });
  test('a field without a label leaves its message, a message without field stays as it is', () => {
    const err = new ApiError('x', 200, [
      { message: 'enabled: Risk Lists feeds cannot be fetched', extensions: { code: 'BAD_USER_INPUT', field: 'enabled' } },
      { message: 'not available in this build' },
    ]);
    expect(labelledErrorMessage(err, label)).toBe('Risk Lists feeds cannot be fetched; not available in this build');
  });
  test('other errors as errorMessage says them', () => {
    expect(labelledErrorMessage(new Error('boom'), label)).toBe('boom');
  });
});
