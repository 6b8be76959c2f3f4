#!/usr/bin/env bash
# Runs upstream's storage benchmarks against upstream's etcd3 store and
# Kite's store, alternating the two stores round by round so that a change
# in the machine's load hits both alike, and prints benchstat's comparison
# (columns: upstream, kite). Usage: bench/run.sh [rounds] (default 5).
set -euo pipefail
cd "$(dirname "$0")"
rounds=${1:-5}
out=${OUT:-results.txt}
bin=$(mktemp -d)/bench.test
trap 'rm -rf "$(dirname "$bin")"' EXIT
go test -c -o "$bin" .
: > "$out"
for ((i = 1; i <= rounds; i++)); do
	for store in upstream kite; do
		# Fixed iteration counts: every run does the same work.
		"$bin" -test.run '^$' -test.bench "BenchmarkStoreList/Store=$store/" -test.benchtime 10x -test.benchmem | grep '^Benchmark' >> "$out"
		"$bin" -test.run '^$' -test.bench "BenchmarkStoreWriteThroughput/Store=$store/" -test.benchtime 1000x -test.benchmem | grep '^Benchmark' >> "$out"
	done
done
go run golang.org/x/perf/cmd/benchstat@latest -col /Store "$out"
