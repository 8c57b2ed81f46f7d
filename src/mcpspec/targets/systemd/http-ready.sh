# ExecStartPre= of an HTTP server's forwarder (the systemd target), run by /bin/bash -c as
# one line in the server's network namespace: the forwarder starts once the server listens
# on its port there (state 0A, LISTEN, in /proc/self/net/tcp or tcp6: ProcSubset=pid hides
# /proc/net), so the first connection is not refused while the server is still starting.
# @PORT@ (decimal) and @HEX@ (the same port, 4 upper-case hex digits) are filled in by the target.
for _ in {1..600}; do /bin/grep -qE '^ *[0-9]+: [0-9A-F]+:@HEX@ [0-9A-F]+:0000 0A ' /proc/self/net/tcp /proc/self/net/tcp6 && exit 0; /bin/sleep 0.05; done; echo 'mcpspec: the server does not listen on port @PORT@' >&2; exit 1
