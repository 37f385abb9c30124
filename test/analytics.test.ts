import t from 'tap'
import { analyticsSuite } from './helpers/analytics-suite.js'

// The analytics suite (test/helpers/analytics-suite.ts) on embedded chDB, what `npm start` runs.
analyticsSuite(t, {})
