import { niceTicks } from "../numbers.js"

// Charts as inline SVG: no library, no canvas, readable by a screen reader through the table that
// each chart carries.

export interface Series {
  readonly name: string
  readonly className: string
  readonly values: ReadonlyArray<number | null>
}

const width = 760
const margin = { top: 12, right: 12, bottom: 36, left: 56 }

const shortDay = (day: string) => day.slice(5)

/**
 * Days along x, one group of bars per day (`kind: "bars"`) or one line per series (`"lines"`).
 * `format` labels the y axis.
 */
export const DayChart = (props: {
  readonly title: string
  readonly days: ReadonlyArray<string>
  readonly series: ReadonlyArray<Series>
  readonly kind: "bars" | "lines"
  readonly format?: (value: number) => string
  readonly height?: number
}) => {
  const { days, series } = props
  const height = props.height ?? 240
  const format = props.format ?? ((value: number) => String(value))
  const max = Math.max(0, ...series.flatMap((s) => s.values.map((v) => v ?? 0)))
  const ticks = niceTicks(max)
  const top = ticks[ticks.length - 1] ?? 1
  const plotWidth = width - margin.left - margin.right
  const plotHeight = height - margin.top - margin.bottom
  const slot = plotWidth / Math.max(1, days.length)
  const x = (i: number) => margin.left + slot * i + slot / 2
  const y = (value: number) => margin.top + plotHeight - (value / top) * plotHeight
  const labelEvery = Math.ceil(days.length / 10)
  const barWidth = Math.max(1, Math.min(18, (slot * 0.8) / Math.max(1, series.length)))

  return (
    <figure class="chart">
      <figcaption>
        <span class="chart-title">{props.title}</span>
        <span class="legend">
          {series.map((s) => (
            <span key={s.name} class="legend-item">
              <span class={`swatch ${s.className}`} aria-hidden="true" />
              {s.name}
            </span>
          ))}
        </span>
      </figcaption>
      <svg
        viewBox={`0 0 ${width} ${height}`}
        role="img"
        aria-label={`${props.title}, ${days.length} days`}
        preserveAspectRatio="xMidYMid meet"
      >
        {ticks.map((tick) => (
          <g key={tick} class="tick">
            <line x1={margin.left} x2={width - margin.right} y1={y(tick)} y2={y(tick)} />
            <text x={margin.left - 6} y={y(tick)} dy="0.32em" text-anchor="end">{format(tick)}</text>
          </g>
        ))}
        {days.map((day, i) =>
          i % labelEvery === 0
            ? (
              <text key={day} class="day-label" x={x(i)} y={height - margin.bottom + 16} text-anchor="middle">
                {shortDay(day)}
              </text>
            )
            : null
        )}
        {props.kind === "bars"
          ? series.map((s, k) => (
            <g key={s.name} class={`series ${s.className}`} data-series={s.name}>
              {s.values.map((value, i) =>
                value === null || value === 0 ? null : (
                  <rect
                    key={i}
                    x={x(i) - (barWidth * series.length) / 2 + k * barWidth}
                    y={y(value)}
                    width={barWidth}
                    height={Math.max(0.5, y(0) - y(value))}
                  >
                    <title>{`${days[i]} ${s.name}: ${format(value)}`}</title>
                  </rect>
                )
              )}
            </g>
          ))
          : series.map((s) => {
            // A null value (no deliveries that day) breaks the line.
            const segments: Array<Array<string>> = [[]]
            s.values.forEach((value, i) => {
              if (value === null) segments.push([])
              else segments[segments.length - 1]!.push(`${x(i).toFixed(1)},${y(value).toFixed(1)}`)
            })
            return (
              <g key={s.name} class={`series ${s.className}`} data-series={s.name}>
                {segments.filter((points) => points.length > 1).map((points, j) => (
                  <polyline key={j} points={points.join(" ")} fill="none" />
                ))}
                {s.values.map((value, i) =>
                  value === null ? null : (
                    <circle key={i} cx={x(i)} cy={y(value)} r={3}>
                      <title>{`${days[i]} ${s.name}: ${format(value)}`}</title>
                    </circle>
                  )
                )}
              </g>
            )
          })}
        <line class="axis" x1={margin.left} x2={width - margin.right} y1={y(0)} y2={y(0)} />
      </svg>
    </figure>
  )
}

/** A tiny line of the last readings, for the backlog strip. */
export const Sparkline = (props: { readonly values: ReadonlyArray<number>; readonly label: string }) => {
  const w = 80
  const h = 20
  const max = Math.max(1, ...props.values)
  const step = props.values.length > 1 ? w / (props.values.length - 1) : w
  const points = props.values.map((v, i) => `${(i * step).toFixed(1)},${(h - 1 - (v / max) * (h - 2)).toFixed(1)}`)
  return (
    <svg class="sparkline" viewBox={`0 0 ${w} ${h}`} width={w} height={h} role="img" aria-label={props.label}>
      {points.length > 1 && <polyline points={points.join(" ")} fill="none" />}
    </svg>
  )
}
