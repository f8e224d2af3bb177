import type { ComponentChildren } from 'preact';

/**
 * Small SVG charts, drawn by the console itself (no chart library: a few dozen lines each, and
 * nothing more to keep up to date). Every chart has a title and a text alternative.
 */

export interface Series {
  name: string;
  values: readonly (number | null)[];
  /** A CSS class with the series' colour (styles.css). */
  className: string;
}

const width = 560;
const height = 180;
const pad = { left: 44, right: 8, top: 10, bottom: 28 };
const plotHeight = height - pad.top - pad.bottom;

function niceMax(max: number): number {
  if (max <= 0) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (max <= step * magnitude) return step * magnitude;
  return 10 * magnitude;
}

/** Tick labels: whole numbers as they are, fractions with one decimal. */
export function tickNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}

function isEmpty(series: readonly Series[]): boolean {
  return series.every((one) => one.values.every((value) => value === null || value === 0));
}

/** The width of one label's slot on the x axis. */
function slotWidth(labels: readonly string[]): number {
  return (width - pad.left - pad.right) / Math.max(1, labels.length);
}

/** The largest value drawn (0 when there is none). */
function peak(series: readonly Series[]): number {
  return Math.max(0, ...series.flatMap((one) => one.values.map((value) => value ?? 0)));
}

function axis(labels: readonly string[], max: number, format: (value: number) => string) {
  const ticks = [0, 0.5, 1].map((share) => ({ y: pad.top + plotHeight * (1 - share), label: format(max * share) }));
  const every = Math.max(1, Math.ceil(labels.length / 7));
  const step = slotWidth(labels);
  return (
    <g class="axis">
      {ticks.map((tick) => (
        <g key={tick.y}>
          <line x1={pad.left} x2={width - pad.right} y1={tick.y} y2={tick.y} class="grid" />
          <text x={pad.left - 6} y={tick.y + 4} text-anchor="end">
            {tick.label}
          </text>
        </g>
      ))}
      {labels.map((label, i) =>
        i % every === 0 ? (
          <text key={label} x={pad.left + step * i + step / 2} y={height - 8} text-anchor="middle">
            {label.slice(5)}
          </text>
        ) : null,
      )}
    </g>
  );
}

interface ChartProps {
  title: string;
  labels: readonly string[];
  series: readonly Series[];
  format?: (value: number) => string;
}

/** What every chart draws around its marks: the title and legend, the SVG with its text alternative, the axis, and a note when all is empty. */
function ChartFrame(props: ChartProps & { max: number; format: (value: number) => string; children: ComponentChildren }) {
  return (
    <figure class="chart">
      <figcaption>
        {props.title}
        <span class="legend">
          {props.series.map((series) => (
            <span key={series.name} class={`key ${series.className}`}>
              {series.name}
            </span>
          ))}
        </span>
      </figcaption>
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-label={`${props.title}: ${props.series.map((s) => `${s.name} ${s.values.join(', ')}`).join('; ')}`}>
        {axis(props.labels, props.max, props.format)}
        {isEmpty(props.series) ? (
          <text x={width / 2} y={height / 2} text-anchor="middle" class="empty">
            nothing in these days
          </text>
        ) : null}
        {props.children}
      </svg>
    </figure>
  );
}

export function BarChart(props: ChartProps) {
  const format = props.format ?? tickNumber;
  // Counts: at least 0, 1, 2 on the axis.
  const max = Math.max(2, niceMax(peak(props.series)));
  const step = slotWidth(props.labels);
  const barWidth = Math.max(2, (step * 0.8) / Math.max(1, props.series.length));
  return (
    <ChartFrame {...props} max={max} format={format}>
      {props.series.map((series, s) =>
        series.values.map((value, i) => {
          const barHeight = ((value ?? 0) / max) * plotHeight;
          return (
            <rect
              key={`${series.name}-${i}`}
              class={series.className}
              x={pad.left + step * i + step * 0.1 + barWidth * s}
              y={pad.top + plotHeight - barHeight}
              width={barWidth}
              height={barHeight}
            >
              <title>{`${props.labels[i] ?? ''} ${series.name}: ${value === null ? '—' : format(value)}`}</title>
            </rect>
          );
        }),
      )}
    </ChartFrame>
  );
}

export function LineChart(props: ChartProps) {
  const format = props.format ?? tickNumber;
  const max = niceMax(peak(props.series));
  const step = slotWidth(props.labels);
  const point = (value: number, i: number) => `${pad.left + step * i + step / 2},${pad.top + plotHeight * (1 - value / max)}`;
  return (
    <ChartFrame {...props} max={max} format={format}>
      {props.series.map((series) => {
        // A gap where a day has no value: the line stops instead of dropping to zero.
        const segments: string[][] = [[]];
        series.values.forEach((value, i) => {
          if (value === null) segments.push([]);
          else segments[segments.length - 1]!.push(point(value, i));
        });
        return (
          <g key={series.name} class={`line ${series.className}`}>
            {segments.filter((segment) => segment.length > 0).map((segment, k) => (
              <polyline key={k} points={segment.join(' ')} />
            ))}
            {series.values.map((value, i) =>
              value === null ? null : (
                <circle key={i} cx={point(value, i).split(',')[0]} cy={point(value, i).split(',')[1]} r="3">
                  <title>{`${props.labels[i] ?? ''} ${series.name}: ${format(value)}`}</title>
                </circle>
              ),
            )}
          </g>
        );
      })}
    </ChartFrame>
  );
}
