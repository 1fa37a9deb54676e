// Premium feed forms, built from the server's premiumFeedKinds: which inputs a
// kind shows, their ranges and hints, and what an update or create sends.
// Nothing here knows a range or a kind's fields of its own: the server's
// PremiumFeedKindInfo is the one source of truth.
import type {
  FeedRowFragment,
  FeedUpdateInput,
  PremiumFeedField,
  PremiumFeedInput,
  PremiumFeedKindsQuery,
} from '../gql/graphql';
import type { FieldErrors } from './errors';

/** PremiumKindInfo is one entry of premiumFeedKinds. */
export type PremiumKindInfo = PremiumFeedKindsQuery['premiumFeedKinds'][number];

/** PremiumFeed is what the forms read of a premium feed. */
export type PremiumFeed = Pick<
  FeedRowFragment,
  | 'name'
  | 'description'
  | 'category'
  | 'collectionUrl'
  | 'username'
  | 'hasPassword'
  | 'pollingFrequency'
  | 'backfillDays'
  | 'retentionPeriod'
  | 'premiumKind'
>;

/** PremiumInputKey is the FeedUpdateInput (and form value) key of a premium setting. */
export type PremiumInputKey = Extract<
  keyof FeedUpdateInput,
  | 'name'
  | 'category'
  | 'collectionUrl'
  | 'username'
  | 'password'
  | 'apiKey'
  | 'clientId'
  | 'clientSecret'
  | 'apiEndpoint'
  | 'pollingFrequency'
  | 'backfillDays'
  | 'retentionPeriod'
>;

/** premiumFieldKey maps the schema's PremiumFeedField to the input field that sets it. */
export const premiumFieldKey: Record<PremiumFeedField, PremiumInputKey> = {
  NAME: 'name',
  CATEGORY: 'category',
  COLLECTION_URL: 'collectionUrl',
  USERNAME: 'username',
  PASSWORD: 'password',
  API_KEY: 'apiKey',
  CLIENT_ID: 'clientId',
  CLIENT_SECRET: 'clientSecret',
  API_ENDPOINT: 'apiEndpoint',
  POLLING_FREQUENCY: 'pollingFrequency',
  BACKFILL_DAYS: 'backfillDays',
  RETENTION_PERIOD: 'retentionPeriod',
};

/** premiumFieldLabel is the form label of each setting. */
export const premiumFieldLabel: Record<PremiumFeedField, string> = {
  NAME: 'Name',
  CATEGORY: 'Category',
  COLLECTION_URL: 'Collection URL',
  USERNAME: 'Username',
  PASSWORD: 'Password',
  API_KEY: 'API key',
  CLIENT_ID: 'Client ID',
  CLIENT_SECRET: 'Client secret',
  API_ENDPOINT: 'API endpoint',
  POLLING_FREQUENCY: 'Polling frequency (hours)',
  BACKFILL_DAYS: 'Backfill days',
  RETENTION_PERIOD: 'Retention period (days)',
};

/** labelOfKey is the label of an input key, for messages that name a field. */
export function labelOfKey(key: string): string | undefined {
  const f = (Object.keys(premiumFieldKey) as PremiumFeedField[]).find((k) => premiumFieldKey[k] === key);
  return f ? premiumFieldLabel[f] : undefined;
}

/** The fields createPremiumFeed takes; a creatable kind's other settings wait for an edit. */
const createFields: readonly PremiumFeedField[] = ['NAME', 'CATEGORY', 'API_ENDPOINT', 'POLLING_FREQUENCY', 'RETENTION_PERIOD'];

export type PremiumInputType = 'text' | 'url' | 'secret' | 'number' | 'select';

/** PremiumInput describes one input of a premium form. */
export interface PremiumInput {
  field: PremiumFeedField;
  key: PremiumInputKey;
  label: string;
  type: PremiumInputType;
  min?: number;
  max?: number;
  hint?: string;
  options?: string[];
  /** prefix is put before a name when it is stored. */
  prefix?: string;
  /** required: the form cannot be sent without it (create). */
  required: boolean;
  /** requiredToEnable: the feed cannot be enabled until it is set. */
  requiredToEnable: boolean;
  /** secretSet: a secret is stored and an empty input keeps it. */
  secretSet?: boolean;
}

/** ReadOnlyFact is a setting shown but not changeable on this kind. */
export interface ReadOnlyFact {
  key: 'name' | 'description' | 'retentionPeriod';
  label: string;
  value: string;
  hint?: string;
}

