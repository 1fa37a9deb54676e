import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import {
  ChannelDeliveriesQuery,
  CreateEmailChannelMutation,
  CreateWebhookMutation,
  DeleteNotificationChannelMutation,
  NotificationChannelsQuery,
  TenantsQuery,
  TestNotificationChannelMutation,
} from '../api';
import { useAuth } from '../auth';
import { RecordTable, useConfirmedDelete, type RecordColumn } from '../components/crud';
import { EmptyState, Field, FormModal, Modal, Page, QueryView } from '../components/ui';
import { useToast } from '../components/toast';
import type { NotificationChannelsQuery as ChannelsData, NotificationEvent } from '../gql/graphql';
import { errorMessage, fieldErrors, formError } from '../lib/errors';
import { formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';
import { isRoot } from '../lib/roles';

type Channel = ChannelsData['notificationChannels'][number];

const channelsKey = ['notificationChannels'];

const eventLabels: Record<NotificationEvent, string> = {
  FEED_HEALTH: 'Feed health',
  ASSET_HIT: 'Asset hits',
};

/** NotificationsPage lists the channels the user may manage: create a webhook or an email channel, test, delete, and each one's delivery log. */
export function NotificationsPage() {
  const { user } = useAuth();
  const root = isRoot(user?.scope);
  const q = useQuery({ queryKey: channelsKey, queryFn: () => request(NotificationChannelsQuery) });
  const tenants = useQuery({ queryKey: ['tenants'], queryFn: () => request(TenantsQuery) });
  const tenantName = (id: string | null | undefined) =>
    id ? (tenants.data?.tenants.find((t) => t.id === id)?.name ?? id) : 'Root';
  const [creating, setCreating] = useState<'WEBHOOK' | 'EMAIL' | null>(null);
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  const [log, setLog] = useState<Channel | null>(null);
  const toast = useToast();
  const test = useMutation({
    mutationFn: (c: Channel) => request(TestNotificationChannelMutation, { id: c.id }).then(() => c),
    onSuccess: (c) => toast.success(`A test event is on its way to ${c.name}; see its delivery log`),
    onError: (e) => toast.error(errorMessage(e)),
  });
  const del = useConfirmedDelete<Channel>({
    remove: (c) => request(DeleteNotificationChannelMutation, { id: c.id }),
    title: 'Delete channel?',
    message: (c) => `Delete ${c.name}? Its waiting notifications and its delivery log go with it.`,
    deleted: (c) => `${c.name} deleted`,
    invalidate: [channelsKey],
  });
  const columns: RecordColumn<Channel>[] = [
    { header: 'Name', cell: (c) => c.name },
    { header: 'Kind', cell: (c) => (c.kind === 'WEBHOOK' ? 'Webhook' : 'Email') },
    { header: 'Owner', cell: (c) => tenantName(c.tenantId) },
    { header: 'Target', td: { className: 'mono break' }, cell: (c) => c.target },
    { header: 'Events', cell: (c) => c.events.map((e) => eventLabels[e]).join(', ') },
    { header: 'Created', cell: (c) => formatDateTime(c.createdAt) },
    {
      header: 'Actions',
      cell: (c) => (
        <span className="row-actions">
          <button type="button" className="btn btn-small" onClick={() => test.mutate(c)} aria-label={`Test ${c.name}`}>
            Test
          </button>
          <button type="button" className="btn btn-small" onClick={() => setLog(c)} aria-label={`Deliveries of ${c.name}`}>
            Deliveries
          </button>
          <button type="button" className="btn btn-small btn-danger-ghost" onClick={() => del.ask(c)} aria-label={`Delete ${c.name}`}>
            Delete
          </button>
        </span>
      ),
    },
  ];
  const actions = (
    <>
      <button type="button" className="btn btn-primary" onClick={() => setCreating('WEBHOOK')}>
        + Webhook
      </button>
      <button type="button" className="btn" onClick={() => setCreating('EMAIL')}>
        + Email
      </button>
    </>
  );
  return (
    <Page
      id="notifications"
      title="Notifications"
      description={
        root
          ? 'Where tifeeds sends feed health changes and tenants’ asset hits: signed webhooks and email.'
          : 'Where tifeeds sends your tenant’s asset hits: signed webhooks and email.'
      }
      actions={actions}
    >
      <QueryView
        query={q}
        loading="Loading the channels…"
        isEmpty={(d) => d.notificationChannels.length === 0}
        empty={<EmptyState title="No channels yet." />}
      >
        {(d) => (
          <RecordTable label="Notification channels" columns={columns} records={d.notificationChannels} row={(c) => ({ 'data-channel-name': c.name })} />
        )}
      </QueryView>
      {creating && (
        <ChannelForm
          kind={creating}
          root={root}
          tenants={tenants.data?.tenants ?? []}
          onClose={() => setCreating(null)}
          onSecret={(name, s) => setSecret({ name, secret: s })}
        />
      )}
      {secret && (
        <Modal title="Webhook secret" onClose={() => setSecret(null)}>
          <p>
            The signing secret of <strong>{secret.name}</strong>, shown this once: the receiver checks{' '}
            <code>X-Tifeeds-Signature</code> with it.
          </p>
          <p className="mono break" data-testid="webhook-secret">
            {secret.secret}
          </p>
        </Modal>
      )}
      {log && <DeliveryLog channel={log} onClose={() => setLog(null)} />}
      {del.dialog}
    </Page>
  );
}

function ChannelForm(props: {
  kind: 'WEBHOOK' | 'EMAIL';
  root: boolean;
  tenants: { id: string; name: string }[];
  onClose: () => void;
  onSecret: (name: string, secret: string) => void;
}) {
  const [name, setName] = useState('');
  const [target, setTarget] = useState('');
  const [secret, setSecret] = useState('');
  const [tenantId, setTenantId] = useState('');
  const [events, setEvents] = useState<NotificationEvent[]>(['ASSET_HIT']);
  const qc = useQueryClient();
  const toast = useToast();
  const webhook = props.kind === 'WEBHOOK';
  const save = useMutation({
    mutationFn: async () => {
      const owner = props.root && tenantId ? tenantId : null;
      if (webhook) {
        const r = await request(CreateWebhookMutation, { input: { name, url: target, secret: secret || null, tenantId: owner, events } });
        return { name: r.createWebhook.channel.name, secret: r.createWebhook.secret ?? '' };
      }
      const to = target.split(/[,\n]/).map((s) => s.trim()).filter(Boolean);
      const r = await request(CreateEmailChannelMutation, { input: { name, to, tenantId: owner, events } });
      return { name: r.createEmailChannel.channel.name, secret: '' };
    },
    onSuccess: (r) => {
      toast.success(`${r.name} created`);
      void qc.invalidateQueries({ queryKey: channelsKey });
      props.onClose();
      if (r.secret) props.onSecret(r.name, r.secret);
    },
  });
  const errs = fieldErrors(save.error);
  const top = formError(save.error, ['name', 'url', 'to', 'secret', 'events']);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    save.mutate();
  };
  const toggle = (ev: NotificationEvent) => setEvents((cur) => (cur.includes(ev) ? cur.filter((x) => x !== ev) : [...cur, ev]));
  const offered: NotificationEvent[] = props.root && !tenantId ? ['FEED_HEALTH', 'ASSET_HIT'] : ['ASSET_HIT'];
  return (
    <FormModal
      title={webhook ? 'New webhook' : 'New email channel'}
      onClose={props.onClose}
      form="channel-form"
      submitLabel="Create"
      busy={save.isPending}
    >
      <form id="channel-form" className="form-grid" onSubmit={submit} noValidate>
        {top && (
          <div className="error-box span-2" role="alert">
            {top}
          </div>
        )}
        <Field label="Name" error={errs.name}>
          {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs.name} required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        {webhook ? (
          <Field label="URL" error={errs.url} hint="http or https, reachable under the feeds’ egress policy.">
            {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs.url} required value={target} onChange={(e) => setTarget(e.target.value)} />}
          </Field>
        ) : (
          <Field label="Recipients" error={errs.to} hint="Up to 10 addresses, separated by commas.">
            {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs.to} required value={target} onChange={(e) => setTarget(e.target.value)} />}
          </Field>
        )}
        {webhook && (
          <Field label="Secret" error={errs.secret} hint="16 to 256 characters; leave empty to have one made. Shown once.">
            {(id, d) => <input id={id} aria-describedby={d} aria-invalid={!!errs.secret} value={secret} onChange={(e) => setSecret(e.target.value)} />}
          </Field>
        )}
        {props.root && (
          <Field label="Owner" hint="Root’s own channel, or one tenant’s.">
            {(id, d) => (
              <select id={id} aria-describedby={d} value={tenantId} onChange={(e) => {
                setTenantId(e.target.value);
                if (e.target.value) setEvents((cur) => cur.filter((x) => x !== 'FEED_HEALTH'));
              }}>
                <option value="">Root</option>
                {props.tenants.map((t) => (
                  <option key={t.id} value={t.id}>
                    {t.name}
                  </option>
                ))}
              </select>
            )}
          </Field>
        )}
        <fieldset className="span-2">
          <legend>Events</legend>
          {offered.map((ev) => (
            <label key={ev} className="check">
              <input type="checkbox" checked={events.includes(ev)} onChange={() => toggle(ev)} /> {eventLabels[ev]}
            </label>
          ))}
          {errs.events && <p className="field-error">{errs.events}</p>}
        </fieldset>
      </form>
    </FormModal>
  );
}

