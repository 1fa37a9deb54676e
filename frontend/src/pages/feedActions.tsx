import { builtinIconPath } from '../lib/builtinFeeds';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import {
  DeleteFeedMutation,
  ResetFeedCursorMutation,
  ResetPremiumFeedMutation,
  RunFeedNowMutation,
  SetFeedEnabledMutation,
} from '../api';
import { ConfirmDialog, Switch } from '../components/ui';
import { useToast } from '../components/toast';
import type { FeedRowFragment } from '../gql/graphql';
import { errorMessage, labelledErrorMessage } from '../lib/errors';
import { labelOfKey } from '../lib/premiumForm';
import { request } from '../lib/graphql';

/** useInvalidateFeeds refreshes what shows feeds after one changed: the table, a feed's page, the filter counts. */
export function useInvalidateFeeds() {
  const qc = useQueryClient();
  return () => {
    void qc.invalidateQueries({ queryKey: ['feeds'] });
    void qc.invalidateQueries({ queryKey: ['feed'] });
    void qc.invalidateQueries({ queryKey: ['feedFacets'] });
  };
}

/** useFeedMutations bundles the feed actions with their toasts and cache refresh. */
export function useFeedMutations() {
  const qc = useQueryClient();
  const toast = useToast();
  const refresh = useInvalidateFeeds();
  const onError = (err: unknown) => toast.error(errorMessage(err));
  return {
    setEnabled: useMutation({
      mutationFn: (v: { id: string; enabled: boolean; name?: string }) =>
        request(SetFeedEnabledMutation, { id: v.id, enabled: v.enabled, confirm: v.enabled ? undefined : true }),
      onSuccess: (d) =>
        toast.success(`${d.setFeedEnabled.name} ${d.setFeedEnabled.enabled ? 'enabled' : 'disabled'}`),
      // A premium feed refuses to be enabled until its credentials are set:
      // the server names the missing field, the toast names it as the form does.
      onError: (err, v) =>
        toast.error(`${v.enabled ? 'Cannot enable' : 'Cannot disable'} ${v.name ?? 'the feed'}: ${labelledErrorMessage(err, labelOfKey)}`),
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
      mutationFn: (f: FeedRowFragment) => request(ResetPremiumFeedMutation, { id: f.id }),
      onSuccess: (d) => toast.success(`${d.resetPremiumFeed.name} reset to its delivered state`),
      onError,
      onSettled: () => {
        refresh();
        void qc.invalidateQueries({ queryKey: ['feedRuns'] });
        void qc.invalidateQueries({ queryKey: ['iocs'] });
      },
    }),
    resetCursor: useMutation({
      mutationFn: (f: FeedRowFragment) => request(ResetFeedCursorMutation, { id: f.id }),
      onSuccess: (_d, f) => toast.success(`${f.name}: its next run starts afresh`),
      onError,
      onSettled: refresh,
    }),
  };
}

type Pending = { kind: 'disable' | 'delete' | 'reset' | 'resetCursor'; feed: FeedRowFragment } | null;

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
        onConfirm={() => m.setEnabled.mutate({ id: pending.feed.id, enabled: false, name: pending.feed.name }, { onSettled: close })}
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
        message={`Reset ${pending.feed.name} to its delivered state? This disables it (stopping a run in progress), deletes the sightings it brought in (and the indicators no other feed has), forgets where it resumes from, clears its credentials and restores its default settings. This cannot be undone.`}
        confirmLabel="Reset premium feed"
        danger
        busy={m.reset.isPending}
        onCancel={close}
        onConfirm={() => m.reset.mutate(pending.feed, { onSettled: close })}
      />
    );
  } else if (pending?.kind === 'resetCursor') {
    dialog = (
      <ConfirmDialog
        title="Reset cursor?"
        message={`Forget where ${pending.feed.name} resumes from? Its next run starts afresh, fetching again what its backfill allows. Its settings and indicators stay.`}
        confirmLabel="Reset cursor"
        busy={m.resetCursor.isPending}
        onCancel={close}
        onConfirm={() => m.resetCursor.mutate(pending.feed, { onSettled: close })}
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
      onChange={(next) => (next ? m.setEnabled.mutate({ id: feed.id, enabled: true, name: feed.name }) : ask({ kind: 'disable', feed }))}
    />
  );
}

/** FeedIcon is a small badge per feed kind: a built-in feed's own icon, else one per type. */
export function FeedIcon({ feed }: { feed: Pick<FeedRowFragment, 'type' | 'category' | 'name'> & { icon?: string | null } }) {
  if (feed.type === 'BUILTIN') {
    return (
      <span className="feed-icon feed-icon-builtin" role="img" aria-label={`${feed.name} icon`} data-icon={feed.icon ?? ''} title={feed.name}>
        <svg viewBox="0 0 24 24" width="18" height="18" fill="none" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" strokeLinejoin="round" aria-hidden="true">
          <path d={builtinIconPath(feed.icon)} />
        </svg>
      </span>
    );
  }
  const text = feed.type === 'CUSTOM' ? (feed.category === 'TSV' ? 'TSV' : 'TX') : '★';
  return (
    <span className={`feed-icon feed-icon-${feed.type.toLowerCase()}`} aria-hidden="true">
      {text.toUpperCase()}
    </span>
  );
}