/** PremiumFormSpec is everything a premium form shows. */
export interface PremiumFormSpec {
  kind: PremiumKindInfo;
  mode: 'edit' | 'create';
  inputs: PremiumInput[];
  readOnly: ReadOnlyFact[];
}

function rangeHint(r: { min: number; max: number }, unit: string): string {
  return `${r.min} to ${r.max} ${unit}`;
}

/**
 * premiumFormSpec lists the inputs of a kind's form, in the server's order:
 * editing shows the kind's editable fields, creating those of them that
 * createPremiumFeed takes. Name and Description are read-only facts unless
 * the kind lets the name be edited; a fixed retention is a fact too.
 */
export function premiumFormSpec(kind: PremiumKindInfo, feed?: PremiumFeed): PremiumFormSpec {
  const mode = feed ? 'edit' : 'create';
  const fields = kind.editableFields.filter((f) => mode === 'edit' || createFields.includes(f));
  const inputs: PremiumInput[] = [];
  for (const field of fields) {
    const base = {
      field,
      key: premiumFieldKey[field],
      label: premiumFieldLabel[field],
      requiredToEnable: kind.requiredToEnable.includes(field),
      required: mode === 'create' && (field === 'NAME' || field === 'API_ENDPOINT'),
    };
    switch (field) {
      case 'POLLING_FREQUENCY': {
        const r = kind.pollingFrequency;
        inputs.push({ ...base, type: 'number', min: r.min, max: r.max, hint: rangeHint(r, 'hours') + (mode === 'create' ? '; empty for the default' : '') });
        break;
      }
      case 'BACKFILL_DAYS': {
        const r = kind.backfillDays;
        if (!r) break; // listed without a range: the server has no backfill for it after all
        inputs.push({ ...base, type: 'number', min: r.min, max: r.max, hint: rangeHint(r, 'days') });
        break;
      }
      case 'RETENTION_PERIOD': {
        const r = kind.retentionPeriod;
        if (!r) break;
        inputs.push({ ...base, type: 'number', min: r.min, max: r.max, hint: rangeHint(r, 'days') + (mode === 'create' ? '; empty for the default' : '') });
        break;
      }
      case 'PASSWORD':
      case 'API_KEY':
      case 'CLIENT_SECRET': {
        const set = !!feed?.hasPassword;
        inputs.push({ ...base, type: 'secret', secretSet: set, hint: set ? 'A secret is set; leave empty to keep it' : undefined });
        break;
      }
      case 'API_ENDPOINT': {
        // The feed shows its endpoint without the key, so the input starts empty.
        const shape = 'https://host/base/<feed_collection_id>.json?key=<api_key>&v=2';
        const set = !!feed?.hasPassword && !!feed.collectionUrl;
        inputs.push({
          ...base,
          type: 'url',
          secretSet: set,
          hint: set ? `Now ${feed!.collectionUrl} (key hidden); leave empty to keep it` : shape,
        });
        break;
      }
      case 'CATEGORY':
        inputs.push({ ...base, type: 'select', options: [...kind.categories] });
        break;
      case 'NAME':
        inputs.push({ ...base, type: 'text', prefix: kind.namePrefix, hint: `Stored as ${kind.namePrefix}<name>` });
        break;
      case 'COLLECTION_URL':
        inputs.push({ ...base, type: 'url', hint: 'TAXII 2.1: <api_root>/collections/<collection_id>/' });
        break;
      default:
        inputs.push({ ...base, type: 'text' });
    }
  }

  const readOnly: ReadOnlyFact[] = [];
  if (!fields.includes('NAME')) {
    readOnly.push({ key: 'name', label: 'Name', value: feed?.name ?? kind.title, hint: 'Read-only for this premium feed' });
  }
  if (!inputs.some((i) => i.field === 'RETENTION_PERIOD')) {
    if (kind.fixedRetentionDays != null) {
      readOnly.push({ key: 'retentionPeriod', label: 'Retention period (days)', value: String(kind.fixedRetentionDays), hint: `Fixed at ${kind.fixedRetentionDays} days` });
    } else if (feed) {
      readOnly.push({ key: 'retentionPeriod', label: 'Retention period (days)', value: String(feed.retentionPeriod), hint: 'Not settable for this kind' });
    }
  }
  readOnly.push({
    key: 'description',
    label: 'Description',
    value: feed ? feed.description || kind.description : kind.description,
    hint: 'Read-only for premium feeds',
  });
  return { kind, mode, inputs, readOnly };
}

