import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Measurement } from './load.js'

const resultsDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'bench', 'results')

const isBaseline = (r: Measurement) => r.name.startsWith('bare')

/** Each row's ratio to the bare baseline measured just before it at the same pipelining depth. */
function ratios (rows: Measurement[]): number[] {
  const last = new Map<number, number>()
  return rows.map((r) => {
    if (isBaseline(r)) { last.set(r.pipelining, r.rps); return 1 }
    return r.rps / (last.get(r.pipelining) ?? r.rps)
  })
}

/** The name every benchmark gives its durable floor row (bench/lib/uws-durable.ts, or bid's validated one). */
export const DURABLE_FLOOR = 'durable floor'

/**
 * Each row's CPU per request as a ratio to its durable floor's: the floor measured in its group (the rows from one
 * bare baseline to the next, which share a body size and pipelining depth), else, for a row run apart (oohbid at 80%
 * of peak), the floor of the row it repeats. Rows whose group has no floor (reads that write nothing) have none.
 */
function cpuVsFloor (rows: Measurement[]): Array<number | undefined> {
  const floorAt = (i: number): Measurement | undefined => {
    let start = i
    while (start > 0 && !isBaseline(rows[start]!)) start--
    for (let j = start; j < rows.length && (j === start || !isBaseline(rows[j]!)); j++) {
      const f = rows[j]!
      if (f.name.startsWith(DURABLE_FLOOR) && f.pipelining === rows[i]!.pipelining) return f
    }
    return undefined
  }
  return rows.map((r, i) => {
    const repeated = rows.findIndex((o) => o.pipelining === r.pipelining && r.name !== o.name && r.name.startsWith(o.name))
    const floor = floorAt(i) ?? (repeated >= 0 ? floorAt(repeated) : undefined)
    return floor?.cpuUs !== undefined && floor.cpuUs > 0 && r.cpuUs !== undefined ? r.cpuUs / floor.cpuUs : undefined
  })
}

/** Prints the table with each figure as a ratio to its bare baseline. */
export function printTable (title: string, rows: Measurement[]): string {
  const ratio = ratios(rows)
  const floorCpu = cpuVsFloor(rows)
  const lines = [
    `\n${title}`,
    '| target | pipelining | req/s | p50 ms | p99 ms | vs bare uWS | CPU us/req | vs durable floor CPU | non-2xx | errors |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r, i) => `| ${r.name} | ${r.pipelining} | ${r.rps} | ${r.p50} | ${r.p99} | ${ratio[i]!.toFixed(2)}x | ${r.cpuUs ?? '-'} | ${floorCpu[i] !== undefined ? `${floorCpu[i]!.toFixed(2)}x` : '-'} | ${r.non2xx} | ${r.errors} |`)
  ]
  const text = lines.join('\n')
  console.log(text)
  return text
}

/** One bar of a chart: grey bars are baselines. */
export interface Bar {
  label: string
  value: number
  text: string
  baseline?: boolean
}

/** Text as SVG character data: a label such as "<img> markup" must not open an element. */
function xmlText (text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
}

/** A horizontal SVG bar chart. */
export function barChart (title: string, bars: Bar[]): string {
  const barH = 22
  const gap = 8
  // Room for the longest label at ~7 px a character (13 px sans-serif).
  const left = 20 + 7 * Math.max(...bars.map((b) => b.label.length))
  const width = left + 520
  const max = Math.max(...bars.map((b) => b.value))
  const height = 50 + bars.length * (barH + gap)
  const body = bars.map((b, i) => {
    const y = 40 + i * (barH + gap)
    const w = Math.max(1, Math.round((width - left - 150) * b.value / max))
    return `<text x="${left - 8}" y="${y + 15}" text-anchor="end">${xmlText(b.label)}</text>` +
      `<rect x="${left}" y="${y}" width="${w}" height="${barH}" fill="${b.baseline === true ? '#9aa5b1' : '#2f6fde'}"/>` +
      `<text x="${left + w + 6}" y="${y + 15}">${xmlText(b.text)}</text>`
  }).join('')
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="system-ui,sans-serif" font-size="13">` +
    `<rect width="100%" height="100%" fill="#fff"/><text x="12" y="24" font-size="15" font-weight="bold">${xmlText(title)}</text>${body}</svg>`
}

function svgChart (title: string, rows: Measurement[]): string {
  const ratio = ratios(rows)
  return barChart(title, rows.map((r, i) => ({
    label: `${r.name} -p ${r.pipelining}`,
    value: r.rps,
    text: `${r.rps.toLocaleString('en-US')} req/s${isBaseline(r) ? '' : ` (${ratio[i]!.toFixed(2)}x)`}${r.cpuUs !== undefined ? `, ${r.cpuUs} us CPU/req` : ''}`,
    baseline: isBaseline(r) || r.name.startsWith(DURABLE_FLOOR)
  })))
}

/** Saves the rows as JSON and as an SVG bar chart under bench/results/. */
export function save (name: string, title: string, rows: Measurement[], table: string): void {
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(join(resultsDir, `${name}.json`), JSON.stringify({ date: new Date().toISOString(), rows }, null, 2))
  writeFileSync(join(resultsDir, `${name}.svg`), svgChart(title, rows))
  writeFileSync(join(resultsDir, `${name}.md`), table.trim() + '\n')
  console.log(`\nsaved bench/results/${name}.{json,svg,md}`)
}

/** Saves rows of any shape (a benchmark that is not one autocannon table) as JSON, a Markdown table and SVG charts. */
export function saveTable (name: string, title: string, rows: Array<Record<string, string | number>>, note: string, charts: Record<string, { title: string, bars: Bar[] }> = {}): void {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))]
  const format = (v: string | number | undefined) => (typeof v === 'number' ? v.toLocaleString('en-US') : v ?? '')
  const table = [`${title}`, '', `| ${columns.join(' | ')} |`, `|${columns.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${columns.map((c) => format(r[c])).join(' | ')} |`)].join('\n')
  console.log(`\n${table}\n\n${note}`)
  mkdirSync(resultsDir, { recursive: true })
  writeFileSync(join(resultsDir, `${name}.json`), JSON.stringify({ date: new Date().toISOString(), rows }, null, 2))
  writeFileSync(join(resultsDir, `${name}.md`), `${table}\n\n${note}\n`)
  for (const [file, chart] of Object.entries(charts)) writeFileSync(join(resultsDir, `${file}.svg`), barChart(chart.title, chart.bars))
  console.log(`\nsaved bench/results/${name}.{json,md}${Object.keys(charts).map((f) => ` and ${f}.svg`).join('')}`)
}
