"""What a lab sweep runs in a guest to start a point's fio (sh scripts, run
through the guest agent): the job files written, one launcher a node
starting every unit's fio at once, the start gate they wait at until every
node's threads are there, and the listing of a stuck point's threads."""

GUEST_DIR = "/tmp/storlab-sweep"
GATE = f"{GUEST_DIR}/gate"          # a node's start gate (LAUNCHER)


def inflight_script(sys_block="/sys/block"):
    """A line for each block device with requests in flight, "inflight DEV
    READS WRITES": where a stuck fio's requests wait (seen under TCG: started
    in the guest, on a virtio-scsi disk, while QEMU and the device server
    had none in flight)."""
    return f"""for f in {sys_block}/*/inflight; do
    read -r r w < "$f" 2>/dev/null || continue
    [ $((r + w)) -eq 0 ] || {{ d=${{f%/inflight}}; echo "inflight ${{d##*/}} $r $w"; }}
done"""


def stuck_listing_script(gate=GATE):
    """Every fio thread of the guest, one line each: tid, state (D: waiting
    on I/O), the kernel function it waits in; the gated launcher's line
    ("launcher PID STATE WCHAN") and its gate's files; the block devices
    with requests in flight (inflight_script); then the units' files (has a
    stuck fio written its JSON?): what a stuck point was doing when it was
    given up on."""
    return """for task in /proc/[0-9]*/task/[0-9]*; do
    read -r stat < "$task/stat" 2>/dev/null || continue
    case "$stat" in *"(fio)"*) ;; *) continue ;; esac
    set -- $stat
    wchan=$(cat "$task/wchan" 2>/dev/null)
    echo "${task##*/} $3 ${wchan:-?}"
done
if read -r launcher < GATE/launcher 2>/dev/null; then
    read -r stat < "/proc/$launcher/stat" 2>/dev/null && set -- $stat || set -- "$launcher" - gone
    echo "launcher $launcher $3 $(cat "/proc/$launcher/wchan" 2>/dev/null)"
    ls -l GATE/
fi
""".replace("GATE", gate) + inflight_script() + f"\nls -l {GUEST_DIR}/ 2>/dev/null || true"


JOB_END = "STORLAB_JOB_END"      # a here-document's end: no fio job line is it

# The units' fio started together, one a stem given; each one's JSON in
# STEM.json, stderr in STEM.err, exit status in STEM.rc. Killed, it stops them.
# Its first argument, when not empty, is the start gate's directory (GATE):
# the fio threads' exec_prerun (GATE/wait) counts each in GATE/ready and
# blocks opening the GATE/start FIFO; the launcher opens it, and holds it
# open for the rest of its life (every later open returns at once), when a
# line comes to the GATE/go FIFO. A thread's time through the gate (the
# guest's uptime, s; no process started for it) goes to its prerun's output,
# GATE/JOB.prerun.txt (fio names it). Killed, it opens the gate too: a fio thread
# held there runs its prerun still, deaf to the signal, until it returns.
LAUNCHER = """gate=$1
shift
pids=
trap 'kill $pids 2>/dev/null; [ -z "$gate" ] || exec 3<>"$gate/start"; wait; exit 143' TERM INT
if [ -n "$gate" ]; then
    rm -rf "$gate" && mkdir -p "$gate" && mkfifo "$gate/start" "$gate/go" \\
        && printf 'echo >> %s/ready\\n: < %s/start\\nread -r up _ < /proc/uptime\\necho "$up"\\n' \\
            "$gate" "$gate" > "$gate/wait" \\
        && : > "$gate/ready" && echo $$ > "$gate/launcher" \\
        && cd "$gate" || exit 125     # fio's JOB.prerun.txt go there
fi
for stem; do
    /usr/bin/fio --output-format=json+ --output="$stem.json" "$stem.fio" >"$stem.err" 2>&1 &
    pids="$pids $!"
done
if [ -n "$gate" ]; then
    echo $pids > "$gate/pids"
    read -r _ < "$gate/go"
    exec 3<>"$gate/start"
fi
for pid in $pids; do
    wait "$pid"
    echo $? > "$1.rc"
    shift
done"""


def gate_state_script(gate):
    """How a node's gate is doing: "READY ALIVE", the fio threads waiting at
    it and the units' fio processes still running (a zombie is not), or "-"
    while its launcher has not started them all."""
    return f"""read -r pids < {gate}/pids 2>/dev/null || {{ echo -; exit 0; }}
alive=0
for pid in $pids; do
    read -r stat < "/proc/$pid/stat" 2>/dev/null || continue
    case "$stat" in *") Z "*) ;; *) alive=$((alive + 1)) ;; esac
done
echo "$(wc -l < {gate}/ready) $alive"
"""


def gate_go_script(gate):
    """Opens a node's gate: a line to its launcher (which opens the start
    FIFO), or exit 124 when no launcher reads it within a minute."""
    return f"timeout 60 sh -c 'echo go > {gate}/go'"


def gate_passes_script(gate):
    """Each thread's time through a node's gate, "JOB.prerun.txt:UPTIME_S"
    a line (results.fio_window reads them)."""
    return f"cd {gate} && grep -H . *.prerun.txt"


LOG_HEADER = "== "      # a file's name follows; fio's log lines begin with a digit


# A fio histogram log line with its zero bins left out: "time, direction,
# bs" then "INDEX:COUNT" for each bin that counted (results.fio_hist_log
# reads both forms). A line of 1856 bins, nearly all 0, is about 4 KB; a
# node's 64 threads log one a second for each direction.
SPARSE_HIST_AWK = ("awk -F', *' '{ out = $1 \", \" $2 \", \" $3; "
                   "for (i = 4; i <= NF; i++) if ($i != 0) out = out \", \" (i - 4) \":\" $i; "
                   "print out }'")


def unit_logs_script(stem):
    """A unit's IOPS, completion latency and histogram logs
    (STEM_iops.N.log, STEM_clat.N.log, STEM_clat_hist.N.log, the last
    sparse) printed in one go, each after a LOG_HEADER line with its name:
    one agent command a unit, where one a file took minutes a point (64
    threads a node). It changes nothing, so it can be run again (the next
    point's job_files_script removes them)."""
    return (f'for f in {stem}_iops.*.log {stem}_clat.*.log; do [ -e "$f" ] || continue; '
            f'echo "{LOG_HEADER}${{f##*/}}"; cat "$f"; echo; done; '
            f'for f in {stem}_clat_hist.*.log; do [ -e "$f" ] || continue; '
            f'echo "{LOG_HEADER}${{f##*/}}"; {SPARSE_HIST_AWK} "$f"; echo; done')


def split_unit_logs(text):
    """{file name: its text} of unit_logs_script's output."""
    files, name = {}, None
    for line in text.splitlines(keepends=True):
        if line.startswith(LOG_HEADER):
            name = line[len(LOG_HEADER):].strip()
            files[name] = ""
        elif name is not None:
            files[name] += line
    return files


def job_files_script(directory, texts):
    """A shell script (bytes) that writes {stem: job text} as STEM.fio in
    directory, each unit's earlier outputs (STEM.json, .err, .rc, its
    interval logs STEM_*) removed."""
    script = [f"mkdir -p {directory}"]
    for stem, text in texts.items():
        script.append(f"rm -f {stem}_* {stem}.json {stem}.err {stem}.rc")
        script.append(f"cat > {stem}.fio <<'{JOB_END}'\n{text.rstrip()}\n{JOB_END}")
    return "\n".join(script).encode() + b"\n"
