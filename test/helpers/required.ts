// Suites that need a tool `npm ci` does not bring (nats-server and haproxy for the cluster, a ClickHouse server,
// Debian's Chromium) skip on a bare machine, saying why; where .ci/run installed the tools it names those suites in
// OOHBID_TEST_REQUIRE, and there a missing tool fails the suite instead: a run that skipped them cannot pass as green.

/** The suites the environment says must run (OOHBID_TEST_REQUIRE, space- or comma-separated). */
export function required (suite: string): boolean {
  return (process.env.OOHBID_TEST_REQUIRE ?? '').split(/[\s,]+/).includes(suite)
}

/** Skips the whole file with its reason, or fails it where the suite is required. */
export function skipFile (t: { plan (n: number, reason?: string): void, fail (message: string): unknown }, suite: string, reason: string): void {
  if (required(suite)) t.fail(`the ${suite} suite must run here (OOHBID_TEST_REQUIRE), but ${reason}`)
  else t.plan(0, reason)
}
