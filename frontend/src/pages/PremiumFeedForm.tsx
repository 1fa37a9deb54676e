import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent, type ReactNode } from 'react';
import { CreatePremiumFeedMutation, PremiumFeedCountsQuery, PremiumFeedKindsQuery, UpdateFeedMutation } from '../api';
import { ErrorBox, Field, FormModal, Spinner } from '../components/ui';
import { useToast } from '../components/toast';
import type { FeedRowFragment, FeedUpdateInput, PremiumFeedInput } from '../gql/graphql';
import { fieldErrors, formError, type FieldErrors } from '../lib/errors';
import { request } from '../lib/graphql';
import { useInvalidateFeeds } from './feedActions';
import {
  creatableKinds,
  initialPremiumValues,
  premiumCreateInput,
  premiumFormSpec,
  premiumUpdateInput,
  type PremiumFormSpec,
  type PremiumInput,
  type PremiumInputKey,
  type PremiumKindInfo,
  type PremiumValues,
} from '../lib/premiumForm';

/** usePremiumKinds is the server's description of the premium kinds; it changes only with the server. */
export function usePremiumKinds() {
  return useQuery({
    queryKey: ['premiumFeedKinds'],
    queryFn: () => request(PremiumFeedKindsQuery),
    staleTime: 5 * 60_000,
  });
}

/** useCreatablePremiumKinds tells, per creatable kind, how many feeds exist and whether it is full. */
export function useCreatablePremiumKinds() {
  const kinds = usePremiumKinds();
  const counts = useQuery({ queryKey: ['premiumFeedCounts'], queryFn: () => request(PremiumFeedCountsQuery) });
  const data = kinds.data && counts.data ? creatableKinds(kinds.data.premiumFeedKinds, counts.data.feeds.nodes) : undefined;
  return { data, isPending: kinds.isPending || counts.isPending, error: kinds.error ?? counts.error };
}

/** PremiumFeedForm edits a premium feed with the inputs its kind allows. */
export function PremiumFeedForm(props: { feed: FeedRowFragment; onClose: () => void; onSaved?: (f: FeedRowFragment) => void }) {
  const kinds = usePremiumKinds();
  const title = `Edit ${props.feed.name}`;
  if (kinds.isPending) return <Shell title={title} onClose={props.onClose} body={<Spinner label="Loading the feed's settings…" />} />;
  const kind = kinds.data?.premiumFeedKinds.find((k) => k.kind === props.feed.premiumKind);
  if (!kind) {
    const why = kinds.error ? String((kinds.error as Error).message) : `the server does not describe the premium kind ${props.feed.premiumKind ?? '(none)'}`;
    return <Shell title={title} onClose={props.onClose} body={<ErrorBox error={`This feed cannot be edited here: ${why}`} onRetry={() => void kinds.refetch()} />} />;
  }
  return <EditForm {...props} spec={premiumFormSpec(kind, props.feed)} title={title} />;
}

/** Shell is the form's dialog while the form cannot be shown: loading, or why not. */
function Shell(props: { title: string; onClose: () => void; body: ReactNode }) {
  return (
    <FormModal title={props.title} onClose={props.onClose}>
      {props.body}
    </FormModal>
  );
}

function EditForm(props: { feed: FeedRowFragment; spec: PremiumFormSpec; title: string; onClose: () => void; onSaved?: (f: FeedRowFragment) => void }) {
  const { feed, spec } = props;
  const [initial] = useState(() => initialPremiumValues(spec, feed));
  const [clear, setClear] = useState<ReadonlySet<PremiumInputKey>>(new Set());
  const toast = useToast();
  const { values, save, checked, status } = usePremiumForm(
    initial,
    props,
    async (input: FeedUpdateInput) => (await request(UpdateFeedMutation, { id: feed.id, input })).updateFeed,
    (f) => toast.success(`${f.name} saved`),
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const { input, errors } = premiumUpdateInput(spec, initial, values, clear);
    if (!checked(errors)) return;
    if (Object.keys(input).length === 0) {
      toast.info('Nothing changed');
      props.onClose();
      return;
    }
    save.mutate(input);
  };
  return (
    <PremiumFormModal
      spec={spec}
      title={props.title}
      clear={clear}
      setClear={setClear}
      {...status}
      submitLabel="Save"
      onSubmit={submit}
      onClose={props.onClose}
    />
  );
}

