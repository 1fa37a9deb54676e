import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import type { FeedStatus } from '../gql/graphql';
import { feedStatusLabel } from '../lib/format';

/**
 * Modal is a native <dialog> opened with showModal(): the browser traps focus,
 * closes on Escape and restores focus to the opener.
 */
export function Modal(props: {
  title: string;
  onClose: () => void;
  children: ReactNode;
  footer?: ReactNode;
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const { onClose } = props;
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className={props.wide ? 'modal modal-wide' : 'modal'}
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <header className="modal-head">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" className="icon-btn" aria-label="Close" onClick={onClose}>
          ×
        </button>
      </header>
      <div className="modal-body">{props.children}</div>
      {props.footer && <footer className="modal-foot">{props.footer}</footer>}
    </dialog>
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
        <>
          <button type="button" className="btn" onClick={props.onCancel}>
            Cancel
          </button>
          <button
            type="button"
            className={props.danger ? 'btn btn-danger' : 'btn btn-primary'}
            disabled={props.busy}
            onClick={props.onConfirm}
            autoFocus
          >
            {props.busy ? 'Working…' : props.confirmLabel}
          </button>
        </>
      }
    >
      <p>{props.message}</p>
    </Modal>
  );
}

/** Drawer is a side panel over the page, modal like Modal. */
export function Drawer(props: { title: string; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className="drawer"
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        props.onClose();
      }}
      onClick={(e) => {
        if (e.target === ref.current) props.onClose();
      }}
    >
      <header className="modal-head">
        <h2 id={titleId}>{props.title}</h2>
        <button type="button" className="icon-btn" aria-label="Close" onClick={props.onClose}>
          ×
        </button>
      </header>
      <div className="drawer-body">{props.children}</div>
    </dialog>
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
  pageIndex: number;
  pageSize: number;
  hasNext: boolean;
  onPrev: () => void;
  onNext: () => void;
  onPageSize?: (n: number) => void;
  noun: string;
}) {
  const from = props.total === 0 ? 0 : props.pageIndex * props.pageSize + 1;
  const to = Math.min(props.total, (props.pageIndex + 1) * props.pageSize);
  return (
    <nav className="pager" aria-label="Pagination">
      <span>
        {from}–{to} of {props.total.toLocaleString('en-US')} {props.noun}
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

/** useDebounced returns value once it has stopped changing for ms. */
export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}
