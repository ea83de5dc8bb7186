// The server entrypoint lands with the server issue; until then `npm start` says what exists.
console.log(
  "hookrelay: the HTTP server is not built yet. The domain schemas and the delivery program are available as a library; run `npm test`."
)
