#!/usr/bin/env bash
# plot-fio.sh RESULTS OUT.png - draw run-fio.sh's results as grouped bars
# (gnuplot, Debian's gnuplot-nox): one group per fio row, one bar per target
# (loligo on the local store, loligo on RADOS, ceph-fuse, and run-fio.sh
# --compare's build on RADOS when there), the mean over the runs with the
# min-max range as an error bar, MiB/s on a log scale.
#   RESULTS: lines "run target job mib_s iops client_cpu_s load1" (tabs), as
#            run-fio.sh --tsv writes them (or its temp dir's "results")
set -euo pipefail
in=${1:?usage: plot-fio.sh RESULTS OUT.png} out=${2:?usage: plot-fio.sh RESULTS OUT.png}
command -v gnuplot >/dev/null || { echo "plot-fio: needs gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
data=$(mktemp /tmp/plot-fio.XXXXXX)
trap 'rm -f "$data"' EXIT
awk -F'\t' '
	{ k = $3 SUBSEP $2; v = $4 + 0; sum[k] += v; n[k]++
	  if (!(k in lo) || v < lo[k]) lo[k] = v; if (!(k in hi) || v > hi[k]) hi[k] = v }
	function col(j, t) { k = j SUBSEP t; return (k in n) ? sprintf("%g %g %g", sum[k] / n[k], lo[k], hi[k]) : "NaN NaN NaN" }
	END {
		m = split("randwrite-4k randwrite-4k-fsync randread-4k seqwrite-1m seqwrite-1m-fsync seqread-1m", order, " ")
		for (i = 1; i <= m; i++) {
			j = order[i]
			printf "%s %s %s %s %s\n", j, col(j, "local"), col(j, "rados"), col(j, "cephfuse"), col(j, "rados0")
		}
	}' "$in" >"$data"
extra=
if awk -F'\t' '$2 == "rados0" { found = 1 } END { exit !found }' "$in"; then
	extra=", \"\" using 11:12:13 title \"${PLOT_COMPARE_TITLE:-loligo on RADOS, compared build}\" lc rgb \"#c9b27c\""
fi
gnuplot <<GP
set terminal pngcairo size 1000,520 font ",10"
set output "$out"
set title "fio through FUSE: loligo-fuse (local store, RADOS) and ceph-fuse on the same cluster, same run"
set ylabel "MiB/s (mean, bars: min-max over runs)"
set logscale y
set yrange [1:*]
set grid ytics
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set xtics rotate by -20 nomirror
set key top left
plot "$data" using 2:3:4:xtic(1) title "loligo, local store" lc rgb "#4c72b0", \
     "" using 5:6:7 title "loligo on RADOS" lc rgb "#dd8452", \
     "" using 8:9:10 title "ceph-fuse (same cluster)" lc rgb "#8c8c8c"$extra
GP
