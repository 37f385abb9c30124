import type { Bar } from './report.js'

type Row = Record<string, string | number>

const millions = (n: number) => `${n / 1e6}M`

/** The charts of bench/analytics: ingest beside the bare insert, and the latency of each query. */
export function analyticsCharts (rows: Row[]): Record<string, { title: string, bars: Bar[] }> {
  const ingest: Bar[] = rows.flatMap((r) => {
    const name = `${String(r.backend)} ${millions(Number(r.events))}`
    const bare = Number(r['bare insert rows/s'])
    const ours = Number(r['ingest events/s'])
    return [
      { label: `${name} bare insert`, value: bare, text: `${bare.toLocaleString('en-US')} rows/s`, baseline: true },
      { label: `${name} oohbid ingest`, value: ours, text: `${ours.toLocaleString('en-US')} events/s (${String(r['vs bare'])})` }
    ]
  })
  const latency: Bar[] = rows.flatMap((r) => Object.keys(r).filter((k) => k.endsWith(' ms')).map((k) => {
    const ms = Number(r[k])
    return { label: `${String(r.backend)} ${millions(Number(r.events))} ${k.slice(0, -3)}`, value: ms, text: `${ms.toLocaleString('en-US')} ms` }
  }))
  return {
    'analytics-ingest': { title: 'Events into ClickHouse through the funnel log, beside a bare MergeTree insert', bars: ingest },
    'analytics-latency': { title: 'Report latency, first request to ready answer (30 days, no cache)', bars: latency }
  }
}
