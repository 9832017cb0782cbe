# Sourced by bin/tenplexd and bin/tenplex: builds a jar when it is missing or older than the sources.
# Progress goes to stderr, one line per module of Maven's reactor ("[3/13] Building tensor-store"); the
# full Maven log is kept in a temporary file and, when the build fails, the failing module's part of it
# is printed and the calling script exits with Maven's status.

# build_jar_if_stale <command name> <module> <jar> <about how long it takes>; $root is the repository root.
build_jar_if_stale() {
  local name="$1" module="$2" jar="$3" duration="$4"
  if [ -f "$jar" ] && [ -z "$(find "$root" -path '*/src/main/*' -newer "$jar" -print -quit)" ]; then
    return 0
  fi
  local log start status=0
  log="$(mktemp "${TMPDIR:-/tmp}/$name-build.XXXXXX.log")"
  start=$SECONDS
  echo "$name: building ${jar#"$root"/} and the modules it needs with Maven ($duration; more when Maven" \
    "first downloads its packages) ..." >&2
  (cd "$root" && ./mvnw -B -DskipTests -pl "$module" -am package) 2>&1 | tee "$log" \
    | build_jar_progress "$name" "$start" >&2 || status=$?
  if [ "$status" -ne 0 ]; then
    echo "$name: the build failed (Maven exit status $status); its output from the failing module on:" >&2
    awk '/^\[INFO\] Building .*\[[0-9]+\/[0-9]+\]$/ { n = NR } { line[NR] = $0 }
         END { for (i = (n ? n : 1); i <= NR; i++) print line[i] }' "$log" >&2
    echo "$name: the build failed; the full Maven log is $log" >&2
    exit "$status"
  fi
  rm -f "$log"
  echo "$name: built ${jar#"$root"/} in $((SECONDS - start)) s" >&2
}

# Reads Maven's output and prints only the reactor's module lines, with the time elapsed so far, and a
# note the first time Maven downloads packages (a fresh machine's first build).
build_jar_progress() {
  local name="$1" start="$2" line module count downloading=""
  local building='^\[INFO\] Building ([^ ]+) [^ ]+ +\[([0-9]+/[0-9]+)\]$'
  while IFS= read -r line; do
    if [[ "$line" =~ $building ]]; then
      module="${BASH_REMATCH[1]}"
      count="${BASH_REMATCH[2]}"
      printf '%s: [%s] Building %s (%d s)\n' "$name" "$count" "$module" $((SECONDS - start))
    elif [ -z "$downloading" ] && [[ "$line" == *"Downloading from "* ]]; then
      downloading=yes
      echo "$name: Maven is downloading packages (first build on this machine) ..."
    fi
  done
}
