# The entrypoint of a compose service that needs one (the compose target), run by the image's /bin/sh as
#   /bin/sh /mcpspec/entrypoint.sh [lifetime=SECONDS] [VAR=FILE ...] -- COMMAND [ARG...]
# - VAR=FILE: exports the secret file FILE (under /run/secrets) as VAR, trailing newlines dropped,
#   so a secret given `as: {env: ...}` never appears in the compose file or the container's config.
# - lifetime=SECONDS: the server runs as a child; after SECONDS it gets SIGTERM, 5 s later SIGKILL
#   (a process in a container's PID 1 ignores signals it has no handler for, so the shim stays PID 1).
# Then the shim runs the server. It needs /bin/sh and, with a lifetime, sleep.
set -u
lifetime=
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case $1 in
    lifetime=*) lifetime=${1#lifetime=} ;;
    *=*)
      variable=${1%%=*} file=${1#*=}
      if [ ! -f "$file" ] || [ ! -r "$file" ]; then
        echo "mcpspec: the secret file for $variable is missing" >&2
        exit 1
      fi
      value=$(cat -- "$file"; echo .) || exit 1
      value=${value%.}
      while [ "${value%
}" != "$value" ]; do value=${value%
}; done
      export "$variable=$value"
      ;;
    *) echo "mcpspec: unexpected shim argument" >&2; exit 2 ;;
  esac
  shift
done
unset variable file value
[ $# -gt 0 ] && shift
if [ -z "$lifetime" ]; then
  exec "$@"
fi
# A background command of a non-interactive shell reads /dev/null unless told otherwise: hand it the shim's stdin.
exec 3<&0
"$@" <&3 3<&- &
child=$!
exec 3<&-
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
(sleep "$lifetime"; kill -TERM "$child" 2>/dev/null; sleep 5; kill -KILL "$child" 2>/dev/null) </dev/null >/dev/null 2>&1 &
timer=$!
while :; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || break
done
kill "$timer" 2>/dev/null
exit "$status"
