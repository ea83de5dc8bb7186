// When a build output is older than its sources: the check `npm start` runs before building.
import { readdirSync, statSync } from "node:fs"
import * as Path from "node:path"

/** The newest modification time of a file, or of any file below a directory. */
export const newestModification = (path: string): number => {
  const stats = statSync(path)
  if (!stats.isDirectory()) return stats.mtimeMs
  return Math.max(0, ...readdirSync(path).map((name) => newestModification(Path.join(path, name))))
}

/** When `output` was written, or undefined when it does not exist. */
export const writtenAt = (output: string): number | undefined => {
  try {
    return statSync(output).mtimeMs
  } catch {
    return undefined
  }
}

/** Whether `output` is missing or older than one of `sources`. */
export const isStale = (output: string, sources: ReadonlyArray<string>): boolean => {
  const built = writtenAt(output)
  return built === undefined || sources.some((source) => newestModification(source) > built)
}