/** PremiumValues holds the form's text of each input. */
export type PremiumValues = Partial<Record<PremiumInputKey, string>>;

/** initialPremiumValues fills a form from the feed (edit) or leaves it to the defaults (create). */
export function initialPremiumValues(spec: PremiumFormSpec, feed?: PremiumFeed): PremiumValues {
  const v: PremiumValues = {};
  for (const i of spec.inputs) {
    switch (i.key) {
      case 'name':
        v.name = feed ? stripPrefix(feed.name, i.prefix ?? '') : '';
        break;
      case 'category':
        v.category = feed && i.options?.includes(feed.category) ? feed.category : (i.options?.[0] ?? '');
        break;
      case 'collectionUrl':
        v.collectionUrl = feed?.collectionUrl ?? '';
        break;
      case 'username':
      case 'clientId':
        // Both live in the feed's username.
        v[i.key] = feed?.username ?? '';
        break;
      case 'pollingFrequency':
      case 'backfillDays':
      case 'retentionPeriod':
        v[i.key] = feed ? String(feed[i.key]) : '';
        break;
      default:
        v[i.key] = ''; // secrets and the endpoint carrying one start empty
    }
  }
  return v;
}

function stripPrefix(name: string, prefix: string): string {
  return prefix && name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/** parseWhole reads a whole number typed into a number input. */
function parseWhole(s: string): number | string {
  const t = s.trim();
  if (t === '') return 'enter a number';
  if (!/^-?\d+$/.test(t)) return 'must be a whole number';
  return Number(t);
}

/**
 * premiumUpdateInput is the FeedUpdateInput of an edit: only the kind's
 * editable fields, only those changed; a secret is sent when typed, or as ""
 * when its removal is asked. Ranges are the server's to check (its message
 * is shown beside the field); only text that is not a number stops here.
 */
export function premiumUpdateInput(
  spec: PremiumFormSpec,
  initial: PremiumValues,
  values: PremiumValues,
  clear: ReadonlySet<PremiumInputKey> = new Set(),
): { input: FeedUpdateInput; errors: FieldErrors } {
  // Keyed by the kind's own fields: strings for text and secrets, numbers for ranges.
  const input: Record<string, string | number> = {};
  const errors: FieldErrors = {};
  for (const i of spec.inputs) {
    const now = values[i.key] ?? '';
    const was = initial[i.key] ?? '';
    if (i.type === 'secret') {
      if (now !== '') input[i.key] = now;
      else if (clear.has(i.key) && i.secretSet) input[i.key] = '';
      continue;
    }
    if (i.key === 'apiEndpoint') {
      if (now.trim() !== '') input.apiEndpoint = now.trim();
      continue;
    }
    if (now === was) continue;
    if (i.type === 'number') {
      const n = parseWhole(now);
      if (typeof n === 'string') errors[i.key] = n;
      else input[i.key] = n;
      continue;
    }
    input[i.key] = i.type === 'url' ? now.trim() : now;
  }
  return { input: input as FeedUpdateInput, errors };
}

/**
 * premiumCreateInput is the PremiumFeedInput of a create: empty numbers are
 * left to the kind's defaults.
 */
export function premiumCreateInput(spec: PremiumFormSpec, values: PremiumValues): { input: PremiumFeedInput; errors: FieldErrors } {
  const errors: FieldErrors = {};
  const input: PremiumFeedInput = { kind: spec.kind.kind, name: values.name ?? '', apiEndpoint: (values.apiEndpoint ?? '').trim() };
  for (const i of spec.inputs) {
    const v = values[i.key] ?? '';
    if (i.key === 'category' && v !== '') input.category = v;
    if ((i.key === 'pollingFrequency' || i.key === 'retentionPeriod') && v.trim() !== '') {
      const n = parseWhole(v);
      if (typeof n === 'string') errors[i.key] = n;
      else input[i.key] = n;
    }
  }
  return { input, errors };
}

/** creatableKinds lists the kinds a user may create, with how many feeds each has and whether it is full. */
export function creatableKinds(
  kinds: readonly PremiumKindInfo[],
  feeds: readonly Pick<FeedRowFragment, 'premiumKind'>[],
): { kind: PremiumKindInfo; count: number; full: boolean }[] {
  return kinds
    .filter((k) => k.creatable)
    .map((k) => {
      const count = feeds.filter((f) => f.premiumKind === k.kind).length;
      return { kind: k, count, full: k.maxFeeds > 0 && count >= k.maxFeeds };
    });
}
