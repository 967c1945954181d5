#!/usr/bin/env bash
# Kill figures: how long every survivor takes to report a rank SIGKILLed
# during Open, amid the calls, or as it enters Close, and whether anything
# leaked. Runs `detcoll soak --kill-during PHASE` RUNS times per phase and
# world size, keeps every JSON summary, and prints one line per run and a
# table (slowest survivor's time to error: median and max over the runs).
#
#   tools/kill-figures.sh OUTDIR [RUNS] [WORLDS] [BACKEND]
#
# e.g. tools/kill-figures.sh results/cpu/kill-2026-12-01 20 "2 4" cpu
set -euo pipefail
out=${1:?usage: kill-figures.sh OUTDIR [RUNS] [WORLDS] [BACKEND]}
runs=${2:-20}
worlds=${3:-"2 4"}
backend=${4:-cpu}
detcoll=${DETCOLL:-detcoll}
mkdir -p "$out"

# Open: the kill lands 1-5 ms after the victim called Open, a different
# step of the rendezvous each time. Call: 20-300 ms into the calls.
after() {
	case $1 in
	open) echo "$((1 + $2 % 5))ms" ;;
	call) echo "$((20 + ($2 * 37) % 281))ms" ;;
	close) echo 0 ;;
	esac
}

field() { grep -o "\"$1\": [^,}]*" "$2" | head -1 | sed 's/.*: //; s/"//g'; }

printf '%-6s %-3s %-5s %-6s %-4s %-10s %s\n' phase W run after rc slowest_ms "victim died in, leaked"
for w in $worlds; do
	for phase in open call close; do
		: > "$out/$phase-w$w.slowest"
		for i in $(seq 1 "$runs"); do
			a=$(after "$phase" "$i")
			j="$out/$phase-w$w-$i.json"
			rc=0
			"$detcoll" soak --backend "$backend" -n "$w" --seed "$i" --duration 1s --kill-during "$phase" \
				--kill-rank-after "$a" --output "$j" > "$out/$phase-w$w-$i.log" 2>&1 || rc=$?
			# A failed run may leave no JSON, or one without these fields:
			# it is counted (rc), not the end of the sweep.
			s=$(field slowest_ms "$j" 2> /dev/null) || s=NA
			died=$(tr -d '\n ' < "$j" 2> /dev/null | grep -o '"during":"[a-z]*","phase":"[a-z]*"' | sed 's/.*"phase":"//; s/"//') || died=NA
			leaked=$(tr -d '\n ' < "$j" 2> /dev/null | grep -o '"leaked":\[[^]]*\]' | sed 's/"leaked"://') || leaked=NA
			printf '%-6s %-3s %-5s %-6s %-4s %-10s %s %s\n' "$phase" "$w" "$i" "$a" "$rc" "$s" "$died" "$leaked"
			echo "$s $rc" >> "$out/$phase-w$w.slowest"
		done
	done
done

echo
printf '%-6s %-3s %-5s %-8s %-12s %-12s\n' phase W runs failed median_ms max_ms
for w in $worlds; do
	for phase in open call close; do
		f="$out/$phase-w$w.slowest"
		failed=$(awk '$2 != 0' "$f" | wc -l)
		# The median and max are over the runs that measured a time.
		sort -g "$f" | awk -v p="$phase" -v w="$w" -v failed="$failed" \
			'$1 != "NA" {v[++n]=$1} END {printf "%-6s %-3s %-5d %-8d %-12.2f %-12.2f\n", p, w, NR, failed, (n%2 ? v[(n+1)/2] : (v[n/2]+v[n/2+1])/2), v[n]}'
	done
done
