/**
 * The SQLite thread's memory of the message ids in `message_id_log` not yet merged into `seen_messages` (migration 9):
 * with it, dedupe reads the index only for what the merge put there, and ingest writes no index entry by message id.
 *
 * What an enqueue adds is staged until its transaction commits: an ingest request that fails rolls back in SQLite, and
 * its ids must not stay "seen" here (the client's retry would be refused as a duplicate and the message lost). Staged
 * ids are seen by the requests after it in the same group commit, as their rows are. It imports no package: it runs on
 * the SQLite thread (`SqliteThreadProgram`).
 */
export class RecentMessageIds {
  private readonly committed = new Map<string, number>()
  private readonly staged = new Map<string, number>()
  private readonly stagedOrder: Array<string> = []

  /** When the message id was last seen by the source, committed or staged; undefined when not since the last merge. */
  lastSeen(sourceId: string, messageId: string): number | undefined {
    const key = keyOf(sourceId, messageId)
    return this.staged.get(key) ?? this.committed.get(key)
  }

  stage(sourceId: string, messageId: string, seenAt: number): void {
    const key = keyOf(sourceId, messageId)
    this.staged.set(key, seenAt)
    this.stagedOrder.push(key)
  }

  /** A position in the staged ids, to roll back to when the request staged after it fails. */
  mark(): number {
    return this.stagedOrder.length
  }

  rollbackTo(mark: number): void {
    for (let i = mark; i < this.stagedOrder.length; i++) this.staged.delete(this.stagedOrder[i]!)
    this.stagedOrder.length = mark
  }

  /** The staged ids' transaction committed. */
  commit(): void {
    for (const [key, seenAt] of this.staged) this.committed.set(key, seenAt)
    this.staged.clear()
    this.stagedOrder.length = 0
  }

  /** The id's log row was merged into `seen_messages`: forgotten, unless it was seen again since. */
  forget(sourceId: string, messageId: string, seenAt: number): void {
    const key = keyOf(sourceId, messageId)
    if (this.committed.get(key) === seenAt) this.committed.delete(key)
  }

  get size(): number {
    return this.committed.size
  }
}

const keyOf = (sourceId: string, messageId: string) => `${sourceId}\u0000${messageId}`
