# ExecStartPre= of a server's squid (the systemd target), run by /bin/bash -c:
# empties squid's log, so that squid-ready.sh reads only what this start wrote.
# @LOG@ (the log's path) is filled in by the target.
: > @LOG@
