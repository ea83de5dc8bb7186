/** hookrelay's version: the server reports it, the client sends it in `context.library.version`. Equal to package.json's. */
export const version = "0.1.0"
