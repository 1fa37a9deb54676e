import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { CreateCustomFeedMutation, UpdateFeedMutation } from '../api';
import { Field, FormModal } from '../components/ui';
import { useToast } from '../components/toast';
import type { CustomFeedCategory, FeedRowFragment, FeedUpdateInput } from '../gql/graphql';
import { fieldErrors, formError } from '../lib/errors';
import { request } from '../lib/graphql';
import { useInvalidateFeeds } from './feedActions';
import { PremiumFeedForm } from './PremiumFeedForm';

interface Values {
  category: CustomFeedCategory;
  name: string;
  collectionUrl: string;
  username: string;
  password: string;
  pollingFrequency: string;
  retentionPeriod: string;
  backfillDays: string;
  description: string;
}

const shownFields = [
  'category',
  'name',
  'collectionUrl',
  'username',
  'password',
  'pollingFrequency',
  'retentionPeriod',
  'backfillDays',
  'description',
];

function initialValues(feed?: FeedRowFragment): Values {
  if (!feed) {
    return {
      category: 'TAXII',
      name: '',
      collectionUrl: '',
      username: '',
      password: '',
      pollingFrequency: '24',
      retentionPeriod: '30',
      backfillDays: '7',
      description: '',
    };
  }
  const category = (feed.category === 'TSV' ? 'TSV' : 'TAXII') as CustomFeedCategory;
  return {
    category,
    name: feed.name.replace(new RegExp(`^${feed.category}_`), ''),
    collectionUrl: feed.collectionUrl,
    username: feed.username,
    password: '',
    pollingFrequency: String(feed.pollingFrequency),
    retentionPeriod: String(feed.retentionPeriod),
    backfillDays: String(feed.backfillDays),
    description: feed.description,
  };
}

/**
 * customRanges are the server's ranges for custom feeds (store/feeds.go:
 * MaxCustomPollingHrs, MaxRetentionDays, MaxBackfillDays,
 * maxDescriptionLength), shown up front as the premium forms show theirs.
 */
const customRanges = { polling: [1, 168], retention: [1, 360], backfill: [0, 30], description: 2000 } as const;

const int = (s: string) => (s.trim() === '' ? undefined : Number(s));

type FormProps = { feed?: FeedRowFragment; onClose: () => void; onSaved?: (f: FeedRowFragment) => void };

/**
 * FeedForm creates a Custom feed or edits a Custom or Premium one. The server
 * validates; its messages are shown beside the fields they name. A premium
 * feed's form is built from its kind (PremiumFeedForm).
 */
export function FeedForm(props: FormProps) {
  if (props.feed?.type === 'PREMIUM') return <PremiumFeedForm {...props} feed={props.feed} />;
  return <CustomFeedForm {...props} />;
}

