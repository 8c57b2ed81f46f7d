# The first process of an instance that needs one (the systemd target), run as
#   /bin/bash --noprofile --norc -c <this file> mcpspec-shim [egress] [VAR=credential ...] -- COMMAND [ARG...]
# inside the sandbox, as the instance's transient user:
# - egress: socat relays 127.0.0.1:3128 in the instance's own network namespace to the
#   egress socket bound in at /run/mcpspec/egress.sock; the shim waits until it listens
#   (port 0x0C38 in state 0A, LISTEN, in /proc/self/net/tcp: ProcSubset=pid hides /proc/net).
# - VAR=credential: exports the credential's file, from $CREDENTIALS_DIRECTORY, as VAR
#   (trailing newlines dropped). socat is started first, so it never holds a secret.
# Then the shim replaces itself with the server. No value reaches a command line or the journal.
set -u
if [[ ${1-} == egress ]]; then
  shift
  /usr/bin/socat TCP-LISTEN:3128,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/run/mcpspec/egress.sock </dev/null >/dev/null &
  for ((try = 0; ; try++)); do
    /bin/grep -q ':0C38 00000000:0000 0A' /proc/self/net/tcp && break
    ((try < 200)) || { echo 'mcpspec: the egress bridge (socat) did not start' >&2; exit 1; }
    /bin/sleep 0.05
  done
fi
while (($#)) && [[ $1 != -- ]]; do
  variable=${1%%=*} credential=${1#*=}
  shift
  file=${CREDENTIALS_DIRECTORY:-/nonexistent}/$credential
  if [[ ! -f $file || ! -r $file ]]; then
    echo "mcpspec: credential $credential for $variable is missing" >&2
    exit 1
  fi
  value=$(<"$file") || exit 1
  export "$variable=$value"
done
unset variable credential file value
shift
exec "$@"
