# ---- mcpspec bwrap launcher runtime (constant; the per-server part is above) ----
# Every value above is quoted by the generator; nothing below interpolates spec text.

status=0
die() { printf 'mcpspec %s: %s\n' "$SERVER" "$1" >&2; status=125; exit 125; }

for tool in bwrap setpriv "${NEEDS[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed (it enforces this server's sandbox)"
done

agent=${MCPSPEC_AGENT:-$DEFAULT_AGENT}
if ((${#AGENTS[@]})); then
  case " ${AGENTS[*]} " in *" $agent "*) ;; *) die "set MCPSPEC_AGENT to one of: ${AGENTS[*]}" ;; esac
elif [[ ! $agent =~ ^[a-z]([a-z0-9-]{0,38}[a-z0-9])?$ ]]; then
  die "MCPSPEC_AGENT must be a lowercase name"
fi
run_id=${MCPSPEC_RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)-$$}
[[ $run_id =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ ]] || die "MCPSPEC_RUN_ID must match [A-Za-z0-9][A-Za-z0-9._-]{0,63}"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)

if ((IDLE_SECONDS)) && [[ -z ${MCPSPEC_RELAYED:-} ]]; then
  # socat relays the client's stdio to a second run of this launcher and ends the session
  # after IDLE_SECONDS without a byte in either direction: the server reads end-of-input,
  # and the inner launcher gets SIGTERM when socat exits. Only fixed words reach socat's
  # address syntax (server names are [a-z0-9-]).
  export MCPSPEC_AGENT=$agent MCPSPEC_RUN_ID=$run_id MCPSPEC_RELAYED=1
  cd -- "$here"
  exec socat -T "$IDLE_SECONDS" STDIO "EXEC:setpriv --pdeathsig TERM ./$SERVER.sh,pipes"
fi

if ((EUID == 0)); then
  # Root launches the sandbox as the spec's uid, so the sandbox is never host root.
  as_sandbox_user=(setpriv --reuid="$SANDBOX_UID" --regid="$SANDBOX_GID" --clear-groups --inh-caps=-all --)
  own() { chown -- "$SANDBOX_UID:$SANDBOX_GID" "$@"; }
else
  as_sandbox_user=()
  own() { :; }
fi

args=(--unshare-all --unshare-user --disable-userns --die-with-parent --new-session --cap-drop ALL
  --uid "$SANDBOX_UID" --gid "$SANDBOX_GID" --hostname "mcp-$SERVER")
((SHARE_NET)) && args+=(--share-net)
args+=(--ro-bind /usr /usr)
for top in bin sbin lib lib64 lib32 libx32; do
  if [[ -L /$top ]]; then args+=(--symlink "$(readlink "/$top")" "/$top")
  elif [[ -d /$top ]]; then args+=(--ro-bind "/$top" "/$top"); fi
done
for etc in ld.so.cache ld.so.conf ld.so.conf.d alternatives ssl/certs ssl/openssl.cnf ca-certificates localtime; do
  args+=(--ro-bind-try "/etc/$etc" "/etc/$etc")
done
exec 3< <(printf 'mcp:x:%s:%s::/nonexistent:/usr/sbin/nologin\n' "$SANDBOX_UID" "$SANDBOX_GID")
exec 4< <(printf 'mcp:x:%s:\n' "$SANDBOX_GID")
args+=(--ro-bind-data 3 /etc/passwd --ro-bind-data 4 /etc/group --proc /proc --dev /dev
  --size 67108864 --perms 1777 --tmpfs /tmp --dir /run/mcpspec)

