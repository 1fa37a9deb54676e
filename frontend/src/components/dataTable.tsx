import { flexRender, type Table } from '@tanstack/react-table';

/**
 * DataTable renders a TanStack table: sortable columns get a sort button and
 * aria-sort, and each cell carries its column's header as data-label, which
 * the narrow-screen layout shows beside the value.
 */
export function DataTable<T>(props: {
  table: Table<T>;
  label: string;
  /** busy marks the table while a newer page is on its way. */
  busy: boolean;
  sortable?: (columnId: string) => boolean;
  /** row is attributes of a row, e.g. a data-* name for tests. */
  row: (record: T) => { [data: `data-${string}`]: string };
}) {
  const { table } = props;
  return (
    <div className="table-wrap">
      <table className="data-table" aria-label={props.label} aria-busy={props.busy}>
        <thead>
          {table.getHeaderGroups().map((hg) => (
            <tr key={hg.id}>
              {hg.headers.map((h) => {
                const canSort = props.sortable?.(h.column.id) ?? false;
                const dir = h.column.getIsSorted();
                return (
                  <th key={h.id} aria-sort={dir === 'asc' ? 'ascending' : dir === 'desc' ? 'descending' : undefined} className={`col-${h.column.id}`}>
                    {canSort ? (
                      <button type="button" className="th-sort" onClick={h.column.getToggleSortingHandler()}>
                        {flexRender(h.column.columnDef.header, h.getContext())}
                        <span className="sort-ind" aria-hidden="true">
                          {dir === 'asc' ? '▲' : dir === 'desc' ? '▼' : '↕'}
                        </span>
                      </button>
                    ) : (
                      flexRender(h.column.columnDef.header, h.getContext())
                    )}
                  </th>
                );
              })}
            </tr>
          ))}
        </thead>
        <tbody>
          {table.getRowModel().rows.map((r) => (
            <tr key={r.id} {...props.row(r.original)}>
              {r.getVisibleCells().map((c) => (
                <td key={c.id} className={`col-${c.column.id}`} data-label={String(c.column.columnDef.header)}>
                  {flexRender(c.column.columnDef.cell, c.getContext())}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
