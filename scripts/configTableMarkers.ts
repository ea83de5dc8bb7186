// Where the README's generated configuration table sits: between these two comments.
export const tableStart =
  "<!-- the server's configuration table, from src/config/Environment.ts: npm run config:table -->"
export const tableEnd = "<!-- end of the configuration table -->"

/** The text between the markers, without the newlines that frame it; undefined when a marker is missing. */
export const currentTable = (readme: string): string | undefined => {
  const start = readme.indexOf(tableStart)
  const end = readme.indexOf(tableEnd)
  if (start < 0 || end < start) return undefined
  return readme.slice(start + tableStart.length, end).trim()
}

export const replaceTable = (readme: string, table: string): string => {
  const start = readme.indexOf(tableStart)
  const end = readme.indexOf(tableEnd)
  if (start < 0 || end < start) throw new Error(`README.md lacks the markers ${tableStart} … ${tableEnd}`)
  return `${readme.slice(0, start + tableStart.length)}\n\n${table}\n\n${readme.slice(end)}`
}
