import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import type { FeedStatus } from '../gql/graphql';
import type { CursorPaging } from '../lib/cursorPages';
import { errorMessage } from '../lib/errors';
import { feedStatusLabel } from '../lib/format';

/** fieldSelector finds a dialog's form fields, the first of which takes focus. */
const fieldSelector = 'input:not([type=hidden]):enabled, select:enabled, textarea:enabled';

/**
 * focusOpener gives focus back to the control that opened a dialog. A
 * control gone from view (a menu entry whose menu closed, a row that left
 * the page) hands it to its menu's button, else to the page's heading, so
 * that keyboard users are never left at the top of the document.
 */
function focusOpener(opener: Element | null) {
  const target = opener instanceof HTMLElement && opener.isConnected ? opener : null;
  const menu = target?.closest('details');
  if (target && target.getClientRects().length > 0 && !(menu && !menu.open)) {
    target.focus();
    return;
  }
  const summary = menu?.isConnected ? menu.querySelector('summary') : null;
  if (summary) {
    summary.focus();
    return;
  }
  const heading = document.querySelector<HTMLElement>('main h1');
  if (heading) {
    if (!heading.hasAttribute('tabindex')) heading.setAttribute('tabindex', '-1');
    heading.focus();
  }
}

/**
 * Dialog is a native <dialog> opened with showModal(): the browser traps focus
 * and closes on Escape. It opens on its first field (or the control marked
 * data-autofocus), not on its Close button, and gives focus back to the
 * control that opened it when it goes. Modal and Drawer are its two looks.
 */
function Dialog(props: {
  className: string;
  bodyClassName: string;
  title: string;
  onClose: () => void;
  /** closeOnBackdrop closes on a click beside the panel. */
  closeOnBackdrop?: boolean;
  children: ReactNode;
  footer?: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const { onClose } = props;
  // Read while rendering, before anything in the dialog takes focus.
  const [opener] = useState(() => document.activeElement);
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) {
      d.showModal();
      const first = d.querySelector<HTMLElement>('[data-autofocus]') ?? d.querySelector(`.${props.bodyClassName}`)?.querySelector<HTMLElement>(fieldSelector);
      first?.focus();
    }
    return () => {
      d?.close();
      focusOpener(opener);
    };
  }, [opener, props.bodyClassName]);
  return (
    <dialog
      ref={ref}
      className={props.className}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
      onClick={
        props.closeOnBackdrop
          ? (e) => {
              if (e.target === ref.current) onClose();
            }
          : undefined
      }
    >
      <header className="modal-head">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" className="icon-btn" aria-label="Close" onClick={onClose}>
          ×
        </button>
      </header>
      <div className={props.bodyClassName}>{props.children}</div>
      {props.footer && <footer className="modal-foot">{props.footer}</footer>}
    </dialog>
  );
}

/** Modal is a dialog in the middle of the page, its buttons in a footer. */
export function Modal(props: {
  title: string;
  onClose: () => void;
  children: ReactNode;
  footer?: ReactNode;
  wide?: boolean;
}) {
  return (
    <Dialog className={props.wide ? 'modal modal-wide' : 'modal'} bodyClassName="modal-body" title={props.title} onClose={props.onClose} footer={props.footer}>
      {props.children}
    </Dialog>
  );
}

/** Drawer is a side panel over the page, modal like Modal; a click beside it closes it. */
export function Drawer(props: { title: string; onClose: () => void; children: ReactNode }) {
  return (
    <Dialog className="drawer" bodyClassName="drawer-body" title={props.title} onClose={props.onClose} closeOnBackdrop>
      {props.children}
    </Dialog>
  );
}

/** CancelFooter is a dialog's footer: Cancel, then the dialog's own action, if any. */
function CancelFooter(props: { onCancel: () => void; children?: ReactNode }) {
  return (
    <>
      <button type="button" className="btn" onClick={props.onCancel}>
        Cancel
      </button>
      {props.children}
    </>
  );
}

