import { readdirSync, readFileSync } from "node:fs"

/**
 * CPU time of each of this process's threads (Linux `/proc/self/task`), in µs, keyed by thread id. `process.cpuUsage`
 * adds every thread together; the split tells whether a phase is bound by the main thread, the SQLite thread or GC.
 */
export type ThreadTimes = ReadonlyMap<string, { readonly name: string; readonly micros: number }>

// Clock ticks are 100 per second on every Linux this runs on (USER_HZ); node has no sysconf to ask.
const microsPerTick = 10_000

export const threadTimes = (): ThreadTimes => {
  const times = new Map<string, { name: string; micros: number }>()
  let tasks: Array<string>
  try {
    tasks = readdirSync("/proc/self/task")
  } catch {
    return times
  }
  for (const tid of tasks) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8")
      const nameEnd = stat.lastIndexOf(")")
      const fields = stat.slice(nameEnd + 2).split(" ")
      // Fields 14 and 15 of proc(5) (utime, stime) are the 12th and 13th after the name.
      const ticks = Number(fields[11]) + Number(fields[12])
      const name = tid === String(process.pid) ? "main" : stat.slice(stat.indexOf("(") + 1, nameEnd)
      times.set(tid, { name, micros: ticks * microsPerTick })
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return times
}

/**
 * CPU µs per job of the main thread and of each other thread that ran between two readings, largest first. Node names
 * every thread "node" (the SQLite thread, the checkpoint thread, V8's GC helpers, libuv's pool), so the others are told
 * apart by size: in the dispatcher runs the SQLite thread is the largest of them.
 */
export const perJobByThread = (before: ThreadTimes, after: ThreadTimes, jobs: number) => {
  let main = 0
  const others: Array<number> = []
  for (const [tid, { micros, name }] of after) {
    const used = (micros - (before.get(tid)?.micros ?? 0)) / jobs
    if (name === "main") main = used
    else if (used > 0) others.push(used)
  }
  return { main, others: others.sort((a, b) => b - a) }
}

export const formatPerThread = ({ main, others }: ReturnType<typeof perJobByThread>) =>
  `main ${main.toFixed(0)}; other threads ${others.map((micros) => micros.toFixed(0)).join(", ")}`
