import { Group } from '@visx/group';
import { scaleBand, scaleLinear } from '@visx/scale';
import { Bar } from '@visx/shape';
import { useEffect, useRef, useState, type ReactNode, type RefObject } from 'react';
import { Link, useNavigate } from 'react-router';
import '../charts.css';

// Charts draw SVG through visx; colours come from CSS classes (chart-series-N,
// .chart text) so that they follow the theme. The SVG is an image with a
// one-line summary for screen readers; the figures, with a link each, are in
// the table under it, which keyboard users reach too (bars are clicked with
// the mouse only).

/** ChartDatum is one bar: its label, value and, when it has one, the filtered page it opens. */
export interface ChartDatum {
  key: string;
  label: string;
  value: number;
  to?: string;
}

const fmt = new Intl.NumberFormat('en');

/** formatCount writes a count with thousands separators. */
export function formatCount(n: number): string {
  return fmt.format(n);
}

/**
 * useWidth follows the width of the element ref points at, so that a chart
 * is drawn at its real size (a scaled viewBox would scale its text too).
 */
function useWidth(ref: RefObject<HTMLElement | null>, fallback: number): number {
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const measure = () => setWidth(Math.max(240, Math.floor(el.getBoundingClientRect().width)));
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, [ref]);
  return width;
}

/** ChartCard frames a chart: its title, the chart, and its figures as a table. */
export function ChartCard(props: { id: string; title: string; description?: ReactNode; wide?: boolean; children: ReactNode }) {
  return (
    <figure className={`card chart-card${props.wide ? ' chart-card-wide' : ''}`} aria-labelledby={`${props.id}-title`} data-testid={`chart-${props.id}`}>
      <figcaption>
        <h2 id={`${props.id}-title`}>{props.title}</h2>
        {props.description && <p className="muted small">{props.description}</p>}
      </figcaption>
      {props.children}
    </figure>
  );
}

/** BarList draws horizontal bars, biggest first as given, and their table. */
export function BarList(props: { title: string; data: ChartDatum[]; unit: string; empty: string }) {
  const navigate = useNavigate();
  const box = useRef<HTMLDivElement>(null);
  const width = useWidth(box, 520);
  const { data } = props;
  if (data.length === 0) return <p className="muted">{props.empty}</p>;
  const labelWidth = 150;
  const row = 26;
  const height = data.length * row;
  const x = scaleLinear<number>({ domain: [0, Math.max(...data.map((d) => d.value), 1)], range: [0, width - labelWidth - 70] });
  const y = scaleBand<string>({ domain: data.map((d) => d.key), range: [0, height], padding: 0.25 });
  const summary = `${props.title}: ${data.map((d) => `${d.label} ${formatCount(d.value)}`).join(', ')}.`;
  return (
    <div ref={box}>
      <svg className="chart" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={summary}>
        {data.map((d) => {
          const top = y(d.key) ?? 0;
          const w = Math.max(x(d.value), d.value > 0 ? 2 : 0);
          return (
            <Group key={d.key} top={top}>
              <text className="chart-label" x={labelWidth - 8} y={y.bandwidth() / 2} dominantBaseline="middle" textAnchor="end">
                {d.label.length > 22 ? `${d.label.slice(0, 21)}…` : d.label}
              </text>
              <Bar
                className={`chart-series-1${d.to ? ' chart-clickable' : ''}`}
                x={labelWidth}
                y={0}
                width={w}
                height={y.bandwidth()}
                rx={3}
                onClick={d.to ? () => navigate(d.to!) : undefined}
              />
              <text className="chart-value" x={labelWidth + w + 6} y={y.bandwidth() / 2} dominantBaseline="middle">
                {formatCount(d.value)}
              </text>
            </Group>
          );
        })}
      </svg>
      <ChartTable caption={props.title} columns={[props.unit]} rows={data.map((d) => ({ key: d.key, label: d.label, to: d.to, values: [d.value] }))} />
    </div>
  );
}

/** DaySeries is one series of daily figures. */
export interface DaySeries {
  name: string;
  values: number[];
}

