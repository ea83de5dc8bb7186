/** The client's version, sent in `context.library.version`; kept equal to package.json's by a test. */
export const version = "0.1.0"

/** `context.library` of every message the client sends. */
export const library = { name: "hookrelay", version } as const
