/**
 * feedColumnLabels names the feeds table's columns in display order: saved
 * views store the ids, the header, the column chooser and the filters show
 * the labels.
 */
export const feedColumnLabels = {
  icon: 'Icon',
  name: 'Name',
  type: 'Type',
  status: 'Status',
  statusMessage: 'Status Message',
  enabled: 'Enabled',
  pollingFrequency: 'Polling Frequency',
  retentionPeriod: 'Retention Period',
  backfillDays: 'Backfill Days',
  description: 'Description',
  lastIngestion: 'Last Ingestion',
  iocCount: 'IoCs',
  nextRun: 'Next Run',
  actions: 'Actions',
} as const;

/** FeedColumn is the id of a feeds table column. */
export type FeedColumn = keyof typeof feedColumnLabels;

/** feedColumns lists the feeds table's columns in display order, as views name them. */
export const feedColumns = Object.keys(feedColumnLabels) as FeedColumn[];