run_dir=
prepare_run_dir() {
  [[ -n $run_dir ]] && return
  local parent=$WORKSPACE_ROOT
  if [[ ! -d $parent ]]; then mkdir -p -m 0711 -- "$parent"; fi
  ((PER_AGENT)) && parent=$parent/$agent
  for dir in "$parent" "$parent/$run_id"; do
    [[ -L $dir ]] && die "refusing $dir: it is a symbolic link"
    if [[ ! -d $dir ]]; then mkdir -m 0700 -- "$dir" && own "$dir"; fi
  done
  run_dir=$parent/$run_id
}
workspace() { # MODE DIR TARGET
  prepare_run_dir
  local path=$run_dir/$2
  [[ -L $path ]] && die "refusing $path: it is a symbolic link"
  if [[ ! -d $path ]]; then mkdir -m 0700 -- "$path" && own "$path"; fi
  if [[ $1 == rw ]]; then args+=(--bind "$path" "$3"); else args+=(--ro-bind "$path" "$3"); fi
}
scratch() { args+=(--size "$1" --perms 0700 --tmpfs "$2"); }  # BYTES TARGET
host_path() { # MODE SOURCE TARGET
  [[ -e $2 ]] || die "mount source $2 does not exist"
  if [[ $1 == rw ]]; then args+=(--bind "$2" "$3"); else args+=(--ro-bind "$2" "$3"); fi
}
home_path() { [[ -n ${HOME:-} ]] || die "HOME is not set (a mount is under ~)"; host_path "$1" "$HOME/$2" "$3"; }