/**
 * PremiumFeedCreateForm is the spec's Create then Premium Feed: a feed of a
 * kind that allows several, created disabled. A kind at its maxFeeds cannot
 * be chosen, and the form says so.
 */
export function PremiumFeedCreateForm(props: { onClose: () => void; onSaved?: (f: FeedRowFragment) => void }) {
  const creatable = useCreatablePremiumKinds();
  const title = 'Create premium feed';
  if (creatable.isPending) return <Shell title={title} onClose={props.onClose} body={<Spinner label="Loading premium feed kinds…" />} />;
  if (!creatable.data) {
    return <Shell title={title} onClose={props.onClose} body={<ErrorBox error={`Premium feed kinds are unavailable: ${(creatable.error as Error | null)?.message ?? 'unknown error'}`} />} />;
  }
  if (creatable.data.length === 0) {
    return <Shell title={title} onClose={props.onClose} body={<p>No premium feed kind can be created in this build.</p>} />;
  }
  return <CreateForm {...props} title={title} choices={creatable.data} />;
}

function CreateForm(props: {
  title: string;
  choices: { kind: PremiumKindInfo; count: number; full: boolean }[];
  onClose: () => void;
  onSaved?: (f: FeedRowFragment) => void;
}) {
  const firstOpen = props.choices.find((c) => !c.full) ?? props.choices[0];
  const [kindName, setKindName] = useState(firstOpen.kind.kind);
  const choice = props.choices.find((c) => c.kind.kind === kindName) ?? firstOpen;
  const spec = premiumFormSpec(choice.kind);
  const toast = useToast();
  const qc = useQueryClient();
  const { values, setValues, save, checked, status } = usePremiumForm(
    () => initialPremiumValues(spec),
    props,
    async (input: PremiumFeedInput) => (await request(CreatePremiumFeedMutation, { input })).createPremiumFeed,
    (f) => {
      toast.success(`${f.name} created; enable it to start fetching`);
      void qc.invalidateQueries({ queryKey: ['premiumFeedCounts'] });
    },
  );
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const { input, errors } = premiumCreateInput(spec, values);
    if (checked(errors)) save.mutate(input);
  };
  const picker =
    props.choices.length > 1 ? (
      <div className="field span-2">
        <label htmlFor="premium-kind">Kind</label>
        <select
          id="premium-kind"
          value={kindName}
          onChange={(e) => {
            const next = props.choices.find((c) => c.kind.kind === e.target.value);
            if (!next) return;
            setKindName(next.kind.kind);
            setValues(initialPremiumValues(premiumFormSpec(next.kind)));
            save.reset();
          }}
        >
          {props.choices.map((c) => (
            <option key={c.kind.kind} value={c.kind.kind} disabled={c.full}>
              {c.kind.title}
              {c.full ? ` (limit of ${c.kind.maxFeeds} reached)` : ''}
            </option>
          ))}
        </select>
      </div>
    ) : null;
  const limit = (
    <p className={choice.full ? 'error-box span-2' : 'muted span-2'} role={choice.full ? 'alert' : undefined} data-testid="premium-limit">
      {choice.full
        ? `${choice.kind.title} already has ${choice.count} feeds, the most allowed (${choice.kind.maxFeeds}): no more can be created.`
        : `${choice.kind.title}: ${choice.count} of at most ${choice.kind.maxFeeds} feeds. The new feed is created disabled.`}
    </p>
  );
  return (
    <PremiumFormModal
      spec={spec}
      title={props.title}
      {...status}
      disabled={choice.full}
      submitLabel="Create feed"
      onSubmit={submit}
      onClose={props.onClose}
      before={
        <>
          {picker}
          {limit}
        </>
      }
    />
  );
}

