import { version } from "../domain/Version.js"

export { version }

/** `context.library` of every message the client sends. */
export const library = { name: "hookrelay", version } as const
