/**
 * The jobs a pending row carries, not made yet (migration 21): its message's other destinations, the k-th one's job
 * id `<row id>.<k>`. Until the row is claimed they read as pending copies of it (the row itself is pending, never
 * attempted), so a message's jobs look the same before they are made and after.
 */

interface Carrier {
  readonly id: string
  readonly destination_id: string
  readonly fan_out?: string | null | undefined
}

/** The id of the job of a row's k-th carried destination (from 1). */
export const carriedJobId = (rowId: string, k: number): string => `${rowId}.${k}`

/** What a message's row carries for its destinations after the first (`fan_out`): their ids as JSON, or null. */
export const carriedDestinations = (destinations: ReadonlyArray<string>): string | null =>
  destinations.length > 1 ? JSON.stringify(destinations.slice(1)) : null

/** Every job id of a message whose row is `rowId`, one per destination: the row's, then the carried ones. */
export const jobIdsOf = (rowId: string, destinations: number): Array<string> => {
  const ids = [rowId]
  for (let k = 1; k < destinations; k++) ids.push(carriedJobId(rowId, k))
  return ids
}

/** The row that carries (or carried) a job, when the job is a carried one. */
export const carrierOf = (jobId: string): string | undefined => {
  const dot = jobId.lastIndexOf(".")
  return dot > 0 && /^\d+$/.test(jobId.slice(dot + 1)) ? jobId.slice(0, dot) : undefined
}

/** `rows` with each one's carried jobs after it. */
export const withCarriedJobs = <Row extends Carrier>(rows: ReadonlyArray<Row>): Array<Row> => {
  const all: Array<Row> = []
  for (const row of rows) {
    all.push(row)
    if (row.fan_out === null || row.fan_out === undefined) continue
    const destinations = JSON.parse(row.fan_out) as Array<string>
    destinations.forEach((destinationId, k) =>
      all.push({ ...row, id: carriedJobId(row.id, k + 1), destination_id: destinationId, fan_out: null })
    )
  }
  return all
}