/**
 * usePremiumForm is what the edit and create forms share: the values, the
 * errors found before sending, the save, and what follows it (saved, a
 * refresh, onSaved, close).
 */
function usePremiumForm<I>(
  initial: PremiumValues | (() => PremiumValues),
  props: { onClose: () => void; onSaved?: (f: FeedRowFragment) => void },
  send: (input: I) => Promise<FeedRowFragment>,
  saved: (f: FeedRowFragment) => void,
) {
  const [values, setValues] = useState<PremiumValues>(initial);
  const [localErrors, setLocalErrors] = useState<FieldErrors>({});
  const invalidate = useInvalidateFeeds();
  const save = useMutation({
    mutationFn: send,
    onSuccess: (f) => {
      saved(f);
      invalidate();
      props.onSaved?.(f);
      props.onClose();
    },
  });
  return {
    values,
    setValues,
    save,
    /** checked shows the errors found before sending; it is true when there are none. */
    checked: (errors: FieldErrors) => {
      setLocalErrors(errors);
      return Object.keys(errors).length === 0;
    },
    /** status is what PremiumFormModal shows of the save. */
    status: { values, setValues, error: save.error, localErrors, busy: save.isPending },
  };
}

/** PremiumFormModal renders a form spec: inputs, read-only facts, hints and the server's errors beside the fields. */
function PremiumFormModal(props: {
  spec: PremiumFormSpec;
  title: string;
  values: PremiumValues;
  setValues: (f: (v: PremiumValues) => PremiumValues) => void;
  clear?: ReadonlySet<PremiumInputKey>;
  setClear?: (s: ReadonlySet<PremiumInputKey>) => void;
  error: unknown;
  localErrors: FieldErrors;
  busy: boolean;
  disabled?: boolean;
  submitLabel: string;
  onSubmit: (e: FormEvent) => void;
  onClose: () => void;
  before?: ReactNode;
}) {
  const { spec, values } = props;
  const shown = [...spec.inputs.map((i) => i.key), ...spec.readOnly.map((r) => r.key)];
  const errs = { ...fieldErrors(props.error), ...props.localErrors };
  const topError = formError(props.error, shown);
  const kind = spec.kind;
  return (
    <FormModal
      title={props.title}
      onClose={props.onClose}
      form="premium-feed-form"
      submitLabel={props.submitLabel}
      busy={props.busy}
      disabled={props.disabled}
    >
      <form id="premium-feed-form" className="form-grid" onSubmit={props.onSubmit} noValidate data-premium-kind={kind.kind}>
        <p className="span-2 muted premium-kind-line">
          <strong>{kind.title}</strong> · premium feed
          {kind.iocsPerPoll > 0 && ` · up to ${kind.iocsPerPoll.toLocaleString('en-US')} indicators per poll`}
        </p>
        {!kind.available && (
          <p className="note-box span-2" role="note">
            This build cannot fetch {kind.title} feeds: the settings can be saved, but enabling the feed fails.
          </p>
        )}
        {props.before}
        {topError && (
          <div className="error-box span-2" role="alert">
            {topError}
          </div>
        )}
        {spec.readOnly
          .filter((r) => r.key === 'name')
          .map((r) => (
            <ReadOnly key={r.key} fact={r} error={errs[r.key]} />
          ))}
        {spec.inputs.map((i) => (
          <PremiumField
            key={i.key}
            input={i}
            value={values[i.key] ?? ''}
            onChange={(v) => props.setValues((s) => ({ ...s, [i.key]: v }))}
            error={errs[i.key]}
            clearing={props.clear?.has(i.key) ?? false}
            onClearing={
              props.setClear &&
              ((on) => {
                const next = new Set(props.clear);
                if (on) next.add(i.key);
                else next.delete(i.key);
                props.setClear!(next);
              })
            }
          />
        ))}
        {spec.readOnly
          .filter((r) => r.key !== 'name')
          .map((r) => (
            <ReadOnly key={r.key} fact={r} error={errs[r.key]} />
          ))}
        {kind.requiredToEnable.length > 0 && (
          <p className="span-2 hint">
            <span className="badge badge-required">required to enable</span> marks what must be set before the feed can be enabled.
          </p>
        )}
      </form>
    </FormModal>
  );
}

