# Reading callgrind files: sourced by ir-per-request.sh, h2-ir-per-request.sh and ir-gate.sh.
#
# total_ir FILE
#   the file's total instructions (every thread's).
# fn_ir FILE FUNCTION
#   the inclusive instructions of every function whose name ends in FUNCTION (for example
#   `hubload::engine::worker::worker_loop::{{closure}}`), summed; FILE an absolute path: callgrind_annotate's
#   function rows (the ones naming the binary), not its per-file inlining rows.
# per_request NAME FILE_A FILE_B N_A N_B
#   prints `NAME whole W worker_loop L per_level P whole_less_per_level W-P` (Ir per request:
#   each figure's difference between the two runs over N_B - N_A):
#   - whole: every instruction of the process, every thread (start-up and exit cancel out);
#   - worker_loop: inside the workers' task (the request, its stats, its event): every
#     per-request cost of the worker and none of the per-second ones;
#   - per_level: the run's own task (the WebSub kind's `PathKind::run`, which opens the path and
#     drives `run::one_path::run_path`): registration, the level's edges and the
#     reports written when a level ends. That work is per level, not per request, but it
#     grows with the level's seconds (the per-second timeline), which callgrind stretches
#     about 100x, and more on a loaded machine: over six runs of one build it moved 684-994
#     while whole_less_per_level stayed within 4,186-4,243;
#   - whole_less_per_level: the process less that task: the workers, the runtime (I/O driver,
#     timers, scheduling), the monitor and spill threads. The gate judges this and worker_loop.

total_ir() { awk '/^summary:|^totals:/ { print $2; exit }' "$1"; }

fn_ir() {
    # From /: in a directory holding the sources, callgrind_annotate shortens their paths and
    # then splits one function's rows differently (3,259 instead of 3,751 for the worker loop).
    (cd / && callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$1" |
        awk -v f=":$2 [" 'index($0, f) { gsub(",", "", $1); s += $1 } END { print s + 0 }')
}

per_request() {
    local name=$1 a=$2 b=$3 na=$4 nb=$5 n whole loop per_level
    n=$((nb - na))
    whole=$((($(total_ir "$b") - $(total_ir "$a")) / n))
    loop=$((($(fn_ir "$b" 'hubload::engine::worker::worker_loop::{{closure}}') - $(fn_ir "$a" 'hubload::engine::worker::worker_loop::{{closure}}')) / n))
    per_level=$((($(fn_ir "$b" '<hubload::run::websub_path::WebSub as hubload::run::path::PathKind>::run::{{closure}}') - $(fn_ir "$a" '<hubload::run::websub_path::WebSub as hubload::run::path::PathKind>::run::{{closure}}')) / n))
    echo "$name whole $whole worker_loop $loop per_level $per_level whole_less_per_level $((whole - per_level))"
}
