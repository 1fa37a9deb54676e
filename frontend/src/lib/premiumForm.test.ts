import { describe, expect, test } from 'vitest';
import type { PremiumFeedKind } from '../gql/graphql';
import {
  creatableKinds,
  initialPremiumValues,
  labelOfKey,
  premiumCreateInput,
  premiumFormSpec,
  premiumUpdateInput,
  type PremiumFeed,
  type PremiumInputKey,
  type PremiumKindInfo,
} from './premiumForm';

// The six kinds as the server describes them (ingest/premium/kinds.go); the
// form must follow whatever ranges come here, so some are unusual on purpose.
const polling = { min: 1, max: 24 };
const kinds: Record<PremiumFeedKind, PremiumKindInfo> = {
  DARK_WEB_TAXII: kind('DARK_WEB_TAXII', {
    editableFields: ['COLLECTION_URL', 'USERNAME', 'PASSWORD', 'POLLING_FREQUENCY', 'BACKFILL_DAYS'],
    requiredToEnable: ['COLLECTION_URL', 'USERNAME', 'PASSWORD'],
    backfillDays: { min: 1, max: 30 },
    fixedRetentionDays: 90,
  }),
  THREAT_PLATFORM: kind('THREAT_PLATFORM', {
    editableFields: ['USERNAME', 'API_KEY', 'POLLING_FREQUENCY', 'BACKFILL_DAYS'],
    requiredToEnable: ['USERNAME', 'API_KEY'],
    backfillDays: { min: 1, max: 30 },
    fixedRetentionDays: 90,
  }),
  THREAT_INTEL_API: kind('THREAT_INTEL_API', {
    editableFields: ['API_KEY', 'POLLING_FREQUENCY', 'BACKFILL_DAYS', 'RETENTION_PERIOD'],
    requiredToEnable: ['API_KEY'],
    backfillDays: { min: 1, max: 30 },
    retentionPeriod: { min: 1, max: 360 },
  }),
  RISK_LIST: kind('RISK_LIST', {
    editableFields: ['API_KEY', 'POLLING_FREQUENCY'],
    requiredToEnable: ['API_KEY'],
    pollingFrequency: { min: 2, max: 12 }, // not the spec's: the form must not assume 1-24
    fixedRetentionDays: 14,
    available: false,
  }),
  FEED_LIST: kind('FEED_LIST', {
    editableFields: ['CATEGORY', 'NAME', 'API_ENDPOINT', 'POLLING_FREQUENCY', 'RETENTION_PERIOD'],
    requiredToEnable: ['API_ENDPOINT'],
    retentionPeriod: { min: 1, max: 360 },
    creatable: true,
    maxFeeds: 10,
    categories: ['Threat Intelligence'],
    namePrefix: 'FeedList_',
  }),
  ENDPOINT_PROTECTION: kind('ENDPOINT_PROTECTION', {
    editableFields: ['CLIENT_ID', 'CLIENT_SECRET', 'POLLING_FREQUENCY', 'BACKFILL_DAYS'],
    requiredToEnable: ['CLIENT_ID', 'CLIENT_SECRET'],
    backfillDays: { min: 1, max: 30 },
    fixedRetentionDays: 90,
  }),
};

function kind(k: PremiumFeedKind, over: Partial<PremiumKindInfo>): PremiumKindInfo {
  return {
    kind: k,
    title: `Title of ${k}`,
    description: `About ${k}`,
    editableFields: [],
    requiredToEnable: [],
    pollingFrequency: polling,
    backfillDays: null,
    retentionPeriod: null,
    fixedRetentionDays: null,
    creatable: false,
    maxFeeds: 1,
    categories: [],
    namePrefix: '',
    iocsPerPoll: 0,
    available: true,
    ...over,
  };
}

function feed(k: PremiumFeedKind, over: Partial<PremiumFeed> = {}): PremiumFeed {
  return {
    name: `Title of ${k}`,
    description: `About ${k}`,
    category: 'API',
    collectionUrl: '',
    username: '',
    hasPassword: false,
    pollingFrequency: 24,
    backfillDays: 7,
    retentionPeriod: 90,
    premiumKind: k,
    ...over,
  };
}

