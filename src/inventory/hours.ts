import type { OperatingHours } from '../generated/types.js'

const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const

function minutes (hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number) as [number, number]
  return h * 60 + m
}

/** Open minutes on a calendar date (YYYY-MM-DD, local to the screen); no hours means always on. */
export function openMinutesOn (hours: OperatingHours | undefined, date: string): number {
  if (hours === undefined) return 24 * 60
  const day = WEEKDAYS[new Date(`${date}T12:00:00Z`).getUTCDay()]!
  return (hours[day] ?? []).reduce((sum, [open, close]) => sum + Math.max(0, minutes(close) - minutes(open)), 0)
}

/** Open hours in a week. */
export function openHoursPerWeek (hours: OperatingHours | undefined): number {
  if (hours === undefined) return 168
  return WEEKDAYS.reduce((sum, d) => sum + (hours[d] ?? []).reduce((s, [o, c]) => s + Math.max(0, minutes(c) - minutes(o)), 0), 0) / 60
}

/** Every date from start to end inclusive (YYYY-MM-DD). */
export function datesBetween (start: string, end: string): string[] {
  const out: string[] = []
  for (let t = Date.parse(`${start}T00:00:00Z`); t <= Date.parse(`${end}T00:00:00Z`); t += 86_400_000) out.push(new Date(t).toISOString().slice(0, 10))
  return out
}

/** Validates operating hours beyond their schema: each interval opens before it closes. */
export function hoursProblem (hours: OperatingHours): string | undefined {
  for (const [day, intervals] of Object.entries(hours)) {
    for (const [open, close] of intervals ?? []) if (minutes(close) <= minutes(open)) return `${day}: ${open}-${close} does not open before it closes`
  }
  return undefined
}
