#!/usr/bin/env bash
# plot-bench.sh - the pictures of docs/BENCHMARKS.md, drawn with gnuplot
# (Debian's gnuplot-nox) from the benchmarks' machine-readable output.
#
#   plot-bench.sh mdstorm OUT.png RESULT_FILE...
#       run-mdstorm.sh's RESULT lines (its --out DIR/result.txt, or its
#       stdout): stat()/s of every run (the local directory, loligo, the
#       contended storm in each locking mode) and the client-mutex hold p99
#       of every section against the 20 us target.
#   plot-bench.sh hold OUT.png METRICS_FILE[=LABEL]...
#       loligo-fuse's Prometheus text (run-mdstorm.sh --out DIR/metrics-
#       <mode>.txt): the hold-time histogram of each client-mutex section,
#       holds per power-of-two bucket, one line per file.
#   plot-bench.sh drc OUT.png DIR
#       run-nfs-bench.sh's DRC samples (LOLIGO_BENCH_OUT=DIR): the reply
#       cache's population over time, per eviction mode and load; NFSv4.0
#       and NFSv3 (drc-*v3.tsv) in panels of their own.
# Plots go to OUT.png (pngcairo). Exit: 0, 1 on missing input or gnuplot.
set -euo pipefail
usage() { sed -n '2,19p' "$0" >&2; exit 2; }
what=${1:-} out=${2:-}
[[ -n $what && -n $out ]] || usage
shift 2
command -v gnuplot > /dev/null || { echo "plot-bench: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d /tmp/plot-bench.XXXXXX)
trap "${KEEP_TMP:+:} rm -rf \"$tmp\"" EXIT

# field LINE KEY: the value of KEY=... in a RESULT line
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<< "$1"; }

mdstorm() {
	(($#)) || usage
	local f line label n=0 sec
	local secs=(submit_request do_request handle_reply session)
	: > "$tmp/stat" && : > "$tmp/hold"
	for f in "$@"; do
		[[ -r $f ]] || { echo "plot-bench: cannot read $f" >&2; exit 1; }
		while IFS= read -r line; do
			case $line in
			"RESULT mdstorm-local "*)
				echo "\"local directory\" $(field "$line" stat_ops_s) 0" >> "$tmp/stat" ;;
			"RESULT mdstorm "*)
				if [[ $(field "$line" contended) == 1 ]]; then
					label="loligo-fuse contended, locking $(field "$line" locking)"
				else
					label="loligo-fuse, locking $(field "$line" locking)"
				fi
				echo "\"$label\" $(field "$line" stat_ops_s) $(field "$line" mds_requests_s)" >> "$tmp/stat"
				n=$((n + 1))
				{
					printf '"%s"' "$label"
					for sec in "${secs[@]}"; do
						v=$(field "$line" "hold_p99_us_$sec")
						# a section never taken (count 0), or taken without the
						# mutex (handle_reply: p99 0), has no bar on a log scale
						[[ $(field "$line" "hold_count_$sec") == 0 || -z $v || $v == 0 ]] && v=NaN
						printf ' %s' "$v"
					done
					echo
				} >> "$tmp/hold"
				;;
			esac
		done < "$f"
	done
	((n)) || { echo "plot-bench: no 'RESULT mdstorm' line in $*" >&2; exit 1; }
	# only the sections with something to draw (gnuplot refuses an all-NaN column)
	local colors=("#4c72b0" "#55a868" "#dd8452" "#8172b2") hp="plot" c first=1
	for c in 0 1 2 3; do
		awk -v c=$c '$(NF - 3 + c) != "NaN" { found = 1 } END { exit !found }' "$tmp/hold" || continue
		if ((first)); then
			hp+=" \"$tmp/hold\" using $((c + 2)):xtic(1)"
			first=0
		else
			hp+=", \"\" using $((c + 2))"
		fi
		hp+=" title \"${secs[c]}\" lc rgb \"${colors[c]}\""
	done
	((!first)) || hp="plot NaN title \"no client-mutex section was taken\""
	# room above the 20 us target line whatever the data
	local ymax
	ymax=$(awk '{ for (i = NF - 3; i <= NF; i++) if ($i != "NaN" && $i + 0 > m) m = $i + 0 } END { print (m * 3 > 100 ? m * 3 : 100) }' "$tmp/hold")
	gnuplot <<- GP
	set terminal pngcairo noenhanced size 1100,520 font ",10"
	set output "$tmp/out.png"
	set multiplot layout 1,2 title "mdstorm (tools/bench/run-mdstorm.sh): 32 threads stat() one 5000-file directory, a full readdir every 100 stats"
	set style data histogram
	set style histogram clustered gap 1
	set style fill solid 0.8 border -1
	set boxwidth 0.9
	set grid ytics
	set logscale y
	set xtics rotate by -20 nomirror
	set key below horizontal
	set bmargin 9
	set title "throughput"
	set ylabel "per second"
	plot "$tmp/stat" using 2:xtic(1) title "stat()/s" lc rgb "#4c72b0", \
	     "" using (\$3 > 0 ? \$3 : NaN) title "MDS requests/s" lc rgb "#dd8452"
	set title "client mutex: p99 hold per section (no bar: never held)"
	set ylabel "p99 hold (us)"
	set yrange [0.01:$ymax]
	set arrow 1 from graph 0, first 20 to graph 1, first 20 nohead lc rgb "#c44e52" dt 2 lw 2
	set label 1 "20 us target" at graph 0.02, first 26 tc rgb "#c44e52"
	$hp
	unset multiplot
	GP
}

