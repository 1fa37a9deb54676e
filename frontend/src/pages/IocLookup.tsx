import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { LookupIocsQuery } from '../api';
import { ErrorBox } from '../components/ui';
import { errorMessage } from '../lib/errors';
import { formatDateTime } from '../lib/format';
import { request } from '../lib/graphql';
import { iocTypeLabels, scoreLevel } from '../lib/iocFilters';
import { lookupReason, lookupValues, maxLookupValues, summarise } from '../lib/lookup';

/** IocLookup matches pasted values against the store in one call. */
export function IocLookup({ onOpen }: { onOpen: (id: string) => void }) {
  const [text, setText] = useState('');
  const values = lookupValues(text);
  const tooMany = values.length > maxLookupValues;
  const lookup = useMutation({ mutationFn: (vs: string[]) => request(LookupIocsQuery, { values: vs }) });
  const results = lookup.data?.lookupIocs;
  const summary = results ? summarise(results) : null;
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (values.length && !tooMany) lookup.mutate(values);
  };
  return (
    <form className="card lookup" onSubmit={submit} aria-labelledby="lookup-title">
      <h2 id="lookup-title">Bulk lookup</h2>
      <p className="muted small">Paste IPs, domains, URLs or hashes, separated by new lines, spaces, tabs, commas or semicolons; repeats are looked up once. Values are normalised as ingestion normalises them, and defanged ones (example[.]com, hxxp://) are read as live.</p>
      <label htmlFor="lookup-values" className="visually-hidden">
        Values to look up
      </label>
      <textarea id="lookup-values" rows={5} className="mono" value={text} onChange={(e) => setText(e.target.value)} placeholder={'203.0.113.7\nevil.example.com'} />
      <div className="lookup-actions">
        <span className={tooMany ? 'field-error' : 'muted small'}>
          {values.length.toLocaleString('en-US')} value{values.length === 1 ? '' : 's'}
          {tooMany && ` — at most ${maxLookupValues.toLocaleString('en-US')} at once`}
        </span>
        <button type="submit" className="btn btn-primary" disabled={!values.length || tooMany || lookup.isPending}>
          {lookup.isPending ? 'Looking up…' : 'Look up'}
        </button>
      </div>
      {lookup.error && <ErrorBox error={errorMessage(lookup.error)} />}
      {results && summary && (
        <>
          <p role="status" className="lookup-summary">
            <strong>{summary.known}</strong> known · <strong>{summary.unknown}</strong> not found · <strong>{summary.invalid}</strong> not an indicator
          </p>
          <div className="table-wrap">
            <table className="data-table" aria-label="Lookup results">
              <thead>
                <tr>
                  <th>Value</th>
                  <th>Read as</th>
                  <th>Result</th>
                  <th>Score</th>
                  <th>Sources</th>
                  <th>Expires</th>
                </tr>
              </thead>
              <tbody>
                {results.map((r, i) => (
                  <tr key={i} data-lookup-input={r.input}>
                    <td data-label="Value" className="mono break">
                      {r.input}
                      {r.value && r.value !== r.input && <div className="muted small">→ {r.value}</div>}
                    </td>
                    <td data-label="Read as">{r.type ? iocTypeLabels[r.type] : '—'}</td>
                    <td data-label="Result">
                      {r.known && r.ioc ? (
                        <button type="button" className="pill pill-error pill-btn" onClick={() => onOpen(r.ioc!.id)}>
                          Known
                        </button>
                      ) : r.allowlisted ? (
                        <span className="pill pill-ok" title={r.allowlisted.comment ?? undefined} data-testid="allowlisted">
                          Allowlisted by {r.allowlisted.list} {r.allowlisted.entry}
                        </span>
                      ) : r.error ? (
                        <>
                          <span className="pill">Not an indicator</span>
                          <div className="muted small">{lookupReason(r.error, r.input)}</div>
                        </>
                      ) : (
                        <span className="pill pill-ok">Not found</span>
                      )}
                      {r.warnings
                        .filter((w) => w.action === 'FLAG')
                        .map((w) => (
                          <div key={w.list} className="muted small" data-testid="warning">
                            Flagged by {w.list} {w.entry}
                          </div>
                        ))}
                    </td>
                    <td data-label="Score">{r.ioc ? <span className={`score score-${scoreLevel(r.ioc.score)}`}>{r.ioc.score}</span> : '—'}</td>
                    <td data-label="Sources">{r.ioc ? r.ioc.sources.map((s) => `${s.source} (${s.feed.name})`).join(', ') : '—'}</td>
                    <td data-label="Expires">{r.ioc ? formatDateTime(r.ioc.expirationDate) : '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </form>
  );
}
