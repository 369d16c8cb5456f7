#!/bin/sh
# The smallest CGI program: GET /cgi/hello.sh names the node that ran it.
printf 'Content-Type: text/plain\r\n\r\nhello from node %s\n' "${MURE_NODE:--}"