hold() {
	(($#)) || usage
	local arg f label i=0 plots=() sec p
	local secs=(submit_request do_request handle_reply session)
	for arg in "$@"; do
		f=${arg%%=*} label=${arg#*=}
		[[ $label == "$arg" ]] && label=$(basename "$f" .txt)
		[[ -r $f ]] || { echo "plot-bench: cannot read $f" >&2; exit 1; }
		for sec in "${secs[@]}"; do
			# per bucket: holds with (previous le, le] in us, from the cumulative counts
			awk -v m="loligo_mds_client_hold_${sec}_seconds_bucket" '
				index($0, m "{") == 1 && $0 !~ /le="\+Inf"/ {
					match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5) * 1e6
					c = $NF + 0; if (c - prev > 0) printf "%g %d\n", le, c - prev; prev = c
				}' "$f" > "$tmp/$i.$sec"
		done
		echo "$label" > "$tmp/$i.label"
		i=$((i + 1))
	done
	{
		echo 'set terminal pngcairo noenhanced size 1100,760 font ",10"'
		echo "set output \"$tmp/out.png\""
		echo 'set multiplot layout 2,2 title "client mutex hold times during the storm (loligo-fuse Prometheus histograms, power-of-two buckets)"'
		echo 'set logscale xy'
		echo 'set grid'
		echo 'set xlabel "hold time, upper bucket bound (us)"'
		echo 'set ylabel "holds in the bucket"'
		echo 'set xrange [0.5:100000]'
		echo 'set yrange [0.8:*]'
		echo 'set key top right'
		for sec in "${secs[@]}"; do
			echo "set title \"$sec\""
			p="plot"
			for ((j = 0; j < i; j++)); do
				if [[ -s $tmp/$j.$sec ]]; then
					p+=" \"$tmp/$j.$sec\" using 1:2 with linespoints lw 2 title \"$(cat "$tmp/$j.label")\","
				else
					p+=" NaN title \"$(cat "$tmp/$j.label") (never taken)\","
				fi
			done
			echo "${p%,}"
		done
		echo 'unset multiplot'
	} > "$tmp/hold.gp"
	gnuplot "$tmp/hold.gp"
}

drc() {
	local dir=${1:-} f panels=() v p t load c
	[[ -d $dir ]] || usage
	ls "$dir"/drc-*.tsv > /dev/null 2>&1 || { echo "plot-bench: no drc-*.tsv in $dir" >&2; exit 1; }
	for f in "$dir"/drc-*.tsv; do
		if [[ $f == *v3.tsv ]]; then v=v3; else v=v4; fi
		[[ " ${panels[*]} " == *" $v "* ]] || panels+=("$v")
	done
	# NFSv4.0 first
	[[ ${panels[*]} == "v3 v4" ]] && panels=(v4 v3)
	{
		echo "set terminal pngcairo noenhanced size $((560 * ${#panels[@]})),560 font \",10\""
		echo "set output \"$tmp/out.png\""
		echo "set multiplot layout 1,${#panels[@]} title \"the duplicate reply cache's population, sampled about every second (tools/bench/run-nfs-bench.sh drc / drc3)\""
		echo 'set logscale y'
		echo 'set grid'
		echo 'set xlabel "seconds into the run"'
		echo 'set ylabel "entries in the DRC"'
		echo 'set yrange [0.8:100000]'
		echo 'set key below vertical maxrows 4'
		# run-nfs-bench.sh notes how long the load ran: mark its end
		load=$(sed -n '1s/.*load_secs=\([0-9.]*\).*/\1/p' "$(ls "$dir"/drc-*.tsv | head -1)")
		if [[ -n $load ]]; then
			echo "set arrow 1 from $load, graph 0 to $load, graph 1 nohead lc rgb \"#c44e52\" dt 2 lw 2"
			echo "set label 1 \"the load stops\" at $load, graph 0.55 right offset -0.5,0 tc rgb \"#c44e52\""
		fi
		for v in "${panels[@]}"; do
			if [[ $v == v3 ]]; then
				echo 'set title "NFSv3 4 KiB random WRITEs, 4 connections"'
			else
				echo 'set title "NFSv4.0 OPEN/CLOSE, one connection"'
			fi
			p=plot
			for f in "$dir"/drc-*.tsv; do
				[[ $v == v3 && $f != *v3.tsv ]] && continue
				[[ $v == v4 && $f == *v3.tsv ]] && continue
				t=$(basename "$f" .tsv); t=${t#drc-}; t=${t%v3}
				# drc-<mode>-<inflight>: "implied_ack, 32 in flight"
				t="${t%-*}, ${t##*-} in flight"
				if [[ $v == v3 ]]; then t+=" per connection"; fi
				# the same colour for a mode and load in both panels
				case $(basename "$f") in
				drc-expiry-1.tsv | drc-expiry-1v3.tsv) c="#8172b2" ;;
				drc-expiry-*) c="#c44e52" ;;
				drc-implied_ack-1.tsv | drc-implied_ack-1v3.tsv) c="#4c72b0" ;;
				*) c="#dd8452" ;;
				esac
				p+=" \"$f\" using 1:2 with linespoints lw 2 lc rgb \"$c\" title \"$t\","
			done
			echo "${p%,}"
		done
		echo 'unset multiplot'
	} > "$tmp/drc.gp"
	gnuplot "$tmp/drc.gp"
}

case $what in
mdstorm) mdstorm "$@" ;;
hold) hold "$@" ;;
drc) drc "$@" ;;
*) usage ;;
esac
# gnuplot drew into the temp dir: a failed plot leaves no half picture behind
mv "$tmp/out.png" "$out"
echo "plot-bench: wrote $out"
