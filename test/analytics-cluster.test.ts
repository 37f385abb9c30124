import t from 'tap'
import { analyticsSuite } from './helpers/analytics-suite.js'
import { skipFile } from './helpers/required.js'

// The analytics suite (test/helpers/analytics-suite.ts) on a ClickHouse cluster: ON CLUSTER DDL, replicated and
// Distributed tables. CI configures a one-node cluster over ZooKeeper (.ci/run).
const server = process.env.OOHBID_TEST_CLICKHOUSE_URL
const cluster = process.env.OOHBID_TEST_CLICKHOUSE_CLUSTER
if (server === undefined || cluster === undefined) skipFile(t, 'clickhouse-cluster', 'OOHBID_TEST_CLICKHOUSE_URL and OOHBID_TEST_CLICKHOUSE_CLUSTER are not set: the cluster variant runs in CI (.ci/run)')
else {
  // Every test makes and drops a database ON CLUSTER through ZooKeeper: the file takes 70-80 s here, beside another.
  t.setTimeout(240_000)
  analyticsSuite(t, { server, cluster })
}