describe('premiumFormSpec: which inputs each kind shows', () => {
  const cases: Record<PremiumFeedKind, { inputs: string[]; readOnly: string[] }> = {
    DARK_WEB_TAXII: {
      inputs: ['collectionUrl:url', 'username:text', 'password:secret', 'pollingFrequency:number', 'backfillDays:number'],
      readOnly: ['name', 'retentionPeriod', 'description'],
    },
    THREAT_PLATFORM: {
      inputs: ['username:text', 'apiKey:secret', 'pollingFrequency:number', 'backfillDays:number'],
      readOnly: ['name', 'retentionPeriod', 'description'],
    },
    THREAT_INTEL_API: {
      inputs: ['apiKey:secret', 'pollingFrequency:number', 'backfillDays:number', 'retentionPeriod:number'],
      readOnly: ['name', 'description'],
    },
    RISK_LIST: { inputs: ['apiKey:secret', 'pollingFrequency:number'], readOnly: ['name', 'retentionPeriod', 'description'] },
    FEED_LIST: {
      inputs: ['category:select', 'name:text', 'apiEndpoint:url', 'pollingFrequency:number', 'retentionPeriod:number'],
      readOnly: ['description'],
    },
    ENDPOINT_PROTECTION: {
      inputs: ['clientId:text', 'clientSecret:secret', 'pollingFrequency:number', 'backfillDays:number'],
      readOnly: ['name', 'retentionPeriod', 'description'],
    },
  };
  for (const [k, want] of Object.entries(cases) as [PremiumFeedKind, (typeof cases)[PremiumFeedKind]][]) {
    test(k, () => {
      const spec = premiumFormSpec(kinds[k], feed(k));
      expect(spec.mode).toBe('edit');
      expect(spec.inputs.map((i) => `${i.key}:${i.type}`)).toEqual(want.inputs);
      expect(spec.readOnly.map((r) => r.key)).toEqual(want.readOnly);
    });
  }
});

describe('premiumFormSpec: ranges, hints and marks come from the kind', () => {
  test('number inputs take the server range and say it', () => {
    const spec = premiumFormSpec(kinds.RISK_LIST, feed('RISK_LIST'));
    const p = spec.inputs.find((i) => i.key === 'pollingFrequency')!;
    expect([p.min, p.max, p.hint]).toEqual([2, 12, '2 to 12 hours']);
    const ti = premiumFormSpec(kinds.THREAT_INTEL_API, feed('THREAT_INTEL_API'));
    expect(ti.inputs.find((i) => i.key === 'retentionPeriod')!.hint).toBe('1 to 360 days');
    expect(ti.inputs.find((i) => i.key === 'backfillDays')!.hint).toBe('1 to 30 days');
  });
  test('a fixed retention is shown read-only', () => {
    const r = premiumFormSpec(kinds.RISK_LIST, feed('RISK_LIST')).readOnly.find((x) => x.key === 'retentionPeriod')!;
    expect(r).toMatchObject({ value: '14', hint: 'Fixed at 14 days' });
  });
  test('required-to-enable fields are marked, others are not', () => {
    const spec = premiumFormSpec(kinds.THREAT_PLATFORM, feed('THREAT_PLATFORM'));
    expect(spec.inputs.filter((i) => i.requiredToEnable).map((i) => i.key)).toEqual(['username', 'apiKey']);
  });
  test('a stored secret says it is kept when left empty', () => {
    const set = premiumFormSpec(kinds.ENDPOINT_PROTECTION, feed('ENDPOINT_PROTECTION', { hasPassword: true }));
    expect(set.inputs.find((i) => i.key === 'clientSecret')).toMatchObject({ secretSet: true, hint: 'A secret is set; leave empty to keep it' });
    const unset = premiumFormSpec(kinds.ENDPOINT_PROTECTION, feed('ENDPOINT_PROTECTION'));
    expect(unset.inputs.find((i) => i.key === 'clientSecret')).toMatchObject({ secretSet: false, hint: undefined });
  });
  test('the feed-list name shows its prefix and the endpoint its shape', () => {
    const spec = premiumFormSpec(kinds.FEED_LIST);
    expect(spec.mode).toBe('create');
    expect(spec.inputs.find((i) => i.key === 'name')).toMatchObject({ prefix: 'FeedList_', hint: 'Stored as FeedList_<name>', required: true });
    expect(spec.inputs.find((i) => i.key === 'apiEndpoint')!.hint).toContain('<feed_collection_id>.json?key=<api_key>&v=2');
    expect(spec.inputs.find((i) => i.key === 'category')!.options).toEqual(['Threat Intelligence']);
  });
  test('creating shows only what createPremiumFeed takes', () => {
    const wider = kind('FEED_LIST', { ...kinds.FEED_LIST, editableFields: [...kinds.FEED_LIST.editableFields, 'USERNAME'] });
    expect(premiumFormSpec(wider).inputs.map((i) => i.key)).not.toContain('username');
    expect(premiumFormSpec(wider, feed('FEED_LIST')).inputs.map((i) => i.key)).toContain('username');
  });
  test('a backfill listed without a range is left out', () => {
    const odd = kind('THREAT_PLATFORM', { ...kinds.THREAT_PLATFORM, backfillDays: null });
    expect(premiumFormSpec(odd, feed('THREAT_PLATFORM')).inputs.map((i) => i.key)).not.toContain('backfillDays');
  });
});

