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
    const read = cpuOfStat(`/proc/self/task/${tid}/stat`)
    // Undefined: the thread ended between the listing and the read.
    if (read !== undefined) {
      times.set(tid, { name: tid === String(process.pid) ? "main" : read.name, micros: read.micros })
    }
  }
  return times
}

/** The command name and CPU time (user + system, µs) in a proc(5) `stat` file; `undefined` once it is gone. */
const cpuOfStat = (path: string): { readonly name: string; readonly micros: number } | undefined => {
  let stat: string
  try {
    stat = readFileSync(path, "utf8")
  } catch {
    return undefined
  }
  const nameEnd = stat.lastIndexOf(")")
  const fields = stat.slice(nameEnd + 2).split(" ")
  // Fields 14 and 15 of proc(5) (utime, stime) are the 12th and 13th after the name.
  const ticks = Number(fields[11]) + Number(fields[12])
  return { name: stat.slice(stat.indexOf("(") + 1, nameEnd), micros: ticks * microsPerTick }
}

/** CPU time (µs) of process `pid`'s threads: its main thread's (its id is the pid) and the others' together. */
export const processThreadsMicros = (pid: number): { readonly main: number; readonly others: number } => {
  let main = 0
  let others = 0
  let tasks: Array<string> = []
  try {
    tasks = readdirSync(`/proc/${pid}/task`)
  } catch {
    // Not Linux, or the process is gone: no split.
  }
  for (const tid of tasks) {
    const micros = cpuOfStat(`/proc/${pid}/task/${tid}/stat`)?.micros ?? 0
    if (tid === String(pid)) main += micros
    else others += micros
  }
  return { main, others }
}

/** CPU time (µs) of every process of this machine named `name` (a database server's processes, say). */
export const processesMicros = (name: string): number => {
  let micros = 0
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue
    const read = cpuOfStat(`/proc/${pid}/stat`)
    if (read?.name === name) micros += read.micros
  }
  return micros
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
