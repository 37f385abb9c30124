import t from 'tap'
import { analyticsSuite } from './helpers/analytics-suite.js'
import { skipFile } from './helpers/required.js'

// The analytics suite (test/helpers/analytics-suite.ts) on a ClickHouse server: CI starts one (.ci/run).
const server = process.env.OOHBID_TEST_CLICKHOUSE_URL
if (server === undefined) skipFile(t, 'clickhouse-server', 'OOHBID_TEST_CLICKHOUSE_URL is not set: the ClickHouse server variant runs in CI (.ci/run starts one)')
else analyticsSuite(t, { server })
