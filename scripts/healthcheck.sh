#!/usr/bin/env bash
# The image's HEALTHCHECK: GET /healthz on 127.0.0.1:$PORT through bash's /dev/tcp, so that no Node process starts
# every 10 s (the slim image has neither curl nor wget). Exits 0 on a 200, 1 otherwise.
exec 3<>"/dev/tcp/127.0.0.1/${PORT:-8080}" || exit 1
printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3
read -r -t 2 _ status _ <&3 || exit 1
[ "$status" = 200 ]
