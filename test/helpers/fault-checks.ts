import type { Test } from 'tap'
import { summary, type Check } from '../../scripts/lib/faults/checker.js'

/** Prints a fault scenario's checks, and asserts that each checked something and found no violation. */
export function holdChecks (t: Test, checks: Check[]): void {
  for (const line of summary(checks)) t.comment(line)
  for (const check of checks) {
    t.ok(check.checked > 0, `${check.name}: something was checked (${check.checked})`)
    t.equal(check.violations.length, 0, `${check.name}: ${check.checked} checked, no violation`)
  }
}
