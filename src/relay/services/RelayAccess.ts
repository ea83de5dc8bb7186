import { Context, type Effect, type Option } from "effect"
import type { StoredApiKey } from "../../store/ApiKeys.js"
import type { NewAuditEntry, StoredAuditEntry } from "../../store/AuditLog.js"
import type { StoreError } from "../../store/StoreError.js"

export type { StoredApiKey } from "../../store/ApiKeys.js"
export type { StoredAuditEntry } from "../../store/AuditLog.js"

export interface NewKeyInput {
  readonly name: string
  readonly scopes: ReadonlyArray<string>
  /** `null`: every source. */
  readonly sourceIds: ReadonlyArray<string> | null
}

export interface RelayAccessShape {
  /** A new key: its text (`hrk_…`, shown this once) and the key as stored (its hash, never the text). */
  readonly createKey: (
    input: NewKeyInput
  ) => Effect.Effect<{ readonly key: string; readonly apiKey: StoredApiKey }, StoreError>
  readonly listKeys: Effect.Effect<ReadonlyArray<StoredApiKey>, StoreError>
  /**
   * The unrevoked key whose text this is (its hash compared in constant time), its last use noted at most once a
   * minute per key and process.
   */
  readonly authenticateKey: (text: string) => Effect.Effect<Option.Option<StoredApiKey>, StoreError>
  /** Revokes a key (none when there is no such key); it is refused from the next request on. */
  readonly revokeKey: (id: string) => Effect.Effect<Option.Option<StoredApiKey>, StoreError>
  /** The source of a job, for the admin's source limits; none when there is no such job. */
  readonly jobSourceId: (jobId: string) => Effect.Effect<Option.Option<string>, StoreError>
  /** Records one admin write, stamped now. */
  readonly recordAudit: (entry: Omit<NewAuditEntry, "at">) => Effect.Effect<void, StoreError>
  /** Newest first; `before` (an entry's id) pages on. */
  readonly auditEntries: (options: {
    readonly limit: number
    readonly before?: number | undefined
  }) => Effect.Effect<ReadonlyArray<StoredAuditEntry>, StoreError>
}

/** The admin API's keys and audit log (REFERENCE §7c). */
export class RelayAccess extends Context.Service<RelayAccess, RelayAccessShape>()("hookrelay/RelayAccess") {}
