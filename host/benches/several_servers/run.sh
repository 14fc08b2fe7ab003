#!/usr/bin/env bash
# Several servers sharing one Redis: calls per second of 1, 2, 4, 8 servers against one with its games in memory
# (cload: half hanoi_get_state, half hanoi_execute_move; one client process per server, the sessions spread over
# them). Run from the folder prepare.sh packs (.devbench/), on the machine measured; docs/benchmarks.md has figures.
# PIN=k gives each server k cores of its own (server i: cores 1+(i-1)k to ik), Redis core 0, and the load the cores
# after the last server's (unpinned when none are left): servers that add up, as on machines of their own.
set -u
cd "$(dirname "$0")"
OUTD=${OUT:-/tmp/out}; mkdir -p "$OUTD"
L=./lib/ld-linux-x86-64.so.2
[ -x ludus ] || { xz -dkf ludus.xz 2>/dev/null || python3 -c "import lzma,shutil;shutil.copyfileobj(lzma.open('ludus.xz'),open('ludus','wb'))"; chmod +x ludus; }
echo "cores $(nproc); $(grep PRETTY /etc/os-release 2>/dev/null)"; free -g | head -2
export XDG_CACHE_HOME=$PWD/cache XDG_DATA_HOME=$PWD/data
SESS=${SESS:-400}; CALLS=${CALLS:-50}; NS=${NS:-"1 2 4 8"}; REPS=${REPS:-2}; PIN=${PIN:-}
MAXN=$(printf '%s\n' $NS | sort -n | tail -1)
pin() { # redis | server I | load: the taskset prefix under PIN, else nothing
  [ -n "$PIN" ] || return 0
  case $1 in
    redis) echo "taskset -c 0" ;;
    server) echo "taskset -c $((1 + ($2 - 1) * PIN))-$(($2 * PIN))" ;;
    load) local first=$((1 + MAXN * PIN)) last=$(($(nproc) - 1)); [ "$first" -le "$last" ] && echo "taskset -c $first-$last" ;;
  esac
}
LOAD=$(pin load | cut -d' ' -f3)
[ -n "$PIN" ] && echo "pinned: $PIN core(s) a server, Redis on core 0, the load on cores ${LOAD:-of any (none left)}"
$(pin redis) $L --library-path ./lib ./redis-server --port 6390 --save '' --appendonly no > redis.log 2>&1 & RP=$!
sleep 0.5
pids=()
start() { # n store
  pids=()
  for i in $(seq 1 $1); do
    $(pin server $i) $L --library-path ./lib ./ludus serve --http 127.0.0.1:$((9000+i)) --name s$i --store "$2" --games hanoi > srv$i.log 2>&1 & pids+=($!)
  done
  for i in $(seq 1 $1); do for t in $(seq 1 200); do (echo > /dev/tcp/127.0.0.1/$((9000+i))) 2>/dev/null && break; sleep 0.05; done; done
}
stop() { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; }
bench() { # n label
  for r in $(seq 1 $REPS); do
    r0=$(awk '{print $14+$15}' /proc/$RP/stat); t0=$(date +%s.%N); cps=()
    for i in $(seq 1 $1); do $(pin load) ./cload $((9000+i)) /mcp ludus $((SESS/$1)) $CALLS > c$i.txt 2>&1 & cps+=($!); done
    wait "${cps[@]}"; t1=$(date +%s.%N)
    calls=$(cat c*.txt | sed -nE 's/^ludus: ([0-9]+) calls.*/\1/p' | awk '{s+=$1} END {print s+0}'); err=$(cat c*.txt | sed -nE 's/.*errors ([0-9]+).*/\1/p' | awk '{s+=$1} END {print s+0}')
    p99=$(cat c*.txt | sed -nE "s/.*p99 ([0-9.]+) ms.*/\1/p" | sort -n | tail -1)
    r1=$(awk '{print $14+$15}' /proc/$RP/stat)
    echo "   redis cpu ticks: $((r1-r0)) over the run; per server cpu: $(for p in "${pids[@]}"; do awk '{printf "%d ", $14+$15}' /proc/$p/stat; done)"
    echo "$2 servers=$1 rep=$r: $calls calls in $(awk "BEGIN {printf \"%.3f\", $t1 - $t0}") s = $(awk "BEGIN {printf \"%.0f\", $calls / ($t1 - $t0)}") calls/s, errors $err, worst p99 ${p99} ms"
    rm -f c*.txt
  done
}
start 1 memory; bench 1 memory; stop
for n in $NS; do start $n redis://127.0.0.1:6390; bench $n redis; stop; done
exec 3<>/dev/tcp/127.0.0.1/6390; printf 'INFO commandstats\r\n' >&3; timeout 1 cat <&3 | grep -E "cmdstat" | head -20
kill $RP
tail -2 srv1.log
