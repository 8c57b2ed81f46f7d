# ExecStartPost= of a server's squid (the systemd target), run by /bin/bash -c as one line:
# ready once this squid says it listens on its own port, in its own log (emptied by
# squid-log.sh before it starts). Anything else listening there (another project's squid
# whose port hashes alike) must not pass for it; a FATAL line ends the wait at once.
# @LOG@ (the log's path) and @PORT@ (squid's port) are filled in by the target.
for _ in {1..300}; do /bin/grep -q FATAL @LOG@ && break; /bin/grep -q 'Accepting HTTP Socket connections at .* local=127.0.0.1:@PORT@ ' @LOG@ && exit 0; /bin/sleep 0.1; done; echo 'squid did not start listening on 127.0.0.1:@PORT@' >&2; exit 1
