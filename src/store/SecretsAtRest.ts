import { Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { columnSecrets, mapColumnSecrets } from "./SealedSettings.js"
import { isSealed, type SecretBoxShape, SecretKeysError } from "./SecretBox.js"
import { StoreError } from "./StoreError.js"

/**
 * The stored secrets checked and sealed (docs/SECURITY.md). `plain`, at every start: every sealed value must open with
 * the configured keys (else nothing is written and the start fails), then the plain values an earlier build left are
 * sealed. `all`, a re-key: besides, every value sealed with another key is sealed again with the first.
 */
export type SealScope = "plain" | "all"

export interface SealReport {
  /** Sources read. */
  readonly sources: number
  /** Values sealed (plain ones, and with `all` those under another key). */
  readonly sealed: number
  /** Values still plain text: there is no key to seal them with. */
  readonly plain: number
}

interface Row {
  readonly id: string
  readonly webhooks: string | null
  readonly destinations: string | null
}

const parse = (row: Row, text: string | null): Effect.Effect<unknown, StoreError> =>
  text === null ? Effect.succeed(null) : Effect.try({
    try: () => JSON.parse(text) as unknown,
    // The text is not quoted: it holds secrets.
    catch: () =>
      new StoreError({ operation: "sealSecrets", cause: new Error(`source "${row.id}": stored JSON is malformed`) })
  })

/** In one transaction, the rows locked on PostgreSQL: checks first, writes only when every sealed value opened. */
export const sealStoredSecrets = (
  sql: SqlClient.SqlClient,
  box: SecretBoxShape,
  scope: SealScope
): Effect.Effect<SealReport, StoreError | SecretKeysError> => {
  const lock = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
  return sql.withTransaction(Effect.gen(function*() {
    const rows = yield* sql<Row>`SELECT id, webhooks, destinations FROM sources ORDER BY id ${lock}`
    const parsed: Array<{ readonly row: Row; readonly columns: readonly [unknown, unknown] }> = []
    const opened = new Map<string, string>()
    let plain = 0
    for (const row of rows) {
      const columns = [yield* parse(row, row.webhooks), yield* parse(row, row.destinations)] as const
      for (const value of [...columnSecrets(columns[0]), ...columnSecrets(columns[1])]) {
        if (!isSealed(value)) {
          plain += 1
          continue
        }
        if (opened.has(value)) continue
        opened.set(
          value,
          yield* box.open(value).pipe(
            Effect.mapError((error) => new SecretKeysError({ message: `source "${row.id}": ${error.message}` }))
          )
        )
      }
      parsed.push({ row, columns })
    }
    if (box.keyIds.length === 0) return { sources: rows.length, sealed: 0, plain }
    let sealed = 0
    const reseal = (value: string): string => {
      if (!isSealed(value)) {
        sealed += 1
        return box.seal(value)
      }
      if (scope === "plain" || box.sealedWithFirstKey(value)) return value
      sealed += 1
      return box.seal(opened.get(value)!)
    }
    for (const { columns, row } of parsed) {
      const before = sealed
      const [webhooks, destinations] = columns.map((column) => mapColumnSecrets(column, reseal))
      if (sealed === before) continue
      yield* sql`
        UPDATE sources SET
          webhooks = ${webhooks === null ? null : JSON.stringify(webhooks)},
          destinations = ${destinations === null ? null : JSON.stringify(destinations)}
        WHERE id = ${row.id}`
    }
    return { sources: rows.length, sealed, plain: 0 }
  })).pipe(
    Effect.mapError((error) =>
      error instanceof SecretKeysError || error instanceof StoreError
        ? error
        : new StoreError({ operation: "sealSecrets", cause: error })
    )
  )
}