# Secrets reach the sandbox through pipes: never an argument, never this script.
env_shim=
secret_fd=
secret_source() { # NAME PROVIDER REF -> opens $secret_fd on the value
  local fd
  case $2 in
    env) [[ $3 =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "secret $1: bad variable name"
         [[ -n ${!3+set} ]] || die "secret $1: environment variable $3 is not set"
         exec {fd}< <(printf '%s' "${!3}") ;;
    file) [[ -r $3 ]] || die "secret $1: cannot read $3"
          exec {fd}< <(cat -- "$3") ;;
    home) [[ -n ${HOME:-} && -r $HOME/$3 ]] || die "secret $1: cannot read ~/$3"
          exec {fd}< <(cat -- "$HOME/$3") ;;
    credential) [[ -r ${CREDENTIALS_DIRECTORY:-/nonexistent}/$3 ]] || die "secret $1: no systemd credential $3"
          exec {fd}< <(cat -- "$CREDENTIALS_DIRECTORY/$3") ;;
    *) die "secret $1: unknown provider $2" ;;
  esac
  secret_fd=$fd
}
secret_file() { # NAME PROVIDER REF TARGET
  secret_source "$1" "$2" "$3"
  args+=(--perms 0400 --ro-bind-data "$secret_fd" "$4")
}
secret_env() { # NAME PROVIDER REF VARIABLE
  [[ $4 =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "secret $1: bad variable name"
  secret_source "$1" "$2" "$3"
  env_shim+="$4=\$(cat <&$secret_fd); exec $secret_fd<&-; export $4; "
}

if [[ $ENV_MODE != all ]]; then args+=(--clearenv); fi
setenv() { args+=(--setenv "$1" "$2"); }
inherit() { if [[ -n ${!1+set} ]]; then args+=(--setenv "$1" "${!1}"); fi; }
mask() { # COMMAND: hide a denied command (a name in the PATH directories, or an absolute path)
  if [[ $1 == /* ]]; then
    if [[ -e $1 ]]; then args+=(--ro-bind /dev/null "$1"); fi
    return
  fi
  for dir in /usr/local/bin /usr/local/sbin /usr/bin /usr/sbin /bin /sbin; do
    [[ -L $dir ]] && continue  # /bin -> usr/bin: the /usr entry covers it
    if [[ -e $dir/$1 ]]; then args+=(--ro-bind /dev/null "$dir/$1"); fi
  done
}

declare_sandbox

state= squid_pid= bridge_pid= child= watchdog=
cleanup() {
  # Finish the cleanup even when the client signals the whole process group again.
  trap - EXIT
  trap '' INT TERM HUP
  set +e
  [[ -n $watchdog ]] && kill -KILL "$watchdog" 2>/dev/null
  [[ -n $child ]] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
  [[ -n $bridge_pid ]] && kill -TERM -- "-$bridge_pid" 2>/dev/null
  if [[ -n $squid_pid ]]; then
    # squid writes each access_log line as it happens (buffered_logs off), so a hard stop loses nothing.
    kill -KILL "$squid_pid" 2>/dev/null
    wait "$squid_pid" 2>/dev/null
  fi
  declare -F audit >/dev/null && audit
  [[ -n $state ]] && rm -rf -- "$state"
  exit "$status"
}
trap cleanup EXIT
# Until the sandbox is running a signal is only recorded; the launch section acts on it.
stopping=0
trap 'status=143; stopping=1' TERM
trap 'status=130; stopping=1' INT
trap 'status=129; stopping=1' HUP
state=$(mktemp -d "/tmp/mcpspec-$SERVER-$run_id.XXXXXXXX")

start_egress_proxy() {
  chmod 0711 "$state"
  mkdir -m 0700 -- "$state/squid" "$state/sock"
  own "$state/sock"
  local as_proxy_user=()
  if ((EUID == 0)); then
    chown proxy: "$state/squid"
    as_proxy_user=(setpriv --reuid=proxy --regid=proxy --init-groups --inh-caps=-all --)
  fi
  local port attempt hosts=${MCPSPEC_EGRESS_HOSTS_FILE:-/etc/hosts}
  [[ $hosts =~ ^/[A-Za-z0-9/._-]+$ && -r $hosts ]] || die "MCPSPEC_EGRESS_HOSTS_FILE must be a readable absolute path"
  for attempt in $(seq 20); do
    port=$((20000 + RANDOM % 40000))
    {
      printf 'http_port 127.0.0.1:%s\n' "$port"
      printf 'pid_filename %s/squid/squid.pid\ncache_log %s/squid/cache.log\n' "$state" "$state"
      printf 'coredump_dir %s/squid\nhosts_file %s\n' "$state" "$hosts"
      cat -- "$here/$SERVER.squid.conf"
      printf 'access_log stdio:%s/squid/access.log mcpspec\n' "$state"
    } > "$state/squid.conf"
    chmod 0644 "$state/squid.conf"
    # A root launcher starts squid as the proxy user: squid dropping privileges itself would
    # clear the parent-death signal that stops it if this launcher is killed outright.
    "${as_proxy_user[@]}" setpriv --pdeathsig KILL -- squid -N -f "$state/squid.conf" >>"$state/proxy.log" 2>&1 &
    squid_pid=$!
    for _ in $(seq 200); do
      grep -qs "Accepting HTTP Socket connections at.*127.0.0.1:$port" "$state/squid/cache.log" && break 2
      kill -0 "$squid_pid" 2>/dev/null || break
      sleep 0.05
    done
    kill -KILL "$squid_pid" 2>/dev/null; wait "$squid_pid" 2>/dev/null; squid_pid=
  done
  [[ -n $squid_pid ]] || die "the egress proxy (squid) did not start; see squid's log"
  local sock=$state/sock/egress.sock owner=
  ((EUID == 0)) && owner=",user=$SANDBOX_UID,group=$SANDBOX_GID"
  setsid setpriv --pdeathsig KILL -- socat "UNIX-LISTEN:$sock,fork,mode=0600$owner" "TCP:127.0.0.1:$port" >>"$state/proxy.log" 2>&1 &
  bridge_pid=$!
  for _ in $(seq 200); do [[ -S $sock ]] && break; sleep 0.02; done
  [[ -S $sock ]] || die "the egress bridge (socat) did not start"
  args+=(--bind "$sock" /run/mcpspec/egress.sock --ro-bind "$(command -v socat)" /run/mcpspec/socat)
  for var in HTTP_PROXY HTTPS_PROXY http_proxy https_proxy; do args+=(--setenv "$var" http://127.0.0.1:3128); done
  env_shim+='/run/mcpspec/socat TCP-LISTEN:3128,bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:/run/mcpspec/egress.sock & '
  env_shim+='for _ in $(seq 100); do grep -q ":0C38 00000000:0000 0A" /proc/net/tcp && break; sleep 0.02; done; '
}
((PROXY)) && start_egress_proxy

json_string() { # a value known to hold only [A-Za-z0-9._:/@+-]
  printf '"%s"' "$1"
}
egress_log() {
  [[ -s $state/squid/access.log ]] || { printf '[]'; return; }
  awk 'BEGIN { first = 1; printf "[" }
    $2 ~ /^NONE/ { next }
    { result = ($2 ~ /DENIED/) ? "refused" : "allowed"; status = $2; sub(/^[^\/]*\//, "", status)
      host = $4; port = $5; method = $3
      gsub(/[^A-Za-z0-9._%:-]/, "?", host); gsub(/[^0-9]/, "", port); gsub(/[^A-Z]/, "", method); gsub(/[^0-9]/, "", status)
      printf "%s{\"result\":\"%s\",\"method\":\"%s\",\"host\":\"%s\",\"port\":%s,\"status\":%s}", (first ? "" : ","), result, method, host, (port == "" ? "null" : port), (status == "" ? "null" : status)
      first = 0 }
    END { printf "]" }' "$state/squid/access.log"
}
audit() {
  ((AUDIT)) || return 0
  local line
  line=$(printf '{"event":"launch","project":%s,"server":%s,"agent":%s,"run_id":%s,"started":%s,"ended":%s,"exit_status":%s,"run_dir":%s,"mounts":%s,"egress":%s,"egress_log":%s}' \
    "$(json_string "$PROJECT")" "$(json_string "$SERVER")" "$(json_string "$agent")" "$(json_string "$run_id")" \
    "$(json_string "$started")" "$(json_string "$(date -u +%Y-%m-%dT%H:%M:%SZ)")" "$status" \
    "$(if [[ -n $run_dir ]]; then json_string "$run_dir"; else printf null; fi)" "$AUDIT_MOUNTS" "$AUDIT_EGRESS" "$(egress_log)")
  case $AUDIT_SINK in
    stderr) printf '%s\n' "$line" >&2 ;;
    journal) if command -v systemd-cat >/dev/null 2>&1; then printf '%s\n' "$line" | systemd-cat -t "mcpspec-$SERVER"; else printf '%s\n' "$line" >&2; fi ;;
    *) printf '%s\n' "$line" >> "$AUDIT_SINK" || printf 'mcpspec %s: cannot append to %s\n' "$SERVER" "$AUDIT_SINK" >&2 ;;
  esac
}

inner=("${COMMAND[@]}")
if [[ -n $env_shim ]]; then inner=(/bin/bash -c "${env_shim}exec /usr/bin/env -u SHLVL -- \"\$@\"" mcpspec-shim "${COMMAND[@]}"); fi

launch_sandbox() {
  ((MEMORY_KIB)) && ulimit -v "$MEMORY_KIB"
  ((PIDS)) && ulimit -u "$PIDS"
  ((CPU_SECONDS)) && ulimit -t "$CPU_SECONDS"
  exec "${as_sandbox_user[@]}" setpriv --pdeathsig KILL -- bwrap "${args[@]}" -- "${inner[@]}"
}
((stopping)) && cleanup
launch_sandbox <&0 &
child=$!
if ((LIFETIME_SECONDS)); then
  setpriv --pdeathsig KILL -- bash -c 'sleep "$1"; kill -TERM "$2"; sleep 5; kill -KILL "$2"' mcpspec-lifetime "$LIFETIME_SECONDS" "$child" &
  watchdog=$!
  disown "$watchdog"
fi
code=0
wait "$child" || code=$?
# wait returns early when a trapped signal arrives: then stop the sandbox (cleanup exits).
((stopping)) && cleanup
status=$code child=