describe('initialPremiumValues', () => {
  test('edit: settings from the feed, secrets empty, the name without its prefix', () => {
    const f = feed('FEED_LIST', {
      name: 'FeedList_emea',
      category: 'Threat Intelligence',
      collectionUrl: 'https://h/base/c1.json?v=2',
      hasPassword: true,
      pollingFrequency: 6,
      retentionPeriod: 30,
    });
    const spec = premiumFormSpec(kinds.FEED_LIST, f);
    expect(initialPremiumValues(spec, f)).toEqual({
      category: 'Threat Intelligence',
      name: 'emea',
      apiEndpoint: '',
      pollingFrequency: '6',
      retentionPeriod: '30',
    });
  });
  test('the client ID is the feed username', () => {
    const f = feed('ENDPOINT_PROTECTION', { username: 'client-1' });
    expect(initialPremiumValues(premiumFormSpec(kinds.ENDPOINT_PROTECTION, f), f)).toMatchObject({ clientId: 'client-1', clientSecret: '' });
  });
  test('create: the first category, the rest empty for the defaults', () => {
    expect(initialPremiumValues(premiumFormSpec(kinds.FEED_LIST))).toEqual({
      category: 'Threat Intelligence',
      name: '',
      apiEndpoint: '',
      pollingFrequency: '',
      retentionPeriod: '',
    });
  });
});

