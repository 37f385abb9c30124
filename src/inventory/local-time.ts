import type { Daypart, OperatingHours } from '../generated/types.js'
import type { ScreenRecord } from './records.js'

const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const
type Weekday = typeof WEEKDAYS[number]

/** A moment as a screen's wall clock shows it. */
export interface LocalTime {
  /** YYYY-MM-DD in the screen's zone: the day its spots, pacing and capacity count against. */
  date: string
  weekday: Weekday
  /** Minutes since local midnight. */
  minute: number
}

const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter (timezone: string): Intl.DateTimeFormat {
  let f = formatters.get(timezone)
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: timezone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' })
    formatters.set(timezone, f)
  }
  return f
}

/** A quarter of an hour: every zone's offset today is a whole number of them, and zones change offset only between them. */
const QUARTER = 900_000
const quarters = new Map<string, LocalTime>()

/**
 * The local date, weekday and minute of a clock reading in an IANA zone. Formatting a date in a zone costs a few
 * microseconds, and every spot decision asks: the zone's time is worked out once per quarter of an hour (UTC), within
 * which it moves in step with UTC and stays on one local date.
 */
export function localTime (timezone: string, ms: number): LocalTime {
  const quarter = Math.floor(ms / QUARTER)
  const id = `${timezone}|${quarter}`
  let start = quarters.get(id)
  if (start === undefined) {
    const parts: Record<string, string> = {}
    for (const p of formatter(timezone).formatToParts(quarter * QUARTER)) parts[p.type] = p.value
    start = { ...startOf(`${parts.year}-${parts.month}-${parts.day}`), minute: Number(parts.hour) * 60 + Number(parts.minute) }
    if (quarters.size >= 10_000) quarters.clear()
    quarters.set(id, start)
  }
  return { date: start.date, weekday: start.weekday, minute: start.minute + Math.floor((ms - quarter * QUARTER) / 60_000) }
}

/** The first minute of a local date. */
export function startOf (date: string): LocalTime {
  return { date, weekday: WEEKDAYS[new Date(`${date}T12:00:00Z`).getUTCDay()]!, minute: 0 }
}

function minutes (hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number) as [number, number]
  return h * 60 + m
}

/** A weekday's daypart windows in minutes, overlapping ones merged (so that no minute counts twice). */
function windows (dayparts: Daypart[], weekday: Weekday): Array<[number, number]> {
  const merged: Array<[number, number]> = []
  const spans = dayparts.filter((d) => d.days.includes(weekday)).map((d): [number, number] => [d.start_hour * 60, d.end_hour * 60]).sort((a, b) => a[0] - b[0])
  for (const [start, end] of spans) {
    const last = merged[merged.length - 1]
    if (last !== undefined && start <= last[1]) last[1] = Math.max(last[1], end)
    else merged.push([start, end])
  }
  return merged
}

type Intervals = ReadonlyArray<readonly [number, number]>

const ALWAYS: Intervals = [[0, 24 * 60]]
/**
 * A screen's open intervals per weekday, parsed once per operating-hours object: every spot decision asks whether its
 * screen is open, and the screens' records are kept decoded (CachedTable), so the same object comes back each time.
 */
const parsed = new WeakMap<OperatingHours, Map<Weekday, Intervals>>()

function openIntervals (hours: OperatingHours | undefined, weekday: Weekday): Intervals {
  if (hours === undefined) return ALWAYS
  let days = parsed.get(hours)
  if (days === undefined) {
    days = new Map()
    parsed.set(hours, days)
  }
  let open = days.get(weekday)
  if (open === undefined) {
    open = (hours[weekday] ?? []).map(([o, c]): [number, number] => [minutes(o), minutes(c)]).sort((a, b) => a[0] - b[0])
    days.set(weekday, open)
  }
  return open
}

/** Today's open intervals in minutes, in order, within the dayparts when given; no hours means always on. */
function intervals (hours: OperatingHours | undefined, weekday: Weekday, dayparts?: Daypart[]): Intervals {
  const open = openIntervals(hours, weekday)
  if (dayparts === undefined) return open
  const within = windows(dayparts, weekday)
  return open.flatMap(([o, c]) => within.flatMap(([s, e]): Array<[number, number]> => Math.min(c, e) > Math.max(o, s) ? [[Math.max(o, s), Math.min(c, e)]] : []))
}

/** Whether the screen is within its operating hours (and the dayparts, when given) at this local time. */
export function isOpen (hours: OperatingHours | undefined, t: LocalTime, dayparts?: Daypart[]): boolean {
  return intervals(hours, t.weekday, dayparts).some(([open, close]) => t.minute >= open && t.minute < close)
}

/**
 * Open minutes of the local day already behind, and in the whole day (within the dayparts, when given): the fraction
 * of a day's spots due by now.
 */
export function openProgress (hours: OperatingHours | undefined, t: LocalTime, dayparts?: Daypart[]): { elapsed: number, total: number } {
  let elapsed = 0
  let total = 0
  for (const [open, close] of intervals(hours, t.weekday, dayparts)) {
    total += Math.max(0, close - open)
    elapsed += Math.max(0, Math.min(close, t.minute + 1) - open)
  }
  return { elapsed: Math.min(elapsed, total), total }
}

/** Minutes until the screen next opens (within a week), for a closed screen's retry time; undefined when never open. */
export function minutesUntilOpen (hours: OperatingHours | undefined, t: LocalTime): number | undefined {
  const start = WEEKDAYS.indexOf(t.weekday)
  for (let d = 0; d <= 7; d++) {
    const day = WEEKDAYS[(start + d) % 7]!
    for (const [open, close] of intervals(hours, day)) {
      const at = d * 24 * 60 + open
      if (close > open && at > t.minute) return at - t.minute
    }
  }
  return undefined
}

/** Open minutes in each hour (0-23) of a local date within the dayparts and the hours: hour -> minutes, hours with none left out. */
export function openMinutesByHour (hours: OperatingHours | undefined, date: string, dayparts: Daypart[]): Array<[number, number]> {
  const byHour = new Map<number, number>()
  for (const [open, close] of intervals(hours, startOf(date).weekday, dayparts)) {
    for (let h = Math.floor(open / 60); h * 60 < close; h++) {
      const minutes = Math.min(close, (h + 1) * 60) - Math.max(open, h * 60)
      if (minutes > 0) byHour.set(h, (byHour.get(h) ?? 0) + minutes)
    }
  }
  return [...byHour].sort((a, b) => a[0] - b[0])
}

/** How many of the dates (YYYY-MM-DD) have open minutes within the dayparts (and the hours, when given). */
export function daysWithin (hours: OperatingHours | undefined, dates: string[], dayparts: Daypart[]): number {
  return dates.filter((date) => openProgress(hours, startOf(date), dayparts).total > 0).length
}

/**
 * The calendar day deals go by on a screen: its own local date, as players and placements do. Computed once per
 * screen and decision (time zone formatting costs microseconds), then handed to dealRuns for each deal.
 */
export function screenDate (screen: Pick<ScreenRecord, 'timezone'>, now: number): string {
  return localTime(screen.timezone, now).date
}
