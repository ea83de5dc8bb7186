import { Context, Effect } from "effect"
import { num } from "./Rows.js"
import type { StoreError } from "./StoreError.js"
import { fail, type StoreKit } from "./StoreKit.js"

/** One admin write as recorded: who, what route, on what, and how it ended. Never a body or a secret. */
export interface NewAuditEntry {
  readonly at: number
  /** `null` for the bootstrap token (HOOKRELAY_ADMIN_TOKEN). */
  readonly keyId: string | null
  readonly keyName: string
  readonly method: string
  /** The route's pattern, `/admin/sources/{sourceId}`. */
  readonly route: string
  readonly path: string
  readonly sourceId: string | null
  readonly destinationId: string | null
  readonly address: string | null
  readonly status: number
}

export interface StoredAuditEntry extends NewAuditEntry {
  /** Grows with every entry: newest is highest. */
  readonly id: number
}

export interface AuditLogShape {
  readonly appendAudit: (entry: NewAuditEntry) => Effect.Effect<void, StoreError>
  /** Newest first; `before` (an entry's id) pages on. */
  readonly listAudit: (options: {
    readonly limit: number
    readonly before?: number | undefined
  }) => Effect.Effect<ReadonlyArray<StoredAuditEntry>, StoreError>
}

/** The admin API's audit log (REFERENCE §7c). */
export class AuditLog extends Context.Service<AuditLog, AuditLogShape>()("hookrelay/store/AuditLog") {}

interface AuditRow {
  readonly id: unknown
  readonly at: unknown
  readonly key_id: string | null
  readonly key_name: string
  readonly method: string
  readonly route: string
  readonly path: string
  readonly source_id: string | null
  readonly destination_id: string | null
  readonly address: string | null
  readonly status: unknown
}

const toEntry = (row: AuditRow): StoredAuditEntry => ({
  id: num(row.id),
  at: num(row.at),
  keyId: row.key_id,
  keyName: row.key_name,
  method: row.method,
  route: row.route,
  path: row.path,
  sourceId: row.source_id,
  destinationId: row.destination_id,
  address: row.address,
  status: num(row.status)
})

export const make = ({ reads, sql }: StoreKit): AuditLogShape => {
  const appendAudit = Effect.fn("Store.appendAudit")(
    function*(entry: NewAuditEntry) {
      yield* sql`INSERT INTO audit_log ${
        sql.insert({
          at: entry.at,
          key_id: entry.keyId,
          key_name: entry.keyName,
          method: entry.method,
          route: entry.route,
          path: entry.path,
          source_id: entry.sourceId,
          destination_id: entry.destinationId,
          address: entry.address,
          status: entry.status
        })
      }`
    },
    fail("appendAudit")
  )

  const listAudit = Effect.fn("Store.listAudit")(
    function*(options: { readonly limit: number; readonly before?: number | undefined }) {
      const limit = Math.max(0, Math.floor(options.limit))
      const rows = options.before === undefined
        ? yield* reads<AuditRow>`SELECT * FROM audit_log ORDER BY id DESC LIMIT ${limit}`
        : yield* reads<AuditRow>`SELECT * FROM audit_log WHERE id < ${options.before} ORDER BY id DESC LIMIT ${limit}`
      return rows.map(toEntry)
    },
    fail("listAudit")
  )

  return { appendAudit, listAudit }
}
