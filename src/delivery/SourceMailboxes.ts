/**
 * How many jobs of each source the dispatcher holds in memory, and how many it may hold: the per-source bound that
 * keeps one slow or failing endpoint from taking the memory and the claims the others need.
 *
 * A source starts at `base`. Its bound grows to `quick` once its last `base` finished jobs were each delivered at
 * their first attempt within `quickDeliveryMillis`, and falls back to `base` at the first job that was not (a retry, a
 * dead letter, a slower answer). The bound sets how many jobs a claim brings (a claim fills a mailbox back from half
 * its bound), and a claim has a fixed cost besides its rows (its transaction on the SQLite thread, waking that thread,
 * the claimer's loop on the event loop), so larger claims cut the CPU a job costs (bench/NOTES.md, "A mailbox that
 * grows"). A bigger bound for every source would cost where it buys nothing: against a refused endpoint a 1 024-job
 * mailbox keeps 1 024 jobs retrying in memory (the backlog run's RSS grows with it), and two slow sources would fill
 * `maxJobsInMemory` (2 048) where eight do at `base`. Only a source whose endpoint answers at once drains its mailbox
 * fast enough for claims to matter; a slow or failing one keeps `base`.
 */

/**
 * A first attempt answered 2xx within this is quick. Claims matter only when a mailbox drains in milliseconds (16
 * requests at a time, each answered at once); an endpoint slower than this empties `base` jobs in well over a second.
 */
export const quickDeliveryMillis = 50

/** Streaks of this many sources at most are remembered; beyond, all are forgotten (sources start at `base` again). */
const maxRemembered = 4096

export class SourceMailboxes {
  private readonly held = new Map<string, number>()
  private readonly streaks = new Map<string, number>()

  constructor(readonly base: number, readonly quick: number) {}

  /** The bound of the source's mailbox now. */
  bound(sourceId: string): number {
    return (this.streaks.get(sourceId) ?? 0) >= this.base ? this.quick : this.base
  }

  /** Jobs of the source held now. */
  count(sourceId: string): number {
    return this.held.get(sourceId) ?? 0
  }

  /** Counts one more job of the source, unless its mailbox is full: `false`, and nothing counted. */
  tryAdd(sourceId: string): boolean {
    const count = this.held.get(sourceId) ?? 0
    if (count >= this.bound(sourceId)) return false
    this.held.set(sourceId, count + 1)
    return true
  }

  /** Counts one job of the source less; `true` when its mailbox just came down to half its bound (worth a claim). */
  remove(sourceId: string): boolean {
    const count = (this.held.get(sourceId) ?? 1) - 1
    if (count <= 0) this.held.delete(sourceId)
    else this.held.set(sourceId, count)
    return count === this.bound(sourceId) >> 1
  }

  /**
   * A job of the source was delivered at its first attempt within `quickDeliveryMillis`. `true` when this made its
   * bound grow: it has room now, though it did not come down to half its old bound (worth a claim).
   */
  deliveredQuickly(sourceId: string): boolean {
    const streak = this.streaks.get(sourceId) ?? 0
    if (streak >= this.base) return false
    if (streak === 0 && this.streaks.size >= maxRemembered) this.streaks.clear()
    this.streaks.set(sourceId, streak + 1)
    return streak + 1 === this.base && this.quick > this.base
  }

  /**
   * A job of the source finished any other way: a retry, a dead letter, a slower answer. `true` when this made its
   * bound shrink: it may hold more than its bound now.
   */
  notQuick(sourceId: string): boolean {
    const shrank = this.quick > this.base && (this.streaks.get(sourceId) ?? 0) >= this.base
    this.streaks.delete(sourceId)
    return shrank
  }

  /**
   * What the next claim may take: the sources past half their bound, left out of it, and how many jobs it may bring,
   * the least room of the other sources held, so that it is rarely sent back as overflow. A source not held now may
   * still come in a claim with more than its bound; the excess goes back once, and the source is then left out until
   * it is half empty. With no other source held, `base`.
   */
  claimShape(): { readonly saturated: Array<string>; readonly room: number } {
    const saturated: Array<string> = []
    let room = Infinity
    for (const [sourceId, count] of this.held) {
      const bound = this.bound(sourceId)
      if (count > bound >> 1) saturated.push(sourceId)
      else room = Math.min(room, bound - count)
    }
    return { saturated, room: room === Infinity ? this.base : room }
  }
}