describe('premiumUpdateInput: only changed, allowed fields', () => {
  type Case = {
    kind: PremiumFeedKind;
    feed?: Partial<PremiumFeed>;
    edit: Partial<Record<PremiumInputKey, string>>;
    clear?: PremiumInputKey[];
    want: object;
    errors?: object;
  };
  const cases: Record<string, Case> = {
    'nothing changed sends nothing': { kind: 'THREAT_PLATFORM', edit: {}, want: {} },
    'risk list: API key and polling': { kind: 'RISK_LIST', edit: { apiKey: 'rk-1', pollingFrequency: '6' }, want: { apiKey: 'rk-1', pollingFrequency: 6 } },
    'out-of-range numbers go to the server': { kind: 'RISK_LIST', edit: { pollingFrequency: '48' }, want: { pollingFrequency: 48 } },
    'not a number stays here': { kind: 'RISK_LIST', edit: { pollingFrequency: '6.5' }, want: {}, errors: { pollingFrequency: 'must be a whole number' } },
    'an emptied number stays here': { kind: 'RISK_LIST', edit: { pollingFrequency: ' ' }, want: {}, errors: { pollingFrequency: 'enter a number' } },
    'endpoint protection: client ID and secret': {
      kind: 'ENDPOINT_PROTECTION',
      edit: { clientId: 'cid', clientSecret: 's3cret', backfillDays: '30' },
      want: { clientId: 'cid', clientSecret: 's3cret', backfillDays: 30 },
    },
    'dark web: URL trimmed, username, password': {
      kind: 'DARK_WEB_TAXII',
      edit: { collectionUrl: ' https://taxii.example/api1/collections/c1/ ', username: 'u', password: 'p' },
      want: { collectionUrl: 'https://taxii.example/api1/collections/c1/', username: 'u', password: 'p' },
    },
    'removing a stored secret sends an empty string': {
      kind: 'THREAT_INTEL_API',
      feed: { hasPassword: true },
      edit: {},
      clear: ['apiKey'],
      want: { apiKey: '' },
    },
    'a typed secret wins over removal': {
      kind: 'THREAT_INTEL_API',
      feed: { hasPassword: true },
      edit: { apiKey: 'new' },
      clear: ['apiKey'],
      want: { apiKey: 'new' },
    },
    'removal without a stored secret sends nothing': { kind: 'THREAT_INTEL_API', edit: {}, clear: ['apiKey'], want: {} },
    'feed list: name, category and a new endpoint': {
      kind: 'FEED_LIST',
      feed: { name: 'FeedList_emea', category: 'Threat Intelligence', collectionUrl: 'https://h/b/c.json?v=2', hasPassword: true },
      edit: { name: 'apac', apiEndpoint: 'https://h/b/d.json?key=k&v=2 ' },
      want: { name: 'apac', apiEndpoint: 'https://h/b/d.json?key=k&v=2' },
    },
    'feed list: an empty endpoint keeps the stored one': {
      kind: 'FEED_LIST',
      feed: { name: 'FeedList_emea', hasPassword: true, collectionUrl: 'https://h/b/c.json?v=2' },
      edit: { retentionPeriod: '30' },
      want: { retentionPeriod: 30 },
    },
    'fields the kind does not list are never sent': {
      kind: 'RISK_LIST',
      edit: { username: 'x', retentionPeriod: '30', backfillDays: '3', name: 'n' },
      want: {},
    },
  };
  for (const [name, c] of Object.entries(cases)) {
    test(name, () => {
      const f = feed(c.kind, c.feed);
      const spec = premiumFormSpec(kinds[c.kind], f);
      const initial = initialPremiumValues(spec, f);
      const got = premiumUpdateInput(spec, initial, { ...initial, ...c.edit }, new Set(c.clear));
      expect(got.input).toEqual(c.want);
      expect(got.errors).toEqual(c.errors ?? {});
    });
  }
});

describe('premiumCreateInput', () => {
  const spec = premiumFormSpec(kinds.FEED_LIST);
  test('everything given', () => {
    const v = { category: 'Threat Intelligence', name: 'emea', apiEndpoint: ' https://h/b/c.json?key=k&v=2', pollingFrequency: '6', retentionPeriod: '30' };
    expect(premiumCreateInput(spec, v)).toEqual({
      input: { kind: 'FEED_LIST', name: 'emea', category: 'Threat Intelligence', apiEndpoint: 'https://h/b/c.json?key=k&v=2', pollingFrequency: 6, retentionPeriod: 30 },
      errors: {},
    });
  });
  test('empty numbers are left to the defaults', () => {
    const got = premiumCreateInput(spec, { ...initialPremiumValues(spec), name: 'x', apiEndpoint: 'https://h/b/c.json?key=k&v=2' });
    expect(got.input).toEqual({ kind: 'FEED_LIST', name: 'x', category: 'Threat Intelligence', apiEndpoint: 'https://h/b/c.json?key=k&v=2' });
  });
  test('a number that is not one stays here', () => {
    expect(premiumCreateInput(spec, { name: 'x', apiEndpoint: 'e', retentionPeriod: 'ten' }).errors).toEqual({ retentionPeriod: 'must be a whole number' });
  });
});

describe('creatableKinds', () => {
  const all = Object.values(kinds);
  test('counts the feeds of each creatable kind', () => {
    const feeds = [{ premiumKind: 'FEED_LIST' }, { premiumKind: 'RISK_LIST' }, { premiumKind: 'FEED_LIST' }, { premiumKind: null }] as const;
    expect(creatableKinds(all, feeds).map((c) => [c.kind.kind, c.count, c.full])).toEqual([['FEED_LIST', 2, false]]);
  });
  test('full at maxFeeds', () => {
    const feeds = Array.from({ length: 10 }, () => ({ premiumKind: 'FEED_LIST' as const }));
    expect(creatableKinds(all, feeds)[0].full).toBe(true);
  });
});

test('labelOfKey names input keys for messages', () => {
  expect(labelOfKey('apiKey')).toBe('API key');
  expect(labelOfKey('clientSecret')).toBe('Client secret');
  expect(labelOfKey('nope')).toBeUndefined();
});
