import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { ApiKeysQuery, CreateApiKeyMutation, RevokeApiKeyMutation, UserApiKeysQuery } from '../api';
import { copyText } from '../lib/clipboard';
import { errorMessage, fieldErrors, formError } from '../lib/errors';
import { formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';
import { RecordTable, type RecordColumn } from './crud';
import { useToast } from './toast';
import { EmptyState, Field, Modal, QueryView } from './ui';

/** ShownOnce shows a secret (a key, a one-time password) that the server will never show again. */
export function ShownOnce(props: { title: string; label: string; secret: string; note: string; onClose: () => void }) {
  const toast = useToast();
  return (
    <Modal
      title={props.title}
      onClose={props.onClose}
      footer={
        <button type="button" className="btn btn-primary" onClick={props.onClose}>
          Done
        </button>
      }
    >
      <p>{props.note}</p>
      <Field label={props.label}>
        {(id) => (
          <div className="row-actions">
            <input id={id} className="mono" readOnly value={props.secret} data-testid="shown-once" onFocus={(e) => e.target.select()} />
            <button
              type="button"
              className="btn btn-small"
              onClick={() => copyText(props.secret).then(() => toast.success('Copied'), (err) => toast.error(errorMessage(err)))}
            >
              Copy
            </button>
          </div>
        )}
      </Field>
    </Modal>
  );
}

interface Key {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt?: string | null;
  revokedAt?: string | null;
}

/**
 * ApiKeys lists the API keys of userId (root) or of the signed-in user, with
 * revoke, and creates one (shown once).
 */
export function ApiKeys(props: { userId?: string }) {
  const key = props.userId ? ['userApiKeys', props.userId] : ['apiKeys'];
  const userId = props.userId;
  const q = useQuery({
    queryKey: key,
    queryFn: async (): Promise<Key[]> =>
      userId ? (await request(UserApiKeysQuery, { userId })).userApiKeys : (await request(ApiKeysQuery)).apiKeys,
  });
  const qc = useQueryClient();
  const toast = useToast();
  const [name, setName] = useState('');
  const [shown, setShown] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: () => request(CreateApiKeyMutation, { name, userId: props.userId ?? null }).then((r) => r.createApiKey),
    onSuccess: (r) => {
      setShown(r.key);
      setName('');
      void qc.invalidateQueries({ queryKey: key });
    },
  });
  const revoke = useMutation({
    mutationFn: (k: Key) => request(RevokeApiKeyMutation, { id: k.id }),
    onSuccess: (_d, k) => toast.success(`Key ${k.name} revoked`),
    onError: (err) => toast.error(errorMessage(err)),
    onSettled: () => void qc.invalidateQueries({ queryKey: key }),
  });
  const errs = fieldErrors(create.error);
  const top = formError(create.error, ['name']);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    create.mutate();
  };
  const columns: RecordColumn<Key>[] = [
    { header: 'Name', cell: (k) => k.name },
    { header: 'Prefix', td: { className: 'mono' }, cell: (k) => `${k.prefix}…` },
    { header: 'Created', cell: (k) => formatDateTime(k.createdAt) },
    { header: 'Last used', cell: (k) => (k.lastUsedAt ? formatDateTime(k.lastUsedAt) : 'Never') },
    {
      header: 'Actions',
      cell: (k) =>
        k.revokedAt ? (
          <span className="muted">Revoked {formatDateTime(k.revokedAt)}</span>
        ) : (
          <button type="button" className="btn btn-small btn-danger-ghost" disabled={revoke.isPending} onClick={() => revoke.mutate(k)} aria-label={`Revoke ${k.name}`}>
            Revoke
          </button>
        ),
    },
  ];
  return (
    <section aria-label="API keys">
      <form className="form-grid" onSubmit={submit} noValidate>
        {top && (
          <div className="error-box span-2" role="alert">
            {top}
          </div>
        )}
        <Field label="New key's name" error={errs.name} hint="To recognise the key by (at most 64 characters).">
          {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs.name} maxLength={64} value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <div>
          <button type="submit" className="btn btn-primary" disabled={create.isPending || name.trim() === ''}>
            Create key
          </button>
        </div>
      </form>
      <QueryView query={q} loading="Loading the keys…" isEmpty={(d) => d.length === 0} empty={<EmptyState title="No API keys." />}>
        {(d) => <RecordTable label="API keys" columns={columns} records={d} row={(k) => ({ 'data-key-name': k.name })} />}
      </QueryView>
      {shown && (
        <ShownOnce
          title="New API key"
          label="API key"
          secret={shown}
          note="Copy the key now: it is shown this once. Send it as the password of HTTP basic auth, with the username."
          onClose={() => setShown(null)}
        />
      )}
    </section>
  );
}
