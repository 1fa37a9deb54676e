import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import {
  DeleteFeedMutation,
  ResetFeedMutation,
  RunFeedNowMutation,
  SetFeedEnabledMutation,
} from '../api';
import { ConfirmDialog, Switch } from '../components/ui';
import { useToast } from '../components/toast';
import type { FeedRowFragment } from '../gql/graphql';
import { errorMessage } from '../lib/errors';
import { request } from '../lib/graphql';

/** useFeedMutations bundles the feed actions with their toasts and cache refresh. */
export function useFeedMutations() {
  const qc = useQueryClient();
  const toast = useToast();
  const refresh = () => {
    void qc.invalidateQueries({ queryKey: ['feeds'] });
    void qc.invalidateQueries({ queryKey: ['feed'] });
    void qc.invalidateQueries({ queryKey: ['feedFacets'] });
  };
  const onError = (err: unknown) => toast.error(errorMessage(err));
  return {
    setEnabled: useMutation({
      mutationFn: (v: { id: string; enabled: boolean }) =>
        request(SetFeedEnabledMutation, { id: v.id, enabled: v.enabled, confirm: v.enabled ? undefined : true }),
      onSuccess: (d) =>
        toast.success(`${d.setFeedEnabled.name} ${d.setFeedEnabled.enabled ? 'enabled' : 'disabled'}`),
      onError,
      onSettled: refresh,
    }),
    runNow: useMutation({
      mutationFn: (id: string) => request(RunFeedNowMutation, { id }),
      onSuccess: (d) => toast.info(`Run of ${d.runFeedNow.name} started`),
      onError,
      onSettled: () => {
        refresh();
        void qc.invalidateQueries({ queryKey: ['feedRuns'] });
      },
    }),
    remove: useMutation({
      mutationFn: (f: FeedRowFragment) => request(DeleteFeedMutation, { id: f.id }),
      onSuccess: (_d, f) => toast.success(`${f.name} deleted`),
      onError,
      onSettled: refresh,
    }),
    reset: useMutation({
      mutationFn: (f: FeedRowFragment) => request(ResetFeedMutation, { id: f.id }),
      onSuccess: (_d, f) => toast.success(`${f.name} reset: its next run starts afresh`),
      onError,
      onSettled: refresh,
    }),
  };
}

type Pending = { kind: 'disable' | 'delete' | 'reset'; feed: FeedRowFragment } | null;

/**
 * useFeedConfirmations holds which feed action awaits confirmation and renders
 * its dialog: disabling stops ingestion, deleting drops the feed's IoCs.
 */
export function useFeedConfirmations(m: ReturnType<typeof useFeedMutations>, onDeleted?: () => void) {
  const [pending, setPending] = useState<Pending>(null);
  const close = () => setPending(null);
  let dialog = null;
  if (pending?.kind === 'disable') {
    dialog = (
      <ConfirmDialog
        title="Disable feed?"
        message={`Disabling ${pending.feed.name} stops its ingestion and cancels a run in progress. Indicators it already brought in stay until they expire.`}
        confirmLabel="Disable"
        danger
        busy={m.setEnabled.isPending}
        onCancel={close}
        onConfirm={() => m.setEnabled.mutate({ id: pending.feed.id, enabled: false }, { onSettled: close })}
      />
    );
  } else if (pending?.kind === 'delete') {
    dialog = (
      <ConfirmDialog
        title="Delete feed?"
        message={`Delete ${pending.feed.name}? Its configuration, run history and sightings are removed. This cannot be undone.`}
        confirmLabel="Delete"
        danger
        busy={m.remove.isPending}
        onCancel={close}
        onConfirm={() =>
          m.remove.mutate(pending.feed, {
            onSuccess: () => onDeleted?.(),
            onSettled: close,
          })
        }
      />
    );
  } else if (pending?.kind === 'reset') {
    dialog = (
      <ConfirmDialog
        title="Reset premium feed?"
        message={`Reset ${pending.feed.name}? Its next run starts afresh, fetching again what its backfill allows.`}
        confirmLabel="Reset"
        busy={m.reset.isPending}
        onCancel={close}
        onConfirm={() => m.reset.mutate(pending.feed, { onSettled: close })}
      />
    );
  }
  return { ask: setPending, dialog };
}

/** EnabledSwitch enables at once and asks before disabling. */
export function EnabledSwitch(props: {
  feed: FeedRowFragment;
  m: ReturnType<typeof useFeedMutations>;
  ask: (p: Pending) => void;
}) {
  const { feed, m, ask } = props;
  return (
    <Switch
      checked={feed.enabled}
      label={`${feed.enabled ? 'Disable' : 'Enable'} ${feed.name}`}
      disabled={m.setEnabled.isPending && m.setEnabled.variables?.id === feed.id}
      onChange={(next) => (next ? m.setEnabled.mutate({ id: feed.id, enabled: true }) : ask({ kind: 'disable', feed }))}
    />
  );
}

/** FeedIcon is a small badge per feed kind (feeds carry no image of their own). */
export function FeedIcon({ feed }: { feed: Pick<FeedRowFragment, 'type' | 'category' | 'name'> }) {
  const text =
    feed.type === 'CUSTOM' ? (feed.category === 'TSV' ? 'TSV' : 'TX') : feed.type === 'PREMIUM' ? '★' : feed.name.slice(0, 2);
  return (
    <span className={`feed-icon feed-icon-${feed.type.toLowerCase()}`} aria-hidden="true">
      {text.toUpperCase()}
    </span>
  );
}