function CustomFeedForm(props: FormProps) {
  const { feed } = props;
  const editing = !!feed;
  const [v, setV] = useState<Values>(() => initialValues(feed));
  const [clearPassword, setClearPassword] = useState(false);
  const [allowRuleActions, setAllowRuleActions] = useState(!!feed?.allowRuleActions);
  const invalidate = useInvalidateFeeds();
  const toast = useToast();
  const set = (k: keyof Values) => (e: { target: { value: string } }) => setV((s) => ({ ...s, [k]: e.target.value }));

  const save = useMutation({
    mutationFn: async () => {
      if (!feed) {
        const r = await request(CreateCustomFeedMutation, {
          input: {
            category: v.category,
            name: v.name,
            collectionUrl: v.collectionUrl,
            username: v.username || undefined,
            password: v.password || undefined,
            pollingFrequency: int(v.pollingFrequency) as number,
            retentionPeriod: int(v.retentionPeriod) as number,
            backfillDays: v.category === 'TAXII' ? int(v.backfillDays) : undefined,
            description: v.description || undefined,
            allowRuleActions: v.category === 'TAXII' ? allowRuleActions : undefined,
          },
        });
        return r.createCustomFeed;
      }
      const input: FeedUpdateInput = {
        collectionUrl: v.collectionUrl,
        username: v.username,
        pollingFrequency: int(v.pollingFrequency),
        retentionPeriod: int(v.retentionPeriod),
      };
      if (v.password) input.password = v.password;
      else if (clearPassword) input.password = '';
      input.name = v.name;
      input.description = v.description;
      if (v.category === 'TAXII') {
        input.backfillDays = int(v.backfillDays);
        input.allowRuleActions = allowRuleActions;
      }
      const r = await request(UpdateFeedMutation, { id: feed.id, input });
      return r.updateFeed;
    },
    onSuccess: (f) => {
      toast.success(editing ? `${f.name} saved` : `${f.name} created`);
      invalidate();
      props.onSaved?.(f);
      props.onClose();
    },
  });

  const errs = fieldErrors(save.error);
  const topError = formError(save.error, shownFields);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const showBackfill = v.category === 'TAXII';
  const title = editing ? `Edit ${feed.name}` : 'Create custom feed';

  return (
    <FormModal title={title} onClose={props.onClose} form="feed-form" submitLabel={editing ? 'Save' : 'Create feed'} busy={save.isPending}>
      <form id="feed-form" className="form-grid" onSubmit={submit} noValidate>
        {topError && (
          <div className="error-box span-2" role="alert">
            {topError}
          </div>
        )}
        <fieldset className="span-2 segmented" disabled={editing}>
          <legend>Category{editing && ' (fixed after creation)'}</legend>
          {(['TAXII', 'TSV'] as const).map((c) => (
            <label key={c} className={v.category === c ? 'seg seg-on' : 'seg'}>
              <input
                type="radio"
                name="category"
                value={c}
                checked={v.category === c}
                onChange={() => setV((s) => ({ ...s, category: c }))}
              />
              {c}
            </label>
          ))}
          {errs.category && <small className="field-error">{errs.category}</small>}
        </fieldset>
        <Field label="Name" error={errs.name} hint={`Stored as ${v.category}_${v.name || 'name'}`}>
          {(id, d) => (
            <input id={id} aria-describedby={d} aria-invalid={!!errs.name} required value={v.name} onChange={set('name')} />
          )}
        </Field>
        <Field
          label="Collection URL"
          error={errs.collectionUrl}
          hint={v.category === 'TSV' ? 'URL of a TSV file' : 'TAXII 2.1: <api_root>/collections/<collection_id>/'}
        >
          {(id, d) => (
            <input id={id} aria-describedby={d} aria-invalid={!!errs.collectionUrl} type="url" required value={v.collectionUrl} onChange={set('collectionUrl')} />
          )}
        </Field>
        <Field label="Username" error={errs.username}>
          {(id, d) => <input id={id} aria-describedby={d} autoComplete="off" value={v.username} onChange={set('username')} />}
        </Field>
        <Field
          label="Password"
          error={errs.password}
          hint={feed?.hasPassword ? 'A secret is set; leave empty to keep it' : undefined}
        >
          {(id, d) => (
            <input id={id} aria-describedby={d} type="password" autoComplete="new-password" value={v.password} onChange={set('password')} />
          )}
        </Field>
        {feed?.hasPassword && (
          <label className="check span-2">
            <input type="checkbox" checked={clearPassword} onChange={(e) => setClearPassword(e.target.checked)} /> Remove the stored secret
          </label>
        )}
        <Field label="Polling frequency (hours)" error={errs.pollingFrequency} hint={`${customRanges.polling[0]} to ${customRanges.polling[1]} hours (a week)`}>
          {(id, d) => (
            <input id={id} aria-describedby={d} aria-invalid={!!errs.pollingFrequency} type="number" inputMode="numeric" min={customRanges.polling[0]} max={customRanges.polling[1]} required value={v.pollingFrequency} onChange={set('pollingFrequency')} />
          )}
        </Field>
        <Field label="Retention period (days)" error={errs.retentionPeriod} hint={`${customRanges.retention[0]} to ${customRanges.retention[1]} days after an IoC was last seen`}>
          {(id, d) => (
            <input id={id} aria-describedby={d} aria-invalid={!!errs.retentionPeriod} type="number" inputMode="numeric" min={customRanges.retention[0]} max={customRanges.retention[1]} required value={v.retentionPeriod} onChange={set('retentionPeriod')} />
          )}
        </Field>
        {showBackfill && (
          <Field label="Backfill days" error={errs.backfillDays} hint={`${customRanges.backfill[0]} to ${customRanges.backfill[1]} days of history fetched on the first run`}>
            {(id, d) => (
              <input id={id} aria-describedby={d} aria-invalid={!!errs.backfillDays} type="number" inputMode="numeric" min={customRanges.backfill[0]} max={customRanges.backfill[1]} value={v.backfillDays} onChange={set('backfillDays')} />
            )}
          </Field>
        )}
        {showBackfill && (
          <label className="check span-2">
            <input type="checkbox" checked={allowRuleActions} onChange={(e) => setAllowRuleActions(e.target.checked)} /> Keep the
            actions of its Suricata rules (pass, drop, reject) in the rules export; otherwise they are exported as alert
          </label>
        )}
        <div className="span-2">
          <Field label="Description" error={errs.description} hint={`Up to ${customRanges.description.toLocaleString('en-US')} characters`}>
            {(id, d) => (
              <textarea id={id} aria-describedby={d} rows={3} value={v.description} onChange={set('description')} />
            )}
          </Field>
        </div>
      </form>
    </FormModal>
  );
}
