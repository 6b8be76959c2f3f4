#!/bin/bash
# kite bench crd, alternating the reference and Kite, fresh server and data dir per run.
out=/work/wt/crd-bench/bench/results
for r in 1 2 3 4 5; do
  extra=""
  [ $r = 3 ] && extra="--crs-first"
  for server in ref kite; do
    d=/tmp/crdb/runs/$server-$r; rm -rf $d; mkdir -p $d
    if [ $server = ref ]; then
      /tmp/refserver-crd --data-dir $d > $d/server.log 2>&1 &
    else
      /tmp/kite-crd apiserver --data-dir $d --controllers=namespace-controller > $d/server.log 2>&1 &
    fi
    pid=$!
    for i in $(seq 1 100); do [ -f $d/kubeconfig ] && grep -q "ready" $d/server.log && break; sleep 0.3; done
    sleep 2
    f=$out/kite-bench-crd-round$r-$server.txt
    { echo "# $(date -u +%H:%M:%S) UTC, load: $(cut -d' ' -f1-3 /proc/loadavg), server: $server, kite bench crd $extra"; 
      /tmp/kite-crd bench crd --kubeconfig $d/kubeconfig --delivery-timeout 5m $extra 2>&1;
      echo "# $(date -u +%H:%M:%S) UTC, load: $(cut -d' ' -f1-3 /proc/loadavg)"; } > $f
    kill $pid; wait $pid 2>/dev/null
  done
done
echo done > /tmp/crdb/rounds.done
