import { claimSuite } from "./storeClaimSuite.js"
import { completionsSuite } from "./storeCompletionsSuite.js"
import { deadLettersSuite } from "./storeDeadLettersSuite.js"
import { enqueueSuite } from "./storeEnqueueSuite.js"
import { fanOutSuite } from "./storeFanOutSuite.js"
import type { FreshStore, SuiteOptions } from "./storeFixtures.js"
import { retentionSuite } from "./storeRetentionSuite.js"
import { sourcesSuite } from "./storeSourcesSuite.js"

export { body, entry, source, survivesReopen, T0 } from "./storeFixtures.js"
export type { SuiteOptions } from "./storeFixtures.js"

/**
 * The store's behaviour, written once and run against every implementation, one file per concern. `fresh` must build
 * a new, empty store each time it is provided (every test provides it once), so tests share no rows.
 */
export const storeSuite = (fresh: FreshStore, options: SuiteOptions) => {
  sourcesSuite(fresh)
  enqueueSuite(fresh)
  fanOutSuite(fresh)
  claimSuite(fresh, options)
  completionsSuite(fresh)
  deadLettersSuite(fresh)
  retentionSuite(fresh)
}