function DeliveryLog(props: { channel: Channel; onClose: () => void }) {
  const q = useQuery({
    queryKey: ['channelDeliveries', props.channel.id],
    queryFn: () => request(ChannelDeliveriesQuery, { id: props.channel.id, first: 50 }),
    refetchInterval: 3000,
  });
  return (
    <Modal title={`Deliveries of ${props.channel.name}`} onClose={props.onClose} wide>
      <QueryView
        query={q}
        loading="Loading the deliveries…"
        isEmpty={(d) => d.channelDeliveries.nodes.length === 0}
        empty={<EmptyState title="Nothing sent yet." />}
      >
        {(d) => (
          <RecordTable
            label="Deliveries"
            records={d.channelDeliveries.nodes}
            row={(x) => ({ 'data-delivery-status': x.status })}
            columns={[
              { header: 'Time', cell: (x) => formatDateTime(x.at) },
              { header: 'Event', cell: (x) => x.event },
              { header: 'Attempt', num: true, cell: (x) => x.attempt },
              { header: 'Status', cell: (x) => x.status.replace('_', ' ').toLowerCase() + (x.httpStatus ? ` (${x.httpStatus})` : '') },
              { header: 'Latency', num: true, cell: (x) => `${x.latencyMs} ms` },
              { header: 'Error', td: { className: 'break' }, cell: (x) => x.error || '—' },
              { header: 'Delivery id', td: { className: 'mono' }, cell: (x) => x.deliveryId },
            ]}
          />
        )}
      </QueryView>
    </Modal>
  );
}
