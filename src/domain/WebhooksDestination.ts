/**
 * The id of the destination a source's `webhooks` object is (REFERENCE §1a): every job stored before destinations
 * existed is for it. A module of its own, importing nothing: the SQLite thread reads it too.
 */
export const webhooksDestinationId = "webhooks"
