import { Context, Duration } from "effect"
import type { Effect } from "effect"

export interface DispatcherOptions {
  /** Lease owner id, unique per process start. Default: a random UUID. */
  readonly owner?: string | undefined
  /** Requests in flight to one webhook URL at once (default 16). */
  readonly concurrencyPerEndpoint?: number | undefined
  /**
   * Jobs of one source held in memory at once: the bound of that source's mailbox. Default 256. A source whose
   * endpoint answers at once may hold `mailboxPerQuickSource` (`SourceMailboxes`).
   */
  readonly mailboxPerSource?: number | undefined
  /**
   * The bound of a source whose last `mailboxPerSource` jobs were each delivered at their first attempt within 50 ms:
   * its claims bring more jobs at a time. Default 4 × `mailboxPerSource`, at most half of `maxJobsInMemory`.
   */
  readonly mailboxPerQuickSource?: number | undefined
  /** Jobs held in memory in all: the dispatcher's memory bound whatever the backlog on disk. Default 2 048. */
  readonly maxJobsInMemory?: number | undefined
  /** Jobs claimed per store round trip at most. Default 512. */
  readonly claimBatch?: number | undefined
  /**
   * How long a claim is held before another process may take the job over: a dead process's jobs wait about this
   * long. Default 10 s, renewed every third (one statement per 500 held jobs), so a busy process keeps its jobs.
   */
  readonly lease?: Duration.Input | undefined
  /** How long the dispatcher sleeps when the outbox has nothing due (ingest in this process wakes it at once). */
  readonly idlePoll?: Duration.Input | undefined
  /** A retry due later than this goes back to the store instead of waiting in memory. Default 5 s. */
  readonly maxInlineDelay?: Duration.Input | undefined
  /** How long finished jobs wait to be written together (one transaction for all). Default 20 ms. */
  readonly flushDelay?: Duration.Input | undefined
  /** Finished jobs that are written at once, without waiting for `flushDelay`: a bound on one transaction. Default 512. */
  readonly flushSize?: number | undefined
  /**
   * How long a claim may be held back while ingest saturates this process (`YieldToIngest`, when the context has
   * it); after that one claim goes out anyway, so that a sustained load slows delivery but never stops it. `false`:
   * never held back. Default 500 ms.
   */
  readonly maxIngestYield?: Duration.Input | false | undefined
}

/**
 * What the dispatcher asks before each claim: return once the process has time for deliveries again, or after
 * `maxHold` at the latest. Ingest provides it (`overload/IngestPressure`); without it claims are never held back.
 */
export class YieldToIngest extends Context.Service<YieldToIngest, {
  readonly yieldToIngest: (maxHold: Duration.Input) => Effect.Effect<void>
}>()("hookrelay/delivery/YieldToIngest") {}

/** The options with their defaults, in the units the roles use. */
export interface Settings {
  readonly concurrencyPerEndpoint: number
  readonly mailboxPerSource: number
  readonly mailboxPerQuickSource: number
  readonly maxJobsInMemory: number
  readonly claimBatch: number
  /** Held jobs below `maxJobsInMemory` worth another claim. */
  readonly claimThreshold: number
  readonly leaseMillis: number
  readonly idlePoll: Duration.Duration
  readonly maxInlineDelay: Duration.Duration
  readonly flushDelay: Duration.Duration
  readonly flushSize: number
  readonly maxIngestYield: Duration.Duration | false
}

/** The default lease: with the expired-lease look-up every second, a dead process's jobs resume within 12 s. */
export const defaultLease = Duration.seconds(10)

const millis = (input: Duration.Input) => Duration.toMillis(Duration.fromInputUnsafe(input))

export const settings = (options: DispatcherOptions): Settings => {
  const mailboxPerSource = Math.max(1, options.mailboxPerSource ?? 256)
  const maxJobsInMemory = options.maxJobsInMemory ?? 2048
  const claimBatch = Math.min(options.claimBatch ?? 512, maxJobsInMemory)
  return {
    concurrencyPerEndpoint: Math.max(1, options.concurrencyPerEndpoint ?? 16),
    mailboxPerSource,
    mailboxPerQuickSource: Math.max(
      mailboxPerSource,
      Math.min(options.mailboxPerQuickSource ?? 4 * mailboxPerSource, maxJobsInMemory >> 1)
    ),
    maxJobsInMemory,
    claimBatch,
    claimThreshold: Math.max(1, Math.floor(claimBatch / 4)),
    leaseMillis: millis(options.lease ?? defaultLease),
    idlePoll: Duration.fromInputUnsafe(options.idlePoll ?? Duration.millis(200)),
    maxInlineDelay: Duration.fromInputUnsafe(options.maxInlineDelay ?? Duration.seconds(5)),
    flushDelay: Duration.fromInputUnsafe(options.flushDelay ?? Duration.millis(20)),
    flushSize: Math.max(1, options.flushSize ?? 512),
    maxIngestYield: options.maxIngestYield === false
      ? false
      : Duration.fromInputUnsafe(options.maxIngestYield ?? "500 millis")
  }
}
