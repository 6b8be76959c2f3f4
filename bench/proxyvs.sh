#!/usr/bin/env bash
# bench/proxyvs.sh [ROUNDS]: kube-proxy 1.37.2 (nftables mode) beside Kite's service proxy
# (agent/proxy, nftables) against one `kite apiserver` (issue 28), measured by bench/proxyvs in
# the same run, alternating kite, kube-proxy, kite, kube-proxy, ... so that the machine's load
# hits both alike.
#
# Everything runs in a network namespace of its own (kiteproxyvs: lo and a veth pair with
# 10.251.0.1, the node's InternalIP, and a default route), entered with nsenter --net: the API
# server on 127.0.0.1, the Node proxy-node (podCIDR 10.42.0.0/24) that bench/proxyvs registers,
# and in turn each proxy, which bench/proxyvs starts, measures, restarts and stops; the
# proxies' tables (ip/ip6 kite-proxy, ip/ip6 kube-proxy) are deleted after each. The two never run
# at once. The host's network namespace is not touched, so no host-net lock is needed.
#
# Both proxies run as shipped: minimum sync period 1 s, kube-proxy's node port addresses
# "primary" and local traffic detected by the node's podCIDR (Kite's defaults), conntrack
# settings left alone (maxPerCore 0) since they are not the namespace's.
#
# Env: W (work dir, default /tmp/bench/proxyvs, deleted at the end unless KEEP=1), KITE (kite
# binary, default: go build ./cmd/kite), KUBE_PROXY (default /tmp/k8sbuild/bin/kube-proxy, from
# ../shared/tools/k8s-build.sh ./cmd/kube-proxy), SAMPLES (single changes, default 100), SERVICES
# (default 1000), ENDPOINTS (default 10), IDLE (default 30s). Output: one JSON line per run.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-1}
W=${W:-/tmp/bench/proxyvs}
KUBE_PROXY=${KUBE_PROXY:-/tmp/k8sbuild/bin/kube-proxy}
SAMPLES=${SAMPLES:-100} SERVICES=${SERVICES:-1000} ENDPOINTS=${ENDPOINTS:-10} IDLE=${IDLE:-30s}
netns=kiteproxyvs
log() { echo "proxyvs: $(date -u +%T) $*" >&2; }

[[ -x $KUBE_PROXY ]] || { log "no kube-proxy at $KUBE_PROXY: run /work/shared/tools/k8s-build.sh ./cmd/kube-proxy"; exit 1; }
rm -rf "$W/api"
mkdir -p "$W"
if [[ -z "${KITE:-}" ]]; then
	KITE=$W/kite
	(cd "$repo" && go build -o "$KITE" ./cmd/kite)
fi
(cd "$repo/bench" && go build -o "$W/proxyvs" ./proxyvs)

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	ip netns del "$netns" 2>/dev/null || true
	[[ ${KEEP:-0} == 1 ]] || rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$netns"
inns() { nsenter --net=/var/run/netns/$netns "$@"; }
inns ip link set lo up
inns ip link add pvs1 type veth peer name pvs2
inns ip addr add 10.251.0.1/24 dev pvs1
inns ip link set pvs1 up
inns ip link set pvs2 up
inns ip route add default dev pvs1

log "kite apiserver"
nsenter --net=/var/run/netns/$netns "$KITE" apiserver --data-dir "$W/api" --secure-port 6443 --unsafe-no-fsync >"$W/apiserver.log" 2>&1 &
pids+=($!)
for _ in $(seq 240); do grep -q '^kite: ready' "$W/apiserver.log" 2>/dev/null && break; sleep 0.5; done
grep -q '^kite: ready' "$W/apiserver.log" || { log "the API server is not ready:"; tail -20 "$W/apiserver.log" >&2; exit 1; }
kc=$W/api/kubeconfig

cat >"$W/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $kc
hostnameOverride: proxy-node
mode: nftables
detectLocalMode: NodeCIDR
nodePortAddresses: [primary]
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
drop() { printf 'add table %s %s\ndelete table %s %s\n' ip "$1" ip "$1" ip6 "$1" ip6 "$1"; }

for ((i = 1; i <= rounds; i++)); do
	for side in kite kube-proxy; do
		log "round $i: $side (load $(cut -d' ' -f1-3 /proc/loadavg))"
		case $side in
		kite) table=kite-proxy cmd=("$W/proxyvs" --kite-proxy --kubeconfig "$kc" --node proxy-node) ;;
		kube-proxy) table=kube-proxy cmd=("$KUBE_PROXY" --config "$W/kube-proxy.yaml" --v 0) ;;
		esac
		inns "$W/proxyvs" --kubeconfig "$kc" --label "$side round $i" --table "ip $table" --cleanup "$(drop "$table")" \
			--samples "$SAMPLES" --services "$SERVICES" --endpoints "$ENDPOINTS" --idle "$IDLE" \
			-- "${cmd[@]}" 2>>"$W/$side.log" || { log "$side round $i failed:"; tail -20 "$W/$side.log" >&2; }
	done
done
