#!/usr/bin/env bash
# run-make-check.sh - install what is missing, build, run the whole test
# suite (as Ceph's script of the same name does).
#
#   ./run-make-check.sh            gcc build + every ctest suite, then a clang
#                                  build with the libFuzzer targets, each fuzzed
#                                  for LOLIGO_FUZZ_SECONDS (default 20)
#   --asan                         also build with ASan+UBSan and run the suite
#   --no-fuzz                      skip the clang/fuzz stage
#   --no-packages                  skip the Debian packages stage (build them
#                                  with dpkg-buildpackage, install them in a
#                                  throw-away overlay root, run, purge: ~4 min)
#   -j N                           build parallelism (default: nproc)
# Environment: BUILD_DIR (default ./build), CTEST_ARGS (extra ctest args).
set -euo pipefail
cd "$(dirname "$0")"
top=$PWD

asan=0 fuzz=1 packages=1 jobs=$(nproc)
while (($#)); do
	case $1 in
	--asan) asan=1 ;;
	--no-fuzz) fuzz=0 ;;
	--no-packages) packages=0 ;;
	-j) jobs=$2; shift ;;
	-h|--help) sed -n '2,15p' "$0"; exit 0 ;;
	*) echo "run-make-check: unknown argument $1 (try --help)" >&2; exit 2 ;;
	esac
	shift
done

./install-deps.sh

build=${BUILD_DIR:-$top/build}
rc=0

stage() { echo; echo "==== $* ===="; }

# run_ctest DIR ARGS...: ctest in DIR; a test that was skipped (a missing
# prerequisite: root, /dev/fuse, valgrind, qemu, ceph...) fails the stage,
# since a skipped check is not a passed one.  LOLIGO_ALLOW_SKIP=1 accepts
# skips on a machine that cannot run everything.
run_ctest() {
	local dir=$1 log r=0
	shift
	log=$(mktemp)
	if ! (cd "$dir" && ctest "$@") 2>&1 | tee "$log"; then r=1; fi
	# The failing checks' own lines again, last: a long test output is
	# cut in the middle by whoever shows only its head and tail.
	if ((r)) && grep -qE ':[0-9]+:[EF]:|child check failed|Assertion .* failed|ERROR: AddressSanitizer|^FAIL: ' "$log"; then
		echo "run-make-check: what the failing checks said:" >&2
		grep -E ':[0-9]+:[EF]:|child check failed|Assertion .* failed|ERROR: AddressSanitizer|^FAIL: ' "$log" | cut -c1-400 | tail -40 >&2
	fi
	if grep -qE '\*\*\*Skipped|\*\*\*Not Run|Not Run \(' "$log"; then
		if [[ ${LOLIGO_ALLOW_SKIP:-0} == 1 ]]; then
			echo "run-make-check: some tests were skipped (LOLIGO_ALLOW_SKIP=1)" >&2
		else
			echo "run-make-check: some tests were skipped: a missing prerequisite is a failure here" >&2
			echo "  (install what they name, or set LOLIGO_ALLOW_SKIP=1 to accept skips)" >&2
			r=1
		fi
	fi
	rm -f "$log"
	return $r
}

stage "build (gcc) in $build"
# lock order checked at run time in every suite run (common/lockdep.h)
cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOLIGO_LOCKDEP=ON
ninja -C "$build" -j "$jobs"

stage "test suite (gcc build)"
run_ctest "$build" --output-on-failure --timeout 900 -LE fuzz ${CTEST_ARGS:-} || rc=1

if ((packages)); then
	stage "Debian packages (tests/packaging/deb-packages.sh)"
	"$top/tests/packaging/deb-packages.sh" -j "$jobs" || rc=1
fi

if ((fuzz)); then
	stage "build (clang, libFuzzer targets) in $build-fuzz"
	CC=clang CXX=clang++ cmake -S "$top" -B "$build-fuzz" -G Ninja -DLOLIGO_FUZZ=ON \
		-DLOLIGO_FUZZ_SECONDS="${LOLIGO_FUZZ_SECONDS:-20}" -DCMAKE_BUILD_TYPE=RelWithDebInfo
	ninja -C "$build-fuzz" -j "$jobs"
	stage "fuzz targets"
	run_ctest "$build-fuzz" --output-on-failure -L fuzz || rc=1
fi

if ((asan)); then
	stage "build (ASan+UBSan) in $build-asan"
	cmake -S "$top" -B "$build-asan" -G Ninja -DLOLIGO_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug -DLOLIGO_LOCKDEP=ON
	ninja -C "$build-asan" -j "$jobs"
	stage "test suite (ASan+UBSan build)"
	# Reports go to files, one per process, so those of the daemons the
	# suites start (loligo-mds, loligo-fuse, which run detached or with
	# their output in temporary directories) are seen too: any report fails.
	sanlogs=$build-asan/sanitizer-logs
	rm -rf "$sanlogs"
	mkdir -p "$sanlogs"
	ASAN_OPTIONS=detect_leaks=1:log_path=$sanlogs/asan \
		UBSAN_OPTIONS=print_stacktrace=1:log_path=$sanlogs/ubsan \
		run_ctest "$build-asan" --output-on-failure --timeout 1800 -LE fuzz ${CTEST_ARGS:-} || rc=1
	if compgen -G "$sanlogs/*" > /dev/null; then
		echo "run-make-check: sanitizer reports (in $sanlogs):" >&2
		for f in "$sanlogs"/*; do echo "---- $f" >&2; head -40 "$f" >&2; done
		rc=1
	fi
fi

if ((rc)); then echo "run-make-check: FAILED" >&2; else echo "run-make-check: all stages passed"; fi
exit $rc