/**
 * FormModal is a Modal whose footer submits the form with id `form` (the form
 * is in children); without `form` it offers only Cancel, for a form that
 * cannot be shown (loading, or an error).
 */
export function FormModal(props: {
  title: string;
  onClose: () => void;
  wide?: boolean;
  form?: string;
  submitLabel?: string;
  busy?: boolean;
  disabled?: boolean;
  children: ReactNode;
}) {
  return (
    <Modal
      title={props.title}
      onClose={props.onClose}
      wide={props.wide}
      footer={
        <CancelFooter onCancel={props.onClose}>
          {props.form && (
            <button type="submit" form={props.form} className="btn btn-primary" disabled={props.busy || props.disabled}>
              {props.busy ? 'Saving…' : props.submitLabel}
            </button>
          )}
        </CancelFooter>
      }
    >
      {props.children}
    </Modal>
  );
}

/** ConfirmDialog asks before a destructive or disruptive action. */
export function ConfirmDialog(props: {
  title: string;
  message: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  return (
    <Modal
      title={props.title}
      onClose={props.onCancel}
      footer={
        <CancelFooter onCancel={props.onCancel}>
          <button
            type="button"
            className={props.danger ? 'btn btn-danger' : 'btn btn-primary'}
            disabled={props.busy}
            onClick={props.onConfirm}
            data-autofocus
          >
            {props.busy ? 'Working…' : props.confirmLabel}
          </button>
        </CancelFooter>
      }
    >
      <p>{props.message}</p>
    </Modal>
  );
}

/** Field is a labelled form control with its hint and its server-side error. */
export function Field(props: {
  label: string;
  /** badge follows the label, e.g. a "required to enable" mark. */
  badge?: ReactNode;
  error?: string;
  hint?: string;
  children: (id: string, describedBy: string | undefined) => ReactNode;
}) {
  const id = useId();
  const errId = `${id}-err`;
  const hintId = `${id}-hint`;
  const describedBy = [props.error ? errId : '', props.hint ? hintId : ''].filter(Boolean).join(' ') || undefined;
  return (
    <div className={props.error ? 'field field-invalid' : 'field'}>
      <label htmlFor={id}>
        {props.label}
        {props.badge && <> {props.badge}</>}
      </label>
      {props.children(id, describedBy)}
      {props.hint && (
        <small id={hintId} className="hint">
          {props.hint}
        </small>
      )}
      {props.error && (
        <small id={errId} className="field-error" role="alert">
          {props.error}
        </small>
      )}
    </div>
  );
}

/** Switch is a toggle button with role="switch". */
export function Switch(props: {
  checked: boolean;
  label: string;
  disabled?: boolean;
  onChange: (next: boolean) => void;
}) {
  return (
    <button
      type="button"
      role="switch"
      aria-checked={props.checked}
      aria-label={props.label}
      className={props.checked ? 'switch switch-on' : 'switch'}
      disabled={props.disabled}
      onClick={() => props.onChange(!props.checked)}
    >
      <span className="switch-knob" />
    </button>
  );
}

/** StatusDot is the spec's status indicator: green Success, red Error, white Disabled. */
export function StatusDot({ status }: { status: FeedStatus }) {
  return (
    <span className="status">
      <span className={`dot dot-${status.toLowerCase()}`} aria-hidden="true" />
      {feedStatusLabel(status)}
    </span>
  );
}

export function Spinner({ label = 'Loading…' }: { label?: string }) {
  return (
    <div className="loading" role="status">
      <span className="spinner" aria-hidden="true" />
      {label}
    </div>
  );
}

export function EmptyState(props: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{props.title}</p>
      {props.children}
    </div>
  );
}

export function ErrorBox({ error, onRetry }: { error: string; onRetry?: () => void }) {
  return (
    <div className="error-box" role="alert">
      <strong>Something went wrong.</strong> <span>{error}</span>
      {onRetry && (
        <button type="button" className="btn btn-small" onClick={onRetry}>
          Retry
        </button>
      )}
    </div>
  );
}

