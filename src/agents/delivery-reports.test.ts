import t from 'tap'
import { nextReportAt } from './delivery-reports.js'

// A reporting webhook's cadence: the next UTC boundary strictly after a time.

const at = (s: string) => Date.parse(s)
const next = (s: string, f: 'hourly' | 'daily' | 'monthly') => new Date(nextReportAt(at(s), f)).toISOString()

t.test('hourly, daily and monthly boundaries, strictly after', async (t) => {
  t.equal(next('2026-11-30T15:20:00Z', 'hourly'), '2026-11-30T16:00:00.000Z')
  t.equal(next('2026-11-30T16:00:00Z', 'hourly'), '2026-11-30T17:00:00.000Z', 'a report due on the hour schedules the next hour')
  t.equal(next('2026-12-31T23:59:59Z', 'hourly'), '2027-01-01T00:00:00.000Z')
  t.equal(next('2026-11-30T15:20:00Z', 'daily'), '2026-12-01T00:00:00.000Z')
  t.equal(next('2026-12-01T00:00:00Z', 'daily'), '2026-12-02T00:00:00.000Z')
  t.equal(next('2026-11-30T15:20:00Z', 'monthly'), '2026-12-01T00:00:00.000Z')
  t.equal(next('2026-12-15T00:00:00Z', 'monthly'), '2027-01-01T00:00:00.000Z')
  t.equal(next('2027-01-31T12:00:00Z', 'monthly'), '2027-02-01T00:00:00.000Z')
})
