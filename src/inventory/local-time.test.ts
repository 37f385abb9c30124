import t from 'tap'
import { localTime } from './local-time.js'

/** The zone's wall clock, formatted afresh: what localTime must agree with. */
function reference (timezone: string, ms: number): { date: string, minute: number } {
  const parts: Record<string, string> = {}
  for (const p of new Intl.DateTimeFormat('en-US', { timeZone: timezone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' }).formatToParts(ms)) parts[p.type] = p.value
  return { date: `${parts.year}-${parts.month}-${parts.day}`, minute: Number(parts.hour) * 60 + Number(parts.minute) }
}

t.test('local time agrees with the zone\'s wall clock through offset changes and odd offsets', async (t) => {
  // Daylight saving starts and ends (whole and half hour), quarter- and half-hour offsets, and the date line.
  const spans: Array<[string, string]> = [
    ['America/New_York', '2026-03-07T00:00:00Z'], ['America/New_York', '2026-10-31T00:00:00Z'],
    ['Europe/London', '2026-03-28T00:00:00Z'], ['Australia/Lord_Howe', '2026-04-04T00:00:00Z'],
    ['Asia/Kathmandu', '2026-06-01T00:00:00Z'], ['America/St_Johns', '2026-11-01T00:00:00Z'],
    ['Pacific/Chatham', '2026-04-04T00:00:00Z'], ['Pacific/Kiritimati', '2026-12-31T00:00:00Z']
  ]
  let checked = 0
  let wrong = 0
  for (const [zone, from] of spans) {
    const start = Date.parse(from)
    for (let ms = start; ms < start + 3 * 86_400_000; ms += 7 * 60_000 + 13_000) {
      const got = localTime(zone, ms)
      const want = reference(zone, ms)
      checked++
      if (got.date !== want.date || got.minute !== want.minute) wrong++
    }
  }
  t.equal(wrong, 0, `${checked} instants checked`)
  t.same(localTime('Asia/Kathmandu', Date.parse('2026-06-01T18:14:59Z')), { date: '2026-06-01', weekday: 'mon', minute: 23 * 60 + 59 })
  t.same(localTime('Asia/Kathmandu', Date.parse('2026-06-01T18:15:00Z')), { date: '2026-06-02', weekday: 'tue', minute: 0 })
})