/** DayBars draws one group of bars per day (one bar per series) and their table. */
export function DayBars(props: { title: string; days: { key: string; label: string; short: string; to?: string }[]; series: DaySeries[] }) {
  const navigate = useNavigate();
  const box = useRef<HTMLDivElement>(null);
  const width = useWidth(box, 640);
  const { days, series } = props;
  const height = 200;
  const margin = { top: 10, right: 10, bottom: 28, left: 48 };
  const innerW = width - margin.left - margin.right;
  const innerH = height - margin.top - margin.bottom;
  const max = Math.max(1, ...series.flatMap((s) => s.values));
  const x = scaleBand<string>({ domain: days.map((d) => d.key), range: [0, innerW], padding: 0.2 });
  const inner = scaleBand<string>({ domain: series.map((s) => s.name), range: [0, x.bandwidth()], padding: 0.1 });
  const y = scaleLinear<number>({ domain: [0, max], range: [innerH, 0], nice: true });
  const every = Math.ceil(days.length / 8);
  const total = (s: DaySeries) => s.values.reduce((a, b) => a + b, 0);
  const summary = `${props.title}: ${series.map((s) => `${s.name} ${formatCount(total(s))} in all`).join(', ')}, from ${days[0]?.label} to ${days[days.length - 1]?.label}.`;
  return (
    <div ref={box}>
      {series.length > 1 && (
        <ul className="chart-legend" aria-hidden="true">
          {series.map((s, i) => (
            <li key={s.name}>
              <span className={`chart-swatch chart-series-${i + 1}`} />
              {s.name}
            </li>
          ))}
        </ul>
      )}
      <svg className="chart" viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={summary}>
        <Group left={margin.left} top={margin.top}>
          {/* Axes drawn here: @visx/axis would add its text layout (~8 kB gzipped) for a few labels. */}
          {y.ticks(4).filter(Number.isInteger).map((t) => (
            <g key={t} className="chart-axis">
              <line x1={0} x2={innerW} y1={y(t)} y2={y(t)} />
              <text x={-6} y={y(t)} textAnchor="end" dominantBaseline="middle">
                {formatCount(t)}
              </text>
            </g>
          ))}
          {days.map((d, di) => (
            <Group key={d.key} left={x(d.key) ?? 0}>
              {series.map((s, si) => {
                const v = s.values[di] ?? 0;
                const top = y(v) ?? innerH;
                return (
                  <Bar
                    key={s.name}
                    className={`chart-series-${si + 1}${d.to ? ' chart-clickable' : ''}`}
                    x={inner(s.name) ?? 0}
                    y={top}
                    width={inner.bandwidth()}
                    height={Math.max(innerH - top, v > 0 ? 1 : 0)}
                    onClick={d.to ? () => navigate(d.to!) : undefined}
                  />
                );
              })}
            </Group>
          ))}
          {days
            .filter((_, i) => days.length <= 8 || i % every === every - 1)
            .map((d) => (
              <text key={d.key} className="chart-tick" x={(x(d.key) ?? 0) + x.bandwidth() / 2} y={innerH + 18} textAnchor="middle">
                {d.short}
              </text>
            ))}
        </Group>
      </svg>
      <ChartTable
        caption={props.title}
        columns={series.map((s) => s.name)}
        rows={days.map((d, i) => ({ key: d.key, label: d.label, to: d.to, values: series.map((s) => s.values[i] ?? 0) }))}
      />
    </div>
  );
}

/** ChartTable is a chart's figures as a table, folded away under the chart. */
function ChartTable(props: { caption: string; columns: string[]; rows: { key: string; label: string; to?: string; values: number[] }[] }) {
  return (
    <details className="chart-table">
      <summary>Show the figures</summary>
      <table className="data-table">
        <caption className="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            {props.columns.map((c) => (
              <th key={c} scope="col" className="num">
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((r) => (
            <tr key={r.key}>
              <td>{r.to ? <Link to={r.to}>{r.label}</Link> : r.label}</td>
              {r.values.map((v, i) => (
                <td key={props.columns[i]} className="num">
                  {formatCount(v)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