function ReadOnly({ fact, error }: { fact: PremiumFormSpec['readOnly'][number]; error?: string }) {
  const wide = fact.key === 'description';
  return (
    <div className={wide ? 'span-2' : undefined}>
      <Field label={fact.label} hint={fact.hint} error={error}>
        {(id, d) =>
          wide ? (
            <textarea id={id} aria-describedby={d} rows={2} readOnly value={fact.value} />
          ) : (
            <input id={id} aria-describedby={d} readOnly value={fact.value} />
          )
        }
      </Field>
    </div>
  );
}

function PremiumField(props: {
  input: PremiumInput;
  value: string;
  onChange: (v: string) => void;
  error?: string;
  clearing: boolean;
  onClearing?: (on: boolean) => void;
}) {
  const { input: i, error } = props;
  const badge = i.requiredToEnable ? (
    <span className="badge badge-required" title="Must be set before the feed can be enabled">
      required to enable
    </span>
  ) : i.required ? (
    <span className="badge badge-required">required</span>
  ) : null;
  const common = (id: string, d: string | undefined) => ({
    id,
    'aria-describedby': d,
    'aria-invalid': !!error,
    value: props.value,
    name: i.key,
  });
  const wide = i.type === 'url' || i.type === 'select';
  const field = (
    <Field label={i.label} badge={badge} hint={i.hint} error={error}>
      {(id, d) => {
        switch (i.type) {
          case 'number':
            return <input {...common(id, d)} type="number" inputMode="numeric" min={i.min} max={i.max} step={1} onChange={(e) => props.onChange(e.target.value)} />;
          case 'secret':
            return (
              <input
                {...common(id, d)}
                type="password"
                autoComplete="new-password"
                placeholder={i.secretSet ? '••••••••' : undefined}
                disabled={props.clearing}
                onChange={(e) => props.onChange(e.target.value)}
              />
            );
          case 'select':
            return (
              <select {...common(id, d)} onChange={(e) => props.onChange(e.target.value)}>
                {(i.options ?? []).map((o) => (
                  <option key={o}>{o}</option>
                ))}
              </select>
            );
          case 'url':
            return <input {...common(id, d)} type="url" autoComplete="off" spellCheck={false} onChange={(e) => props.onChange(e.target.value)} />;
          default:
            return <input {...common(id, d)} autoComplete="off" onChange={(e) => props.onChange(e.target.value)} />;
        }
      }}
    </Field>
  );
  return (
    <div className={wide ? 'span-2' : undefined}>
      {field}
      {i.type === 'secret' && i.secretSet && props.onClearing && (
        <label className="check small">
          <input
            type="checkbox"
            checked={props.clearing}
            onChange={(e) => {
              if (e.target.checked) props.onChange('');
              props.onClearing!(e.target.checked);
            }}
          />{' '}
          Remove the stored {lowerFirst(i.label)}
        </label>
      )}
    </div>
  );
}

/** lowerFirst lowercases a label's first letter unless it starts an acronym ("API key"). */
function lowerFirst(s: string): string {
  return s.length > 1 && s[1] === s[1].toLowerCase() ? s[0].toLowerCase() + s.slice(1) : s;
}
