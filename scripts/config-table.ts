// Writes the README's configuration table from the server's one declaration of its environment
// (src/config/Environment.ts), between the two markers around it; test/package/Configuration.test.ts checks they match.
// Run after changing that table: `npm run config:table`.
import { readFileSync, writeFileSync } from "node:fs"
import { markdownTable } from "../src/config/Environment.js"
import { replaceTable } from "./configTableMarkers.js"

const path = new URL("../README.md", import.meta.url)
const before = readFileSync(path, "utf8")
const after = replaceTable(before, markdownTable())
if (after !== before) writeFileSync(path, after)
console.log(
  after === before ? "README.md: the configuration table is up to date" : "README.md: configuration table written"
)
