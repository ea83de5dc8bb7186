import type { CompleteResult, EnqueueResult } from "../Model.js"
import type { ClaimTuple, makeJobIds } from "../Rows.js"
import type { RecentMessageIds } from "./RecentMessageIds.js"
import { prepareClaim } from "./SqliteClaim.js"
import { prepareComplete, preparePurge } from "./SqliteComplete.js"
import type { Database } from "./SqliteDriver.js"
import { prepareEnqueue } from "./SqliteEnqueue.js"
import { type MergeProgress, type MergeRequest, prepareMerge } from "./SqliteMessageIdMerge.js"
import type { ClaimRequest, CompleteRequest, EnqueueRequest, PurgeRequest } from "./SqliteRequests.js"

/** The store's hot transactions, each one synchronous call on the connection. */
export interface Transactions {
  /** One request's dedupe, job rows and usage count. */
  readonly enqueue: (request: EnqueueRequest) => EnqueueResult
  /** Due jobs (expired leases first when asked), leased to the owner, as rows in no particular order. */
  readonly claim: (request: ClaimRequest) => Array<ClaimTuple>
  /** A batch of finished jobs, their attempts and usage, lease-guarded. */
  readonly complete: (request: CompleteRequest) => CompleteResult
  /** One purge chunk; answers how many jobs it deleted (fewer than `limit`: nothing older is left). */
  readonly purge: (request: PurgeRequest) => number
  /** One step of merging the message id log (see `MergeRequest`). */
  readonly merge: (request: MergeRequest) => MergeProgress
}

/** Prepares the hot transactions' statements on `db` (migrated); `newJobIds` names the jobs this connection inserts. */
export const prepareTransactions = (
  db: Database,
  newJobIds: ReturnType<typeof makeJobIds>,
  recent: RecentMessageIds
): Transactions => {
  const { enqueue, forgetEdges } = prepareEnqueue(db, newJobIds, recent)
  return {
    enqueue,
    claim: prepareClaim(db),
    complete: prepareComplete(db),
    purge: preparePurge(db),
    merge: prepareMerge(db, recent, forgetEdges)
  }
}