/** Pager is cursor pagination: the cursors of the pages before this one form a stack. */
export function Pager(props: {
  total: number;
  /** totalCapped: the server stopped counting at total; more match. */
  totalCapped?: boolean;
  pageIndex: number;
  pageSize: number;
  hasNext: boolean;
  onPrev: () => void;
  onNext: () => void;
  onPageSize?: (n: number) => void;
  noun: string;
}) {
  const from = props.total === 0 ? 0 : props.pageIndex * props.pageSize + 1;
  const end = (props.pageIndex + 1) * props.pageSize;
  const to = props.totalCapped ? end : Math.min(props.total, end);
  return (
    <nav className="pager" aria-label="Pagination">
      <span>
        {from}–{to} of {props.total.toLocaleString('en-US')}
        {props.totalCapped ? '+' : ''} {props.noun}
      </span>
      {props.onPageSize && (
        <label className="inline-label">
          Rows
          <select value={props.pageSize} onChange={(e) => props.onPageSize?.(Number(e.target.value))}>
            {[10, 25, 50, 100].map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </label>
      )}
      <button type="button" className="btn btn-small" disabled={props.pageIndex === 0} onClick={props.onPrev}>
        ‹ Previous
      </button>
      <button type="button" className="btn btn-small" disabled={!props.hasNext} onClick={props.onNext}>
        Next ›
      </button>
    </nav>
  );
}

/** CursorPager is the Pager of a connection paged by useCursorPages; resizable offers a choice of rows per page. */
export function CursorPager(props: {
  pages: CursorPaging;
  connection: {
    totalCount: number;
    totalCountCapped?: boolean;
    pageInfo: { hasNextPage: boolean; endCursor?: string | null };
  };
  noun: string;
  resizable?: boolean;
}) {
  const { pages, connection: c } = props;
  return (
    <Pager
      total={c.totalCount}
      totalCapped={c.totalCountCapped}
      pageIndex={pages.pageIndex}
      pageSize={pages.pageSize}
      hasNext={c.pageInfo.hasNextPage}
      onPrev={pages.prev}
      onNext={() => pages.next(c.pageInfo.endCursor)}
      onPageSize={props.resizable ? pages.setPageSize : undefined}
      noun={props.noun}
    />
  );
}

/** Page frames a page: its heading (labelling the page), a line on what it shows, its actions, then the content. */
export function Page(props: { id: string; title: string; description: string; actions?: ReactNode; children: ReactNode }) {
  const titleId = `${props.id}-title`;
  return (
    <section className="page" aria-labelledby={titleId}>
      <div className="page-head">
        <div>
          <h1 id={titleId}>{props.title}</h1>
          <p className="muted">{props.description}</p>
        </div>
        {props.actions}
      </div>
      {props.children}
    </section>
  );
}

/** QueryLike is the part of a useQuery result QueryView reads. */
export interface QueryLike<T> {
  isPending: boolean;
  error: unknown;
  data: T | undefined;
  refetch: () => unknown;
}

/** QueryView shows a query's spinner, its error with Retry, the empty state when there is nothing, or its data. */
export function QueryView<T>(props: {
  query: QueryLike<T>;
  /** stale keeps showing the data when a later fetch fails (a paged table keeps its last page). */
  stale?: boolean;
  loading: string;
  isEmpty: (data: T) => boolean;
  empty: ReactNode;
  children: (data: T) => ReactNode;
}) {
  const q = props.query;
  if (q.isPending) return <Spinner label={props.loading} />;
  if ((q.error && !props.stale) || q.data === undefined) return <ErrorBox error={errorMessage(q.error)} onRetry={() => void q.refetch()} />;
  return props.isEmpty(q.data) ? props.empty : props.children(q.data);
}

/** useDebounced returns value once it has stopped changing for ms. */
export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}
